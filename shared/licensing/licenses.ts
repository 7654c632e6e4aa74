// Licenses: issuing one for a settled checkout, sealing its key to the buyer, and resolving a license
// key. The key is stored only as its hash, and sealed to a key only the checkout's client secret
// derives, so it reaches the buyer and no one who reads the database.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { safeEqual, sha256Hex } from '../platform/crypto';
import type { Db } from '../platform/db/knex';
import { AppError } from '../platform/errors';
import { newId } from '../platform/ids';
import { serviceTrust } from '../platform/key-history';
import { serviceSigningKey } from '../platform/keys';
import { boxKeyPair, openFrom, sealTo } from '../platform/sealing';
import { initialCredit } from './entitlements';
import { signLicense, verifyLicense } from './license-token';
import type { CheckoutRow, LicenseRow } from './rows';
import { LICENSE_KEY_SCOPES } from './scopes';
import type { KeyScope } from './scopes';
import { findTier } from './tiers';

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);

/** The purpose a checkout's client secret derives its sealing key pair for. */
const LICENSE_BOX_PURPOSE = 'checkout-license';
const licenseBoxAad = (checkoutId: string, licenseId: string) => `license-key|${checkoutId}|${licenseId}`;

/** The public key a checkout's license key is sealed to, derived from the checkout's client secret. */
export const licenseSealKey = (clientSecret: string) =>
  boxKeyPair(clientSecret, LICENSE_BOX_PURPOSE).publicKey;

export const licenseTokenHash = (token: string): string => sha256Hex(token);

export interface IssuedLicense {
  license: LicenseRow;
  token: string;
}

/**
 * Signs and stores the license of a settled checkout, inside the caller's transaction. The row keeps
 * the token's hash; the token is sealed to the checkout's key (when it has one: every checkout made
 * with a client secret) and returned to the caller, never stored in the clear.
 */
export async function issueLicense(
  trx: Knex.Transaction,
  checkout: CheckoutRow,
  at: Date,
  /** A license issued by hand: its own expiry and the operator's note. */
  terms: { expiresAt?: Date; note?: string | null } = {},
): Promise<{ license: LicenseRow; token: string; sealed: boolean }> {
  const tier = findTier(checkout.license_type);
  if (!tier) throw new Error(`no license tier ${checkout.license_type}`);
  const id = newId('lic');
  const expiresAt = terms.expiresAt ?? new Date(at.getTime() + tier.periodDays * 86_400_000);
  const periodDays = terms.expiresAt
    ? Math.max(1, Math.ceil((expiresAt.getTime() - at.getTime()) / 86_400_000))
    : tier.periodDays;
  const key = serviceSigningKey();
  const token = signLicense(
    {
      licenseId: id,
      checkoutId: checkout.id,
      tier: checkout.license_type,
      organization: checkout.organization,
      periodDays,
      issuedAt: at.toISOString(),
      expiresAt: expiresAt.toISOString(),
      nonce: randomBytes(16).toString('base64url'),
    },
    key,
  );
  const [row] = (await trx('licenses')
    .insert({
      id,
      checkout_id: checkout.id,
      tier: checkout.license_type,
      organization: checkout.organization,
      organization_key: checkout.organization_key,
      period_days: periodDays,
      token_hash: licenseTokenHash(token),
      key_id: key.keyId,
      issued_at: at,
      expires_at: expiresAt,
      credit_usd_cents: initialCredit(checkout.license_type),
      note: terms.note ?? null,
    })
    .returning('*')) as LicenseRow[];
  if (!checkout.license_seal_key) return { license: row!, token, sealed: false };
  await trx('checkouts')
    .where({ id: checkout.id })
    .update({ license_box: sealTo(checkout.license_seal_key, licenseBoxAad(checkout.id, id), token) });
  return { license: row!, token, sealed: true };
}

/** The license key of a checkout, opened with its client secret (the caller checked the secret). */
export function openLicenseToken(
  checkout: CheckoutRow,
  license: LicenseRow,
  clientSecret: string,
): string | null {
  if (!checkout.license_box) return null;
  return openFrom(
    boxKeyPair(clientSecret, LICENSE_BOX_PURPOSE),
    licenseBoxAad(checkout.id, license.id),
    checkout.license_box,
  ).toString('utf8');
}

/**
 * A license as a caller: the license key itself (the organization's admin key, `keyId` null) or one of
 * the organization's API keys (`keyId`, with the scopes it was given).
 */
export type LicensePrincipal = {
  kind: 'license';
  licenseId: string;
  tier: string;
  organization: string;
  scopes: readonly KeyScope[];
  keyId: string | null;
  /** The license key's generation when the request was authenticated (what it mints dies with it). */
  keyGeneration: number;
};

/**
 * Refuses a license that is revoked, suspended or expired, with its own 401: checked on every request
 * from the row just read, so a revocation or suspension holds from the next request on.
 */
export function refuseUnusable(row: LicenseRow, now: Date): void {
  if (row.revoked_at) throw new AppError(401, 'license_revoked', 'This license has been revoked.');
  if (row.suspended_at)
    throw new AppError(
      401,
      'license_suspended',
      'This license is suspended; the operator who issued it can resume it.',
    );
  if (new Date(row.expires_at).getTime() <= now.getTime()) {
    throw new AppError(
      401,
      'license_expired',
      `This license expired at ${iso(row.expires_at)}; buy or renew one through the checkout.`,
    );
  }
}

/**
 * Resolves a bearer license token: a valid signature by this service, a stored license, not revoked,
 * not expired. Null for anything that is not one of our tokens; AppError for a license that was ours.
 */
export async function resolveLicenseToken(
  db: Db,
  token: string,
  now = new Date(),
): Promise<LicensePrincipal | null> {
  // Any key the service has signed licenses with, not only today's: a rotation leaves earlier keys valid.
  const trust = await serviceTrust(db);
  const check = verifyLicense(token, trust, now);
  if (!check.license) return null; // not one of our tokens: malformed, or no key of ours signed it
  // The signed payload names the row (the lookup); the stored hash decides, compared in constant time.
  const row = (await db('licenses').where({ id: check.license.licenseId }).first()) as LicenseRow | undefined;
  if (!row || !safeEqual(licenseTokenHash(token), row.token_hash)) return null;
  if (row.revoked_at) throw new AppError(401, 'license_revoked', 'This license has been revoked.');
  if (row.suspended_at) refuseUnusable(row, now);
  if (!check.valid && check.reason !== 'expired') {
    // The row records when the service issued it: a license issued before its key's revocation holds.
    const held = verifyLicense(token, trust, now, row.issued_at);
    if (!held.valid && held.reason !== 'expired')
      throw new AppError(
        401,
        'license_key_revoked',
        `This license was signed by key ${check.license.keyId}, which ${
          held.reason === 'revoked' ? 'has been revoked' : 'was not valid when it was issued'
        }; ask for a new license.`,
      );
  }
  if (check.expired || new Date(row.expires_at).getTime() <= now.getTime()) {
    throw new AppError(
      401,
      'license_expired',
      `This license expired at ${iso(row.expires_at)}; buy or renew one through the checkout.`,
    );
  }
  return {
    kind: 'license',
    licenseId: row.id,
    tier: row.tier,
    organization: row.organization,
    scopes: LICENSE_KEY_SCOPES,
    keyId: null,
    keyGeneration: row.key_generation,
  };
}
