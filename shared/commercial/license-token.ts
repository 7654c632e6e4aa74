// License tokens: `lk_` + base64url(canonical JSON payload) + `.` + base64url(ed25519 signature over the
// payload segment). Pure: no configuration is loaded, so a licensee can check a token offline.
import { canonicalJson } from '../canonical';
import { verifyEd25519 } from '../crypto';
import type { Signer } from '../crypto';

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
}

export function signLicense(payload: Omit<LicensePayload, 'type' | 'keyId'>, signer: Signer): string {
  const full: LicensePayload = { type: LICENSE_TOKEN_TYPE, ...payload, keyId: signer.keyId };
  const segment = Buffer.from(canonicalJson(full)).toString('base64url');
  return `${LICENSE_TOKEN_PREFIX}${segment}.${signer.sign(segment)}`;
}

export type LicenseCheck =
  | { valid: true; license: LicensePayload; expired: false }
  | { valid: false; reason: 'malformed' | 'bad_signature'; license?: undefined; expired?: undefined }
  | { valid: false; reason: 'expired'; license: LicensePayload; expired: true };

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
      typeof p.keyId === 'string';
    return ok ? (p as LicensePayload) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks a license token against the service's public key (raw ed25519, base64url, as published by
 * /api/health and discovery): signature first, then the expiry against `now`.
 */
export function verifyLicense(token: string, publicKey: string, now: Date = new Date()): LicenseCheck {
  if (typeof token !== 'string' || !token.startsWith(LICENSE_TOKEN_PREFIX)) {
    return { valid: false, reason: 'malformed' };
  }
  const parts = token.slice(LICENSE_TOKEN_PREFIX.length).split('.');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return { valid: false, reason: 'malformed' };
  const [segment, signature] = parts as [string, string];
  if (!/^[A-Za-z0-9_-]+$/.test(segment)) return { valid: false, reason: 'malformed' };
  if (!verifyEd25519(publicKey, segment, signature)) return { valid: false, reason: 'bad_signature' };
  const license = parsePayload(segment);
  // Only the service signs, so a signed payload of the wrong shape means a format the verifier predates.
  if (!license) return { valid: false, reason: 'malformed' };
  if (Date.parse(license.expiresAt) <= now.getTime()) {
    return { valid: false, reason: 'expired', license, expired: true };
  }
  return { valid: true, license, expired: false };
}
