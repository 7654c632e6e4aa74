// Identifiers: a type prefix, then a ULID: 48 bits of time and 80 bits of fresh randomness each, e.g.
// job_01JD3…. An id names a resource and is never a key: no other id, made before or at the same
// millisecond, predicts its random part, and nothing that reveals a secret or acts trusts an id alone.
import { ulid } from 'ulid';

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
] as const;
export type IdPrefix = (typeof idPrefixes)[number];

export function newId<P extends IdPrefix>(prefix: P): `${P}_${string}` {
  return `${prefix}_${ulid().toLowerCase()}`;
}

/** A pattern for validating ids of one type at the edge. */
export function idPattern(prefix: IdPrefix): RegExp {
  return new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`);
}
