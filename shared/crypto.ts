// The service's ed25519 signing key and the hashing helpers everything that signs or commits uses.
import { createHash, createHmac, createPrivateKey, createPublicKey, generateKeyPairSync, sign, timingSafeEqual, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { env } from './env';

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

export interface SigningKey {
  /** Short stable id of the public key: first 16 hex chars of sha256(raw public key). */
  keyId: string;
  /** Raw 32-byte public key, base64url. */
  publicKey: string;
  /** The same key as PEM (SPKI), for tools that want it. */
  publicKeyPem: string;
  sign(message: string | Uint8Array): string;
}

export function publicKeyFromRaw(raw: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, Buffer.from(raw)]), format: 'der', type: 'spki' });
}

/** Verifies an ed25519 signature (base64url) over a message with a raw public key (base64url). Never throws. */
export function verifyEd25519(publicKeyB64u: string, message: string | Uint8Array, signatureB64u: string): boolean {
  try {
    const raw = Buffer.from(publicKeyB64u, 'base64url');
    const sig = Buffer.from(signatureB64u, 'base64url');
    if (raw.length !== 32 || sig.length !== 64) return false;
    return verify(null, typeof message === 'string' ? Buffer.from(message) : message, publicKeyFromRaw(raw), sig);
  } catch {
    return false;
  }
}

export function signingKeyFromSeed(seed: Uint8Array): SigningKey {
  if (seed.length !== 32) throw new Error('an ed25519 seed is 32 bytes');
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, Buffer.from(seed)]), format: 'der', type: 'pkcs8' });
  const publicKey = createPublicKey(privateKey);
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
  return {
    keyId: sha256Hex(raw).slice(0, 16),
    publicKey: raw.toString('base64url'),
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    sign: (message) =>
      sign(null, typeof message === 'string' ? Buffer.from(message) : message, privateKey).toString('base64url'),
  };
}

function decodeSeed(text: string): Buffer {
  const t = text.trim();
  const seed = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (seed.length !== 32) throw new Error('SERVICE_SIGNING_KEY: expected a 32-byte ed25519 seed, hex or base64');
  return seed;
}

/**
 * Development key: made once under DATA_DIR and shared by every local process, so receipts and
 * attestations signed by the worker verify against the key the web process publishes.
 */
function developmentSeed(): Buffer {
  const file = join(env.DATA_DIR, 'keys', 'service-ed25519.seed');
  try {
    return decodeSeed(readFileSync(file, 'utf8'));
  } catch {
    mkdirSync(dirname(file), { recursive: true });
    const jwk = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
    const seed = Buffer.from(jwk.d as string, 'base64url');
    try {
      writeFileSync(file, seed.toString('hex'), { flag: 'wx', mode: 0o600 });
      return seed;
    } catch {
      return decodeSeed(readFileSync(file, 'utf8')); // another process won the race
    }
  }
}

let serviceKey: SigningKey | undefined;

/** The key that signs attestations, receipts, licenses and proof packages. */
export function serviceSigningKey(): SigningKey {
  if (!serviceKey) {
    if (!env.SERVICE_SIGNING_KEY && env.NODE_ENV === 'production') {
      throw new Error('SERVICE_SIGNING_KEY must be set in production');
    }
    serviceKey = signingKeyFromSeed(env.SERVICE_SIGNING_KEY ? decodeSeed(env.SERVICE_SIGNING_KEY) : developmentSeed());
  }
  return serviceKey;
}
