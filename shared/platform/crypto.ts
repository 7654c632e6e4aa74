// Hashing and ed25519 on node:crypto alone. No configuration is loaded here, so verifiers built on this
// file (packages, tree heads, attestations) run offline with nothing but the public key.
import {
  createHash,
  createHmac,
  createPrivateKey,
  createPublicKey,
  sign,
  timingSafeEqual,
  verify,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';

// DER prefixes that wrap a raw 32-byte ed25519 seed / public key.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export const sha256 = (data: string | Uint8Array): Buffer => createHash('sha256').update(data).digest();
export const sha256Hex = (data: string | Uint8Array): string => sha256(data).toString('hex');
export const hmacSha256Hex = (key: string | Uint8Array, data: string | Uint8Array): string =>
  createHmac('sha256', key).update(data).digest('hex');

/** Compares two secrets in constant time (length leaks, content does not). */
export function safeEqual(a: string, b: string): boolean {
  const ha = sha256(a);
  const hb = sha256(b);
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

export interface SigningKey extends Signer {
  /** Raw 32-byte public key, base64url. */
  publicKey: string;
  /** The same key as PEM (SPKI), for tools that want it. */
  publicKeyPem: string;
}

export function publicKeyFromRaw(raw: Uint8Array): KeyObject {
  return createPublicKey({
    key: Buffer.concat([SPKI_PREFIX, Buffer.from(raw)]),
    format: 'der',
    type: 'spki',
  });
}

/** The key id published beside a raw public key: the first 16 hex chars of its sha256. */
export const keyIdOf = (publicKeyB64u: string): string =>
  sha256Hex(Buffer.from(publicKeyB64u, 'base64url')).slice(0, 16);

/** Verifies an ed25519 signature (base64url) over a message with a raw public key (base64url). Never throws. */
export function verifyEd25519(
  publicKeyB64u: string,
  message: string | Uint8Array,
  signatureB64u: string,
): boolean {
  try {
    const raw = Buffer.from(publicKeyB64u, 'base64url');
    const sig = Buffer.from(signatureB64u, 'base64url');
    if (raw.length !== 32 || sig.length !== 64) return false;
    // One encoding per signature: otherwise the spare bits of the last character give each signed object
    // several spellings that all verify.
    if (sig.toString('base64url') !== signatureB64u || raw.toString('base64url') !== publicKeyB64u)
      return false;
    return verify(
      null,
      typeof message === 'string' ? Buffer.from(message) : message,
      publicKeyFromRaw(raw),
      sig,
    );
  } catch {
    return false;
  }
}

/** What signs: the service key (a SigningKey) or a test key. */
export interface Signer {
  keyId: string;
  sign(message: string | Uint8Array): string;
}

export function signingKeyFromSeed(seed: Uint8Array): SigningKey {
  if (seed.length !== 32) throw new Error('an ed25519 seed is 32 bytes');
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_PREFIX, Buffer.from(seed)]),
    format: 'der',
    type: 'pkcs8',
  });
  const publicKey = createPublicKey(privateKey);
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
  return {
    keyId: sha256Hex(raw).slice(0, 16),
    publicKey: raw.toString('base64url'),
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    sign: (message) =>
      sign(null, typeof message === 'string' ? Buffer.from(message) : message, privateKey).toString(
        'base64url',
      ),
  };
}
