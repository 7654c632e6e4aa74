// Identifiers: a type prefix, then a ULID: 48 bits of time and 80 bits of fresh randomness each, e.g.
// job_01JD3…. An id names a resource and is never a key: no other id, made before or at the same
// millisecond, predicts its random part, and nothing that reveals a secret or acts trusts an id alone.
import { randomFillSync } from 'node:crypto';
import { ulid } from 'ulid';

/**
 * The CSPRNG's bytes, drawn 4 KiB at a time: `ulid`'s own source asks the CSPRNG for one byte per
 * character (16 calls an id) and looks the source up again on every call. Each byte is used once.
 */
const pool = Buffer.alloc(4096);
let at = pool.length;
const prng = (): number => {
  if (at === pool.length) {
    randomFillSync(pool);
    at = 0;
  }
  return pool[at++]! / 256;
};

export const idPrefixes = [
  'job',
  'pay',
  'rcpt',
  'agt',
  'lst',
  'agr',
  'ref',
  'wf',
  'prf',
  'chk',
  'lic',
  'lgx',
  'gate',
  'room',
  'prop',
  'bal',
  'treq',
  'auc',
  'bid',
  'evt',
  'key',
  'aps',
  'opr',
] as const;
export type IdPrefix = (typeof idPrefixes)[number];

export function newId<P extends IdPrefix>(prefix: P): `${P}_${string}` {
  return `${prefix}_${ulid(undefined, prng).toLowerCase()}`;
}

/** A pattern for validating ids of one type at the edge. */
export function idPattern(prefix: IdPrefix): RegExp {
  return new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`);
}
