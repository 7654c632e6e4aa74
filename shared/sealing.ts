// Secrets at rest: AES-256-GCM with associated data (so a ciphertext opens only in its own row), and
// service keys derived for one purpose each.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { serviceSigningKey } from './keys';

const VERSION = 1;
const HEADER = 1 + 12 + 16; // version, iv, tag

export function seal(key: Uint8Array, aad: string, plain: Uint8Array | string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const body = Buffer.concat([
    cipher.update(typeof plain === 'string' ? Buffer.from(plain) : plain),
    cipher.final(),
  ]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
}

/** Throws when the ciphertext was altered, belongs to another row (aad), or another key sealed it. */
export function open(key: Uint8Array, aad: string, sealed: Uint8Array): Buffer {
  const s = Buffer.from(sealed);
  if (s.length < HEADER || s[0] !== VERSION) throw new Error('unknown sealed format');
  const decipher = createDecipheriv('aes-256-gcm', key, s.subarray(1, 13));
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(s.subarray(13, HEADER));
  return Buffer.concat([decipher.update(s.subarray(HEADER)), decipher.final()]);
}

function decodeKey(name: string, text: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (key.length !== 32) throw new Error(`${name}: expected 32 bytes, hex or base64`);
  return key;
}

const derived = new Map<string, Buffer>();

/**
 * A 32-byte key for one purpose: from the configured variable when set, else derived from the service
 * signing key. ed25519 signatures are deterministic, so the signature over a fixed label is a secret
 * every process holding the signing key computes alike; HKDF separates each purpose from the others.
 */
export function purposeKey(
  purpose: string,
  configured?: { name: string; value: string | undefined },
): Buffer {
  const cacheKey = `${purpose}\n${configured?.value ?? ''}`;
  let key = derived.get(cacheKey);
  if (!key) {
    const ikm = configured?.value
      ? decodeKey(configured.name, configured.value)
      : Buffer.from(serviceSigningKey().sign(`proof-exchange/${purpose}`), 'base64url');
    key = Buffer.from(hkdfSync('sha256', ikm, 'proof-exchange', `${purpose}/aes-256-gcm/v1`, 32));
    derived.set(cacheKey, key);
  }
  return key;
}
