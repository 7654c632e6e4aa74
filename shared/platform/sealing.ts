// Secrets at rest: AES-256-GCM with associated data (so a ciphertext opens only in its own row),
// service keys derived for one purpose each, and sealed boxes to an X25519 key (whoever seals needs
// only the public key; only the holder of the secret it was derived from opens).
import {
  createCipheriv,
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  randomBytes,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { env } from './env';
import type { Env } from './env';
import { serviceKeyForDerivation } from './keys';

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

/**
 * A configured key: 32 bytes, hex or base64 — or the 64 bytes `npm run keys -- derived` prints, the
 * signing key's signature a key was derived from, so pinning it keeps that key when the signing key changes.
 */
export function decodeKey(name: string, text: string): Buffer {
  const t = text.trim();
  const key = /^(?:[0-9a-fA-F]{64}|[0-9a-fA-F]{128})$/.test(t)
    ? Buffer.from(t, 'hex')
    : Buffer.from(t, 'base64');
  if (key.length !== 32 && key.length !== 64) throw new Error(`${name}: expected 32 bytes, hex or base64`);
  return key;
}

const derived = new Map<string, Buffer>();

/**
 * The keys that, while their variable is unset, are derived from the signing key: a new signing key
 * would derive others, and what they sealed would no longer open. Pinned before a rotation
 * (`npm run keys -- derived` prints their values; docs/security.md, "Rotating a signing key").
 */
export const derivedKeyPurposes = {
  SEALING_KEY: 'secrets-at-rest',
  BALLOT_KEY: 'ballot-key',
  PROOF_INPUT_KEY: 'proof-input-key',
} as const;

/** What a purpose's key is derived from while its variable is unset: the signing key's signature over a label. */
export const derivationInput = (purpose: string): Buffer =>
  Buffer.from(serviceKeyForDerivation().sign(`proof-exchange/${purpose}`), 'base64url');

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
    const ikm = configured?.value ? decodeKey(configured.name, configured.value) : derivationInput(purpose);
    key = Buffer.from(hkdfSync('sha256', ikm, 'proof-exchange', `${purpose}/aes-256-gcm/v1`, 32));
    derived.set(cacheKey, key);
  }
  return key;
}

// ---------------------------------------------------------------------------------------------------
// Sealed boxes: ephemeral X25519 + HKDF-SHA256 + AES-256-GCM (with associated data), as ECIES.

// DER prefixes that wrap a raw 32-byte X25519 private / public key.
const X25519_PKCS8 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const X25519_SPKI = Buffer.from('302a300506032b656e032100', 'hex');
const BOX_VERSION = 1;

export interface BoxKeyPair {
  /** Raw 32-byte X25519 public key: safe to store, what a sealer needs. */
  publicKey: Buffer;
  privateKey: KeyObject;
}

const rawPublic = (key: KeyObject): Buffer =>
  Buffer.from(
    (key.type === 'public' ? key : createPublicKey(key)).export({ format: 'der', type: 'spki' }),
  ).subarray(-32);

/**
 * The X25519 key pair of a secret for one purpose (HKDF-SHA256 of the secret): whoever holds the
 * secret derives it again, so nothing but its public key is ever stored.
 */
export function boxKeyPair(secret: string, purpose: string): BoxKeyPair {
  const seed = Buffer.from(
    hkdfSync('sha256', Buffer.from(secret), 'proof-exchange', `${purpose}/x25519/v1`, 32),
  );
  const privateKey = createPrivateKey({
    key: Buffer.concat([X25519_PKCS8, seed]),
    format: 'der',
    type: 'pkcs8',
  });
  return { publicKey: rawPublic(privateKey), privateKey };
}

function boxKey(shared: Buffer, ephemeral: Buffer, recipient: Buffer): Buffer {
  const salt = Buffer.concat([ephemeral, recipient]);
  return Buffer.from(hkdfSync('sha256', shared, salt, 'proof-exchange/sealed-box/v1', 32));
}

/** Seals to a raw X25519 public key: version, the ephemeral public key, then `seal` under the shared key. */
export function sealTo(recipient: Uint8Array, aad: string, plain: Uint8Array | string): Buffer {
  const to = Buffer.from(recipient);
  if (to.length !== 32) throw new Error('sealTo: expected a raw 32-byte X25519 public key');
  const ephemeral = generateKeyPairSync('x25519');
  const ephemeralPublic = rawPublic(ephemeral.publicKey);
  const shared = diffieHellman({
    privateKey: ephemeral.privateKey,
    publicKey: createPublicKey({ key: Buffer.concat([X25519_SPKI, to]), format: 'der', type: 'spki' }),
  });
  return Buffer.concat([
    Buffer.from([BOX_VERSION]),
    ephemeralPublic,
    seal(boxKey(shared, ephemeralPublic, to), aad, plain),
  ]);
}

/** Opens a sealed box with its recipient's key pair; throws when altered, misplaced (aad) or not ours. */
export function openFrom(pair: BoxKeyPair, aad: string, sealed: Uint8Array): Buffer {
  const s = Buffer.from(sealed);
  if (s.length < 1 + 32 + HEADER || s[0] !== BOX_VERSION) throw new Error('unknown sealed box format');
  const ephemeralPublic = s.subarray(1, 33);
  const shared = diffieHellman({
    privateKey: pair.privateKey,
    publicKey: createPublicKey({
      key: Buffer.concat([X25519_SPKI, ephemeralPublic]),
      format: 'der',
      type: 'spki',
    }),
  });
  return open(boxKey(shared, ephemeralPublic, pair.publicKey), aad, s.subarray(33));
}

/**
 * The key of the secrets the service keeps to use again (webhook signing secrets, outbound credentials):
 * SEALING_KEY when set, else derived from the signing key (development). With SEALING_KEY set, the
 * signing key can rotate without touching them.
 */
export const secretsKey = (): Buffer =>
  purposeKey(derivedKeyPurposes.SEALING_KEY, { name: 'SEALING_KEY', value: env.SEALING_KEY });

/** Where a sealed secret lives: its ciphertext opens only in this table, row and column. */
export interface SecretPlace {
  table: string;
  id: string;
  column: string;
}

const secretAad = (p: SecretPlace): string =>
  `proof-exchange/secret-at-rest/v1\n${p.table}\n${p.id}\n${p.column}`;

export const sealSecret = (place: SecretPlace, plain: string): Buffer =>
  seal(secretsKey(), secretAad(place), plain);

/** The associated data of a sealed secret's place, for re-sealing it (sealed-columns.ts). */
export const secretPlaceAad = secretAad;

/** Throws when the ciphertext was made for another place or under none of the SEALING_KEY ring. */
export const openSecret = (place: SecretPlace, sealed: Uint8Array): string =>
  openWithRing(keyRing('SEALING_KEY'), secretAad(place), sealed).plain.toString('utf8');

// ---------------------------------------------------------------------------------------------------
// Key history: a sealing key and the keys it replaced.
//
// A sealed value carries no key id: `open` tries the current key, then each earlier one. AES-GCM
// authenticates, so a wrong key fails for certain rather than opening to garbage, and a try costs
// one AES pass over a few dozen bytes; the stored format (and every value sealed before the history
// existed) stays as it is, and the database does not say which key sealed what.

/** The variables that have a history: each names its earlier keys in `<NAME>_PREVIOUS`. */
export type RingName = 'SEALING_KEY' | 'BALLOT_KEY';

export interface KeyRing {
  name: RingName;
  /** Seals everything new. */
  current: Buffer;
  /** Open what was sealed before, in the order listed; never seal. */
  previous: Buffer[];
}

/** The entries of a `<NAME>_PREVIOUS` list (comma-separated, each in a key's own forms). */
export const previousKeyTexts = (text: string | undefined): string[] =>
  (text ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');

/**
 * A variable's key ring: the current key, then each `<NAME>_PREVIOUS` entry. The key derived from the
 * signing key is never tried beside a configured one: a deployment that first sets the variable lists
 * the derived key's value (`npm run keys -- derived`) in `<NAME>_PREVIOUS` until `release` has moved
 * what it sealed.
 */
export type KeySettings = Partial<
  Pick<Env, 'SEALING_KEY' | 'SEALING_KEY_PREVIOUS' | 'BALLOT_KEY' | 'BALLOT_KEY_PREVIOUS' | 'PROOF_INPUT_KEY'>
>;

export function keyRing(name: RingName, settings: KeySettings = env): KeyRing {
  const purpose = derivedKeyPurposes[name];
  const current = purposeKey(purpose, { name, value: settings[name] });
  const candidates = previousKeyTexts(settings[`${name}_PREVIOUS`]).map((value) =>
    purposeKey(purpose, { name: `${name}_PREVIOUS`, value }),
  );
  const seen = new Set([current.toString('hex')]);
  const previous = candidates.filter((k) => {
    const hex = k.toString('hex');
    if (seen.has(hex)) return false;
    seen.add(hex);
    return true;
  });
  return { name, current, previous };
}

/** A sealed value none of a ring's keys opens: altered, misplaced, or sealed under a key not configured. */
export class SealedUnopenable extends Error {
  constructor(readonly ring: RingName) {
    super(`opens under none of the ${ring} keys (${ring}, ${ring}_PREVIOUS)`);
    this.name = 'SealedUnopenable';
  }
}

/** Opens under the current key, else an earlier one; `index` 0 is the current key. */
export function openWithRing(
  ring: KeyRing,
  aad: string,
  sealed: Uint8Array,
): { plain: Buffer; index: number } {
  const keys = [ring.current, ...ring.previous];
  for (let index = 0; index < keys.length; index++) {
    try {
      return { plain: open(keys[index]!, aad, sealed), index };
    } catch {
      // the next key
    }
  }
  throw new SealedUnopenable(ring.name);
}

/**
 * The key settings' forms, for the start-up checks: each key and each entry of its history must decode
 * to a key. Never prints a value.
 */
export function sealingKeyIssues(settings: KeySettings): string[] {
  const issues: string[] = [];
  const form = '32 bytes as 64 hex characters or base64 (openssl rand -hex 32)';
  for (const name of ['SEALING_KEY', 'BALLOT_KEY', 'PROOF_INPUT_KEY'] as const) {
    const value = settings[name];
    if (value) {
      try {
        decodeKey(name, value);
      } catch {
        issues.push(`${name} is malformed; set it to ${form}`);
      }
    }
  }
  for (const name of ['SEALING_KEY', 'BALLOT_KEY'] as const) {
    previousKeyTexts(settings[`${name}_PREVIOUS`]).forEach((value, i) => {
      try {
        decodeKey(`${name}_PREVIOUS`, value);
      } catch {
        issues.push(
          `${name}_PREVIOUS entry ${i + 1} is malformed; list earlier keys as ${form}, joined by commas`,
        );
      }
    });
  }
  return issues;
}
