// Capabilities: an unguessable secret returned once when a resource is made (as Stripe's
// client_secret), which lets whoever holds it read or act on that one resource without an account.
// Only its SHA-256 is stored; it is presented as `Authorization: Bearer <token>` and compared in
// constant time. An id names a resource; a capability (or the creator's own credential) opens it.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { sha256Hex } from './crypto';

/** Token prefixes, one per kind of resource, so a token for one kind never opens another. */
export const capabilityPrefixes = {
  job: 'jt_',
  checkout: 'cs_',
  gate: 'gs_',
} as const;
export type CapabilityKind = keyof typeof capabilityPrefixes;

/** Whether a token is shaped as a capability of any kind (whether it opens anything, only its resource says). */
export const isCapability = (token: string): boolean =>
  Object.values(capabilityPrefixes).some((prefix) => token.startsWith(prefix));

/** A new capability: 32 random bytes after its kind's prefix, and the hash to store. */
export function newCapability(kind: CapabilityKind): { token: string; hash: string } {
  const token = `${capabilityPrefixes[kind]}${randomBytes(32).toString('base64url')}`;
  return { token, hash: capabilityHash(token) };
}

export const capabilityHash = (token: string): string => sha256Hex(token);

/** Whether `token` is the capability whose hash is stored; false for anything else, in constant time. */
export function capabilityMatches(
  kind: CapabilityKind,
  token: string | undefined,
  hash: string | null,
): boolean {
  if (!token || !hash || !token.startsWith(capabilityPrefixes[kind])) return false;
  const a = Buffer.from(capabilityHash(token), 'hex');
  const b = Buffer.from(hash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
