// Identifiers: a type prefix and a time-ordered random part (ULID), e.g. job_01JD3…
import { monotonicFactory } from 'ulid';

const ulid = monotonicFactory();

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
] as const;
export type IdPrefix = (typeof idPrefixes)[number];

export function newId<P extends IdPrefix>(prefix: P): `${P}_${string}` {
  return `${prefix}_${ulid().toLowerCase()}`;
}

/** A pattern for validating ids of one type at the edge. */
export function idPattern(prefix: IdPrefix): RegExp {
  return new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`);
}
