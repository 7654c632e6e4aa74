// Grants follow their grantor. What a license key or an organization key mints — organization keys,
// and the capabilities (jt_…) of the jobs it creates — dies with it: rotating or revoking the license
// key revokes every key of the organization (all were minted, at some remove, by a license key now
// refused) and the capabilities of all its jobs; revoking an organization key revokes the keys it
// minted, theirs in turn, and the capabilities of the jobs they made. Each cascaded revocation is a
// row of the audit, in the transaction of the action that caused it.
//
// Races: every revocation holds the license row FOR UPDATE, and every mint holds it (FOR SHARE at
// least) while it checks that its grantor is still alive (`holdGrant`), so a request that
// authenticated just before a rotation either mints before it — and the rotation revokes what it
// minted — or finds its credential dead and writes nothing.
import type { Knex } from 'knex';
import { AppError, unauthorized } from '../platform/errors';
import { recordAction } from './audit';

type Conn = Knex.Transaction;

/** The credential a request minted under: the license key of one generation, or an organization key. */
export interface Grantor {
  licenseId: string;
  /** The organization key, or null for the license key itself. */
  keyId: string | null;
  /** The license key's generation the request authenticated against (licenses.key_generation). */
  keyGeneration: number;
}

/** The audit's name of the credential that minted something: `license:<id>` or `key:<id>`. */
export const grantorName = (g: Pick<Grantor, 'licenseId' | 'keyId'>): string =>
  g.keyId ? `key:${g.keyId}` : `license:${g.licenseId}`;

/**
 * Refuses, with the 401 its next request would get, a grantor revoked or rotated away since its
 * request was authenticated. Holds the license row FOR SHARE until the caller's transaction ends, so
 * no revocation of the license or of its keys (each holds that row FOR UPDATE) runs meanwhile.
 */
export async function holdGrant(trx: Conn, grantor: Grantor): Promise<void> {
  const license = (await trx('licenses')
    .where({ id: grantor.licenseId })
    .forShare()
    .first('key_generation', 'revoked_at')) as
    { key_generation: number; revoked_at: Date | null } | undefined;
  if (!license || license.revoked_at)
    throw new AppError(401, 'license_revoked', 'This license has been revoked.');
  if (grantor.keyId) {
    const key = (await trx('organization_keys').where({ id: grantor.keyId }).first('revoked_at')) as
      { revoked_at: Date | null } | undefined;
    if (!key || key.revoked_at) throw new AppError(401, 'key_revoked', 'This API key has been revoked.');
  } else if (license.key_generation !== grantor.keyGeneration) {
    // As the rotated-away key is answered on its next request: not a credential any more.
    throw unauthorized('This license key has been rotated; use the new one.');
  }
}

interface Cascade {
  licenseId: string;
  /** Who acted (the audit's actor). */
  actor: string;
  /** The action that caused the cascade: `license.rotate`, `license.revoke`, `organization_key.revoke`. */
  cause: string;
}

interface RevokedKey {
  id: string;
  created_by: string;
}

async function recordCascade(trx: Conn, c: Cascade, keys: RevokedKey[], jobs: number, grantor: string) {
  for (const k of keys) {
    await recordAction(trx, {
      actor: c.actor,
      action: 'organization_key.revoke',
      target: k.id,
      licenseId: c.licenseId,
      detail: { cascade: c.cause, mintedBy: k.created_by },
    });
  }
  if (jobs > 0) {
    await recordAction(trx, {
      actor: c.actor,
      action: 'job_capability.revoke',
      target: grantor,
      licenseId: c.licenseId,
      detail: { cascade: c.cause, jobs },
    });
  }
}

/**
 * The license key was rotated or revoked (the caller holds the license row FOR UPDATE): every key of
 * the organization still in use is revoked, and every job capability its credentials were given.
 * Returns the keys revoked.
 */
export async function revokeLicenseGrants(trx: Conn, c: Cascade): Promise<string[]> {
  const keys = (await trx('organization_keys')
    .where({ license_id: c.licenseId })
    .whereNull('revoked_at')
    .update({ revoked_at: trx.fn.now() })
    .returning(['id', 'created_by'])) as RevokedKey[];
  keys.sort((a, b) => a.id.localeCompare(b.id));
  const jobs = await trx('jobs')
    .where({ license_id: c.licenseId })
    .whereNotNull('access_hash')
    .update({ access_hash: null });
  await recordCascade(trx, c, keys, jobs, `license:${c.licenseId}`);
  return keys.map((k) => k.id);
}

/**
 * An organization key was revoked (the caller holds the license row FOR UPDATE): the keys it minted,
 * and theirs, are revoked, and the capabilities of the jobs any of them made. Runs again on a key
 * already revoked, so a key revoked before grants cascaded takes what it minted with it when revoked
 * again. Returns the keys revoked now, the key itself excluded.
 */
export async function revokeKeyGrants(trx: Conn, keyId: string, c: Cascade): Promise<string[]> {
  const { rows } = (await trx.raw(
    `with recursive tree as (
       select id from organization_keys where id = ? and license_id = ?
       union
       select k.id from organization_keys k join tree t on k.minted_by_key_id = t.id
     )
     select id from tree`,
    [keyId, c.licenseId],
  )) as { rows: Array<{ id: string }> };
  const tree = rows.map((r) => r.id);
  const keys = (await trx('organization_keys')
    .whereIn('id', tree)
    .whereNot('id', keyId)
    .whereNull('revoked_at')
    .update({ revoked_at: trx.fn.now() })
    .returning(['id', 'created_by'])) as RevokedKey[];
  keys.sort((a, b) => a.id.localeCompare(b.id));
  const jobs = await trx('jobs')
    .whereIn('organization_key_id', tree)
    .whereNotNull('access_hash')
    .update({ access_hash: null });
  await recordCascade(trx, c, keys, jobs, `key:${keyId}`);
  return keys.map((k) => k.id);
}
