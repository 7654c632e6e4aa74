// An organization's API keys (as Stripe's restricted keys): several per license, each with a name and
// scopes, shown once as `rk_…` and stored only as its sha256. A key acts as its license with its scopes;
// a revoked key, or a key of a revoked, suspended or expired license, is refused from the next request
// on: every request reads the key's row and its license's, nothing is cached. A key names the key that
// minted it, and dies with it (grants.ts).
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../platform/crypto';
import type { Db } from '../platform/db/knex';
import { AppError, conflict, notFound } from '../platform/errors';
import { idPattern, newId } from '../platform/ids';
import { decodeListCursor, listPage } from '../platform/paging';
import type { ListPage } from '../platform/paging';
import { recordAction } from './audit';
import { grantorName, holdGrant, revokeKeyGrants } from './grants';
import type { Grantor } from './grants';
import { refuseUnusable } from './licenses';
import type { LicensePrincipal } from './licenses';
import type { LicenseRow } from './rows';
import { keyScopes } from './scopes';
import type { KeyScope } from './scopes';

export const ORGANIZATION_KEY_PREFIX = 'rk_';
const KEY_PATTERN = /^rk_[A-Za-z0-9_-]{43}$/;
/** Characters of a key kept to tell it apart in a list: the prefix and 8 of its 43 random ones. */
const SHOWN = ORGANIZATION_KEY_PREFIX.length + 8;
/** Keys not revoked, per license: enough for every team and service, not a table anyone can flood. */
export const MAX_ACTIVE_KEYS = 50;

export const organizationKeyHash = (key: string): string => sha256Hex(key);

export interface OrganizationKeyRow {
  id: string;
  license_id: string;
  name: string;
  scopes: KeyScope[];
  key_hash: string;
  prefix: string;
  created_by: string;
  /** The key that minted it; null when the license key did. */
  minted_by_key_id: string | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

export interface OrganizationKeyView {
  keyId: string;
  name: string;
  scopes: KeyScope[];
  /** The key's first characters, never the key. */
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export const organizationKeyView = (r: OrganizationKeyRow): OrganizationKeyView => ({
  keyId: r.id,
  name: r.name,
  scopes: [...r.scopes],
  prefix: `${r.prefix}…`,
  createdAt: new Date(r.created_at).toISOString(),
  lastUsedAt: iso(r.last_used_at),
  revokedAt: iso(r.revoked_at),
});

/** Who acted, as the audit records it: the license key itself, or one of its keys. */
export const actorOf = (p: Pick<LicensePrincipal, 'licenseId' | 'keyId'>): string => grantorName(p);

/** Sorted, without duplicates: `admin` alone stands for every scope. */
function normalizeScopes(scopes: readonly KeyScope[]): KeyScope[] {
  const set = new Set(scopes);
  if (set.has('admin')) return ['admin'];
  return keyScopes.filter((s) => set.has(s));
}

/**
 * A new key of the license; the key is returned here and never again. It is refused (401, nothing
 * written) when the caller's own key was revoked or rotated away since its request was authenticated.
 */
export async function createOrganizationKey(
  db: Db,
  caller: Grantor,
  input: { name: string; scopes: readonly KeyScope[] },
): Promise<{ key: OrganizationKeyView; apiKey: string }> {
  const scopes = normalizeScopes(input.scopes);
  const apiKey = `${ORGANIZATION_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  return db.transaction(async (trx) => {
    // The license row locked: two creations at once cannot both pass the limit.
    await trx('licenses').where({ id: caller.licenseId }).forUpdate().first('id');
    await holdGrant(trx, caller);
    const [{ n }] = (await trx('organization_keys')
      .where({ license_id: caller.licenseId })
      .whereNull('revoked_at')
      .count('* as n')) as [{ n: string }];
    if (Number(n) >= MAX_ACTIVE_KEYS) {
      throw conflict(
        'key_limit_reached',
        `This organization has ${MAX_ACTIVE_KEYS} keys in use; revoke one before creating another.`,
      );
    }
    const [row] = (await trx('organization_keys')
      .insert({
        id: newId('key'),
        license_id: caller.licenseId,
        name: input.name,
        scopes,
        key_hash: organizationKeyHash(apiKey),
        prefix: apiKey.slice(0, SHOWN),
        created_by: actorOf(caller),
        minted_by_key_id: caller.keyId,
      })
      .returning('*')) as OrganizationKeyRow[];
    await recordAction(trx, {
      actor: actorOf(caller),
      action: 'organization_key.create',
      target: row!.id,
      licenseId: caller.licenseId,
      detail: { name: input.name, scopes },
    });
    return { key: organizationKeyView(row!), apiKey };
  });
}

/** The license's keys, newest first, revoked ones included (with when). */
export async function listOrganizationKeys(
  db: Db,
  licenseId: string,
  opts: { limit: number; cursor?: string | undefined },
): Promise<ListPage<OrganizationKeyView>> {
  const after = decodeListCursor(opts.cursor, 'okeys');
  const q = db('organization_keys')
    .where({ license_id: licenseId })
    .orderBy('id', 'desc')
    .limit(opts.limit + 1);
  if (after) q.where('id', '<', after);
  return listPage((await q) as OrganizationKeyRow[], opts.limit, 'okeys', organizationKeyView);
}

/**
 * Revokes one of the license's keys (a key of another license is not found), with the keys it minted,
 * theirs, and the capabilities of the jobs they made (grants.ts). Revoking a revoked key answers as the
 * first time did; what it minted and is still in use is revoked then too.
 */
export async function revokeOrganizationKey(
  db: Db,
  licenseId: string,
  keyId: string,
  actor: string,
): Promise<OrganizationKeyView> {
  if (!idPattern('key').test(keyId)) throw notFound(`Key ${keyId}`);
  return db.transaction(async (trx) => {
    // The license row first, as every revocation and every mint takes it: none runs meanwhile.
    await trx('licenses').where({ id: licenseId }).forUpdate().first('id');
    let row = (await trx('organization_keys')
      .where({ id: keyId, license_id: licenseId })
      .forUpdate()
      .first()) as OrganizationKeyRow | undefined;
    if (!row) throw notFound(`Key ${keyId}`);
    if (!row.revoked_at) {
      [row] = (await trx('organization_keys')
        .where({ id: keyId })
        .update({ revoked_at: trx.fn.now() })
        .returning('*')) as OrganizationKeyRow[];
      await recordAction(trx, { actor, action: 'organization_key.revoke', target: keyId, licenseId });
    }
    await revokeKeyGrants(trx, keyId, { licenseId, actor, cause: 'organization_key.revoke' });
    return organizationKeyView(row!);
  });
}

/**
 * The license an organization key acts for, with the key's scopes; null for anything that is not one
 * of our keys. A revoked key, or a key of a license that is revoked, suspended or expired, is refused
 * with its own 401.
 */
export async function resolveOrganizationKey(
  db: Db,
  token: string,
  now = new Date(),
): Promise<LicensePrincipal | null> {
  if (!KEY_PATTERN.test(token)) return null;
  const row = (await db('organization_keys as k')
    .join('licenses as l', 'l.id', 'k.license_id')
    .where('k.key_hash', organizationKeyHash(token))
    // Aliased: the license's own `key_id` (its signing key) must not shadow the API key's id.
    .first(
      'l.*',
      'k.id as api_key_id',
      'k.scopes as api_key_scopes',
      'k.revoked_at as api_key_revoked_at',
      'k.last_used_at as api_key_last_used_at',
    )) as
    | (LicenseRow & {
        api_key_id: string;
        api_key_scopes: KeyScope[];
        api_key_revoked_at: Date | null;
        api_key_last_used_at: Date | null;
      })
    | undefined;
  if (!row) return null;
  // A revoked license says so first: revoking it also revoked its keys (grants.ts).
  if (row.revoked_at) throw new AppError(401, 'license_revoked', 'This license has been revoked.');
  if (row.api_key_revoked_at) throw new AppError(401, 'key_revoked', 'This API key has been revoked.');
  refuseUnusable(row, now);
  // At most one write a minute per key, and none at all when the row read says it is recent.
  const used = row.api_key_last_used_at;
  if (!used || now.getTime() - new Date(used).getTime() >= 60_000) {
    void db('organization_keys')
      .where('id', row.api_key_id)
      .andWhere((q) =>
        q.whereNull('last_used_at').orWhere('last_used_at', '<', db.raw("now() - interval '1 minute'")),
      )
      .update({ last_used_at: db.fn.now() })
      .catch(() => undefined);
  }
  return {
    kind: 'license',
    licenseId: row.id,
    tier: row.tier,
    organization: row.organization,
    scopes: [...row.api_key_scopes],
    keyId: row.api_key_id,
    keyGeneration: row.key_generation,
  };
}
