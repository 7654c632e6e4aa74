// License tokens: `lk_` + base64url(canonical JSON payload) + `.` + base64url(ed25519 signature over the
// payload segment). Pure: no configuration is loaded, so a licensee can check a token offline.
import { canonicalJson } from '../platform/canonical';
import { verifyEd25519 } from '../platform/crypto';
import { asTrust, keyFor } from '../platform/trust';
import type { KeyProblem, Trust } from '../platform/trust';
import type { Signer } from '../platform/crypto';

export const LICENSE_TOKEN_TYPE = 'proof-exchange.license/v1';
export const LICENSE_TOKEN_PREFIX = 'lk_';

export interface LicensePayload {
  type: typeof LICENSE_TOKEN_TYPE;
  licenseId: string;
  checkoutId: string;
  tier: 'TRIAL' | 'Starter' | 'Business' | 'Enterprise';
  organization: string;
  periodDays: number;
  issuedAt: string;
  expiresAt: string;
  keyId: string;
  /**
   * Fresh randomness (tokens issued since license keys are stored as hashes): without it a token is
   * a function of its row and the signing key (ed25519 is deterministic), so a database dump and that
   * key would give back every license key. Older tokens have none and still verify.
   */
  nonce?: string;
}

export function signLicense(payload: Omit<LicensePayload, 'type' | 'keyId'>, signer: Signer): string {
  const full: LicensePayload = { type: LICENSE_TOKEN_TYPE, ...payload, keyId: signer.keyId };
  const segment = Buffer.from(canonicalJson(full)).toString('base64url');
  return `${LICENSE_TOKEN_PREFIX}${segment}.${signer.sign(segment)}`;
}

export type LicenseCheck =
  | { valid: true; license: LicensePayload; expired: false }
  | { valid: false; reason: 'malformed' | 'bad_signature'; license?: undefined; expired?: undefined }
  | { valid: false; reason: 'expired'; license: LicensePayload; expired: true }
  /** Signed by a key the trust root lists, but revoked, or outside its period at the token's issuedAt. */
  | {
      valid: false;
      reason: Exclude<KeyProblem, 'unknown_key' | 'wrong_role'>;
      license: LicensePayload;
      expired?: undefined;
    };

const tiers = new Set(['TRIAL', 'Starter', 'Business', 'Enterprise']);

function parsePayload(segment: string): LicensePayload | undefined {
  try {
    const p = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as Partial<LicensePayload>;
    const ok =
      p.type === LICENSE_TOKEN_TYPE &&
      typeof p.licenseId === 'string' &&
      typeof p.checkoutId === 'string' &&
      tiers.has(p.tier as string) &&
      typeof p.organization === 'string' &&
      Number.isInteger(p.periodDays) &&
      !Number.isNaN(Date.parse(p.issuedAt as string)) &&
      !Number.isNaN(Date.parse(p.expiresAt as string)) &&
      typeof p.keyId === 'string' &&
      (p.nonce === undefined || typeof p.nonce === 'string');
    return ok ? (p as LicensePayload) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks a license token against the service's trust root (or its bare public key, raw ed25519,
 * base64url, as published by /api/health and discovery): the key the token names, with role `license`,
 * its signature, the key's period at the token's issuedAt and its revocation (`loggedAt`: when the
 * service recorded the license, which holds it against a revocation from a later time), then the expiry
 * against `now`.
 */
export function verifyLicense(
  token: string,
  trust: Trust,
  now: Date = new Date(),
  loggedAt?: string | Date,
): LicenseCheck {
  if (typeof token !== 'string' || !token.startsWith(LICENSE_TOKEN_PREFIX)) {
    return { valid: false, reason: 'malformed' };
  }
  const parts = token.slice(LICENSE_TOKEN_PREFIX.length).split('.');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return { valid: false, reason: 'malformed' };
  const [segment, signature] = parts as [string, string];
  if (!/^[A-Za-z0-9_-]+$/.test(segment)) return { valid: false, reason: 'malformed' };
  const root = asTrust(trust);
  // The payload names its key; nothing it says is believed before that key's signature is checked.
  const claimed = keyIdOf(segment);
  const key = claimed === undefined ? undefined : root.keys.find((k) => k.keyId === claimed);
  if (!key || !key.roles.includes('license') || !verifyEd25519(key.publicKey, segment, signature))
    return { valid: false, reason: 'bad_signature' };
  const license = parsePayload(segment);
  // Only the service signs, so a signed payload of the wrong shape means a format the verifier predates.
  if (!license) return { valid: false, reason: 'malformed' };
  const period = keyFor(root, key.keyId, 'license', license.issuedAt, loggedAt);
  if (!period.ok) {
    return {
      valid: false,
      reason: period.reason as Exclude<KeyProblem, 'unknown_key' | 'wrong_role'>,
      license,
    };
  }
  if (Date.parse(license.expiresAt) <= now.getTime()) {
    return { valid: false, reason: 'expired', license, expired: true };
  }
  return { valid: true, license, expired: false };
}

/** The key id a token's payload names, read before anything is verified (to find the key). */
function keyIdOf(segment: string): string | undefined {
  try {
    const keyId = (JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as { keyId?: unknown })
      .keyId;
    return typeof keyId === 'string' ? keyId : undefined;
  } catch {
    return undefined;
  }
}
