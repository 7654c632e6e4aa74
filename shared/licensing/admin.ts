// The operator's administration of licenses: issuing one by hand (an invoice paid off-chain), listing,
// showing, suspending, resuming, revoking and rotating. Each action runs in one transaction with its
// record in the audit. A new or rotated key is returned once; only its hash is kept, and a rotated or
// revoked license's sealed copy for its checkout is dropped, so no old key can be fetched again. Rotating
// or revoking a license revokes what its keys minted with them (grants.ts).
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../platform/db/knex';
import { AppError, conflict, notFound } from '../platform/errors';
import { idPattern, newId } from '../platform/ids';
import { serviceSigningKey } from '../platform/keys';
import { decodeListCursor, listPage } from '../platform/paging';
import type { ListPage } from '../platform/paging';
import { recordAction } from './audit';
import { licenseUsage } from './entitlements';
import { revokeLicenseGrants } from './grants';
import { signLicense } from './license-token';
import { issueLicense, licenseTokenHash } from './licenses';
import { normalizeOrganization } from './organizations';
import type { CheckoutRow, LicenseRow } from './rows';
import type { PaidLicenseType } from './tiers';

export const licenseStatuses = ['active', 'suspended', 'revoked', 'expired'] as const;
export type LicenseStatus = (typeof licenseStatuses)[number];

export interface LicenseAdminView {
  licenseId: string;
  organization: string;
  tier: LicenseRow['tier'];
  status: LicenseStatus;
  /** How it was issued: a paid checkout, a TRIAL, or by hand. */
  source: 'checkout' | 'trial' | 'manual';
  issuedAt: string;
  expiresAt: string;
  suspendedAt: string | null;
  revokedAt: string | null;
  rotatedAt: string | null;
  note: string | null;
  creditUsdCents: number;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

function statusOf(r: LicenseRow, now = new Date()): LicenseStatus {
  if (r.revoked_at) return 'revoked';
  if (r.suspended_at) return 'suspended';
  if (new Date(r.expires_at).getTime() <= now.getTime()) return 'expired';
  return 'active';
}

type Joined = LicenseRow & { settlement: CheckoutRow['settlement'] };

const view = (r: Joined): LicenseAdminView => ({
  licenseId: r.id,
  organization: r.organization,
  tier: r.tier,
  status: statusOf(r),
  source: r.settlement === 'manual' ? 'manual' : r.settlement === 'trial' ? 'trial' : 'checkout',
  issuedAt: new Date(r.issued_at).toISOString(),
  expiresAt: new Date(r.expires_at).toISOString(),
  suspendedAt: iso(r.suspended_at),
  revokedAt: iso(r.revoked_at),
  rotatedAt: iso(r.rotated_at),
  note: r.note,
  creditUsdCents: r.credit_usd_cents,
});

const joined = (db: Db | Knex.Transaction) =>
  db('licenses as l').join('checkouts as c', 'c.id', 'l.checkout_id').select('l.*', 'c.settlement');

async function loadOrThrow(db: Db | Knex.Transaction, licenseId: string, lock = false): Promise<Joined> {
  if (!idPattern('lic').test(licenseId)) throw notFound(`License ${licenseId}`);
  const q = joined(db).where('l.id', licenseId);
  if (lock) q.forUpdate('l');
  const row = (await q.first()) as Joined | undefined;
  if (!row) throw notFound(`License ${licenseId}`);
  return row;
}

export interface ManualLicenseInput {
  organization: string;
  tier: PaidLicenseType;
  /** Defaults to the tier's period from now. */
  expiresAt?: Date | undefined;
  note?: string | undefined;
  email?: string | undefined;
}

/**
 * Issues a license by hand, for an invoice the operator saw paid off-chain: a checkout settled
 * `manual` (so every license keeps its checkout) and its license, in one transaction.
 */
export async function issueManualLicense(
  db: Db,
  input: ManualLicenseInput,
  actor = 'operator',
): Promise<{ license: LicenseAdminView; licenseKey: string }> {
  const now = new Date();
  const organizationKey = normalizeOrganization(input.organization);
  if (!organizationKey) {
    throw new AppError(422, 'invalid_organization', 'The organization name needs a letter or a digit.', {
      errors: [{ path: 'body.organization', message: 'no letter or digit' }],
    });
  }
  if (input.expiresAt && input.expiresAt.getTime() <= now.getTime() + 60_000) {
    throw new AppError(422, 'invalid_expiry', 'expiresAt must be in the future.', {
      errors: [{ path: 'body.expiresAt', message: 'in the past' }],
    });
  }
  return db.transaction(async (trx) => {
    const [checkout] = (await trx('checkouts')
      .insert({
        id: newId('chk'),
        license_type: input.tier,
        organization: input.organization,
        organization_key: organizationKey,
        email: input.email ?? '',
        usd_cents: 0,
        status: 'confirmed',
        settlement: 'manual',
        settled_at: now,
        created_at: now,
        updated_at: now,
      })
      .returning('*')) as CheckoutRow[];
    const { license, token } = await issueLicense(trx, checkout!, now, {
      ...(input.expiresAt ? { expiresAt: input.expiresAt } : {}),
      note: input.note ?? null,
    });
    await recordAction(trx, {
      actor,
      action: 'license.issue',
      target: license.id,
      licenseId: license.id,
      detail: {
        organization: input.organization,
        tier: input.tier,
        expiresAt: new Date(license.expires_at).toISOString(),
      },
    });
    return { license: view({ ...license, settlement: 'manual' }), licenseKey: token };
  });
}

/** Licenses newest first, of one organization (any spelling of its name) or status when asked. */
export async function listLicenses(
  db: Db,
  opts: {
    limit: number;
    cursor?: string | undefined;
    organization?: string | undefined;
    status?: LicenseStatus | undefined;
  },
): Promise<ListPage<LicenseAdminView>> {
  const after = decodeListCursor(opts.cursor, 'licenses');
  const q = joined(db)
    .orderBy('l.id', 'desc')
    .limit(opts.limit + 1);
  if (after) q.where('l.id', '<', after);
  if (opts.organization) q.where('l.organization_key', normalizeOrganization(opts.organization));
  switch (opts.status) {
    case 'revoked':
      q.whereNotNull('l.revoked_at');
      break;
    case 'suspended':
      q.whereNull('l.revoked_at').whereNotNull('l.suspended_at');
      break;
    case 'expired':
      q.whereNull('l.revoked_at').whereNull('l.suspended_at').where('l.expires_at', '<=', db.fn.now());
      break;
    case 'active':
      q.whereNull('l.revoked_at').whereNull('l.suspended_at').where('l.expires_at', '>', db.fn.now());
      break;
    default:
      break;
  }
  return listPage((await q) as Joined[], opts.limit, 'licenses', view);
}

/** One license with its usage and how many of its organization keys are in use. */
export async function showLicense(db: Db, licenseId: string) {
  const row = await loadOrThrow(db, licenseId);
  const [{ n }] = (await db('organization_keys')
    .where({ license_id: licenseId })
    .whereNull('revoked_at')
    .count('* as n')) as [{ n: string }];
  return {
    ...view(row),
    activeKeys: Number(n),
    usage: await licenseUsage(db, { licenseId: row.id, tier: row.tier }),
  };
}

const revokedConflict = (id: string) =>
  conflict('license_already_revoked', `License ${id} is revoked; issue a new one instead.`);

/**
 * Changes one license's state under its row lock, with the action recorded; returns the new view.
 * `revokesGrants`: the license key in use is refused from now on, so what its credentials minted is
 * revoked in the same transaction, recorded after the action (even when the state was already so: a
 * license revoked before grants cascaded takes them with it when revoked again).
 */
async function change(
  db: Db,
  licenseId: string,
  actor: string,
  action: string,
  apply: (row: Joined, trx: Knex.Transaction) => Promise<Partial<LicenseRow> | null>,
  revokesGrants = false,
): Promise<LicenseAdminView> {
  return db.transaction(async (trx) => {
    const row = await loadOrThrow(trx, licenseId, true);
    const patch = await apply(row, trx);
    if (patch) {
      await trx('licenses').where({ id: licenseId }).update(patch);
      await recordAction(trx, { actor, action, target: licenseId, licenseId });
    }
    if (revokesGrants) await revokeLicenseGrants(trx, { licenseId, actor, cause: action });
    return view({ ...row, ...patch });
  });
}

/** Suspends a license: its key and every key of its organization are refused until it resumes. */
export const suspendLicense = (db: Db, licenseId: string, actor = 'operator') =>
  change(db, licenseId, actor, 'license.suspend', async (row) => {
    if (row.revoked_at) throw revokedConflict(licenseId);
    return row.suspended_at ? null : { suspended_at: new Date() };
  });

export const resumeLicense = (db: Db, licenseId: string, actor = 'operator') =>
  change(db, licenseId, actor, 'license.resume', async (row) => {
    if (row.revoked_at) throw revokedConflict(licenseId);
    return row.suspended_at ? { suspended_at: null } : null;
  });

/**
 * Revokes a license for good: its key and every key of its organization are refused from now on, the
 * keys are recorded revoked, and the capabilities of its jobs no longer open them.
 */
export const revokeLicense = (db: Db, licenseId: string, actor = 'operator') =>
  change(
    db,
    licenseId,
    actor,
    'license.revoke',
    async (row, trx) => {
      if (row.revoked_at) return null;
      await trx('checkouts').where({ id: row.checkout_id }).update({ license_box: null });
      return { revoked_at: new Date() };
    },
    true,
  );

/**
 * A new key for the license (same license, tier, expiry and organization): the old key is refused from
 * the next request on, since only the new key's hash is kept, and so is everything it minted: every
 * organization key (each was minted by this license key or an earlier one, at some remove) and every
 * job capability (grants.ts). The new key is returned once.
 */
export async function rotateLicense(
  db: Db,
  licenseId: string,
  actor = 'operator',
): Promise<{ license: LicenseAdminView; licenseKey: string }> {
  let licenseKey = '';
  const license = await change(
    db,
    licenseId,
    actor,
    'license.rotate',
    async (row, trx) => {
      if (row.revoked_at) throw revokedConflict(licenseId);
      const now = new Date();
      const key = serviceSigningKey();
      licenseKey = signLicense(
        {
          licenseId: row.id,
          checkoutId: row.checkout_id,
          tier: row.tier,
          organization: row.organization,
          periodDays: row.period_days,
          issuedAt: now.toISOString(),
          expiresAt: new Date(row.expires_at).toISOString(),
          nonce: randomBytes(16).toString('base64url'),
        },
        key,
      );
      // The sealed copy the checkout's client secret opens holds the old key: dropped, not re-sealed.
      await trx('checkouts').where({ id: row.checkout_id }).update({ license_box: null });
      // issued_at records when the service issued the key in use: a later revocation of the signing key
      // is judged against it (resolveLicenseToken).
      return {
        token_hash: licenseTokenHash(licenseKey),
        key_id: key.keyId,
        issued_at: now,
        rotated_at: now,
        key_generation: row.key_generation + 1,
      };
    },
    true,
  );
  return { license, licenseKey };
}
