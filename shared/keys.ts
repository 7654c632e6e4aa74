// The service's own ed25519 key, from SERVICE_SIGNING_KEY or a development key kept under DATA_DIR.
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { signingKeyFromSeed } from './crypto';
import type { SigningKey } from './crypto';
import { env } from './env';

function decodeSeed(text: string): Buffer {
  const t = text.trim();
  const seed = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (seed.length !== 32)
    throw new Error('SERVICE_SIGNING_KEY: expected a 32-byte ed25519 seed, hex or base64');
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
    serviceKey = signingKeyFromSeed(
      env.SERVICE_SIGNING_KEY ? decodeSeed(env.SERVICE_SIGNING_KEY) : developmentSeed(),
    );
  }
  return serviceKey;
}
