// The service's own ed25519 keys: SERVICE_SIGNING_KEY (packages, receipts, licenses, attestations) and
// LOG_SIGNING_KEY (the log's checkpoints), or development keys kept under DATA_DIR. Each signs only while
// the key history has not retired or revoked it (shared/platform/key-history.ts keeps that status here).
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { signingKeyFromSeed } from './crypto';
import type { SigningKey } from './crypto';
import { env, isProduction } from './env';
import { AppError } from './errors';
import type { TrustRole } from './trust';

function decodeSeed(text: string, variable: string): Buffer {
  const t = text.trim();
  const seed = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (seed.length !== 32) throw new Error(`${variable}: expected a 32-byte ed25519 seed, hex or base64`);
  return seed;
}

/** Whether a setting holds a 32-byte ed25519 seed (hex or base64); never says the value. */
export function isSeed(text: string): boolean {
  try {
    decodeSeed(text, 'seed');
    return true;
  } catch {
    return false;
  }
}

/**
 * Development key: made once under DATA_DIR and shared by every local process, so receipts and
 * attestations signed by the worker verify against the key the web process publishes.
 */
function developmentSeed(name: string, variable: string): Buffer {
  const file = join(env.DATA_DIR, 'keys', name);
  try {
    return decodeSeed(readFileSync(file, 'utf8'), variable);
  } catch {
    mkdirSync(dirname(file), { recursive: true });
    const jwk = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
    const seed = Buffer.from(jwk.d as string, 'base64url');
    try {
      writeFileSync(file, seed.toString('hex'), { flag: 'wx', mode: 0o600 });
      return seed;
    } catch {
      return decodeSeed(readFileSync(file, 'utf8'), variable); // another process won the race
    }
  }
}

/** One of this process's keys: the setting it comes from, what it signs, and when it was loaded. */
export interface OwnKey {
  variable: 'SERVICE_SIGNING_KEY' | 'LOG_SIGNING_KEY';
  roles: TrustRole[];
  key: SigningKey;
  /** Everything this process signs with the key is signed after this. */
  loadedAt: Date;
}

/** Why each key may not sign any more, by key id, as the key history last said (key-history.ts). */
const refusals = new Map<string, string>();

/** Records the key history's word on one of this process's keys: null while it may sign. */
export function setKeyRefusal(keyId: string, refusal: string | null): void {
  if (refusal === null) refusals.delete(keyId);
  else refusals.set(keyId, refusal);
}

/** Why the key history closed one of this process's keys (retired, revoked), or undefined while it signs. */
export const keyRefusal = (keyId: string): string | undefined => refusals.get(keyId);

/** A signature asked of a key the key history retired or revoked: a request answers 503, a job retries. */
export class SigningKeyRetired extends AppError {
  constructor(keyId: string, variable: string, why: string) {
    super(
      503,
      'signing_key_retired',
      `This process's ${variable} (key ${keyId}) ${why}; it signs nothing more. Try again shortly: a process with the current key answers.`,
      { headers: { 'Retry-After': '5' } },
    );
    this.name = 'SigningKeyRetired';
  }
}

function guarded(own: Omit<OwnKey, 'key'> & { raw: SigningKey }): OwnKey {
  const { raw, ...rest } = own;
  return {
    ...rest,
    key: {
      ...raw,
      sign: (message) => {
        const why = refusals.get(raw.keyId);
        if (why !== undefined) throw new SigningKeyRetired(raw.keyId, own.variable, why);
        return raw.sign(message);
      },
    },
  };
}

let service: { own: OwnKey; raw: SigningKey } | undefined;
let log: OwnKey | undefined;

function loadService(): { own: OwnKey; raw: SigningKey } {
  if (!service) {
    if (!env.SERVICE_SIGNING_KEY && isProduction(env)) {
      throw new Error('SERVICE_SIGNING_KEY must be set in production');
    }
    const raw = signingKeyFromSeed(
      env.SERVICE_SIGNING_KEY
        ? decodeSeed(env.SERVICE_SIGNING_KEY, 'SERVICE_SIGNING_KEY')
        : developmentSeed('service-ed25519.seed', 'SERVICE_SIGNING_KEY'),
    );
    const own = guarded({
      variable: 'SERVICE_SIGNING_KEY',
      roles: ['package', 'receipt', 'license', 'attestation'],
      raw,
      loadedAt: new Date(),
    });
    service = { own, raw };
  }
  return service;
}

/** The key that signs attestations, receipts, licenses and proof packages. */
export function serviceSigningKey(): SigningKey {
  return loadService().own.key;
}

/**
 * The service key itself, for deriving secrets from it (the sealing key while SEALING_KEY is unset),
 * never for a signed statement: that goes through serviceSigningKey, which refuses a retired key.
 */
export function serviceKeyForDerivation(): SigningKey {
  return loadService().raw;
}

/** Whether this process has a log key: LOG_SIGNING_KEY, or a development one (never made in production). */
export const logSigningKeyAvailable = (): boolean => Boolean(env.LOG_SIGNING_KEY) || !isProduction(env);

/** The key that signs the log's checkpoints (role `log`), apart from the service key. */
export function logSigningKey(): SigningKey {
  if (!log) {
    if (!logSigningKeyAvailable()) throw new Error('LOG_SIGNING_KEY must be set in production');
    const raw = signingKeyFromSeed(
      env.LOG_SIGNING_KEY
        ? decodeSeed(env.LOG_SIGNING_KEY, 'LOG_SIGNING_KEY')
        : developmentSeed('log-ed25519.seed', 'LOG_SIGNING_KEY'),
    );
    log = guarded({ variable: 'LOG_SIGNING_KEY', roles: ['log'], raw, loadedAt: new Date() });
  }
  return log.key;
}

/** The log's origin: LOG_ORIGIN, else the host of SITE_URL (else BASE_URL, else localhost) and `/log`. */
export function logOrigin(): string {
  if (env.LOG_ORIGIN) return env.LOG_ORIGIN;
  const base = env.SITE_URL ?? env.BASE_URL;
  return `${base ? new URL(base).host : 'localhost'}/log`;
}

/** The keys this process signs with, each with its roles: the service key, and the log key when it has one. */
export function ownKeys(): OwnKey[] {
  loadService();
  if (logSigningKeyAvailable()) logSigningKey();
  return [service!.own, ...(log ? [log] : [])];
}
