// The issuers an organization accepts and the revocation roots they publish. An issuer enters by its
// own signed publication (its key, the schemas it signs, its revoked nonces), an admin act of the
// organization, logged (kind credential_issuer) with the validity the organization gives it; each newer
// publication is a revocation root, logged (kind revocation_root) with the issuer's time and the log's.
// A query proof's issuer key and root are checked against these rows, and a package carries them.
import type { Knex } from 'knex';
import type { Db } from '../platform/db/knex';
import type { TrustIssuer } from '../platform/trust';
import { conflict, notFound, unprocessable } from '../platform/errors';
import { entryFor, leafKey } from '../platform/translog/entry';
import { appendEntries } from '../platform/translog/service-log';
import { issuerKeyId } from './format';
import type { CredentialSchema } from './format';
import { checkPublication, revocationRoot } from './issuer';
import type { IssuerPublication } from './issuer';
import { MAX_PUBLISHED_REVOKED } from './query';

type Conn = Db | Knex.Transaction;

export const ISSUER_STATEMENT_TYPE = 'proof-exchange/credential-issuer/v1';
export const REVOCATION_ROOT_STATEMENT_TYPE = 'proof-exchange/revocation-root/v1';

export const issuerCodes = [
  'invalid_issuer_publication',
  'issuer_validity_invalid',
  'revocation_root_stale',
  'revocation_withdrawn',
  'too_many_revocations',
] as const;

/** What the log holds about an issuer an organization accepts: one statement per change. */
export interface IssuerStatement {
  type: typeof ISSUER_STATEMENT_TYPE;
  owner: string;
  keyId: string;
  name: string;
  publicKey: [string, string];
  /** The schema ids the issuer may sign for this organization. */
  schemas: string[];
  validFrom: string;
  validUntil: string | null;
  revokedFrom: string | null;
  version: number;
  at: string;
}

/** What the log holds about a revocation root: the issuer's root, its time, and the number revoked. */
export interface RevocationRootStatement {
  type: typeof REVOCATION_ROOT_STATEMENT_TYPE;
  keyId: string;
  seq: number;
  root: string;
  revoked: number;
  publishedAt: string;
  /** The issuer's signature over its publication (docs/credentials.md). */
  signature: IssuerPublication['signature'];
}

/**
 * An issuer as a verifier pins it: its key id alone (a verifier's own list), or as a trust root lists
 * it, with the organization that accepts it and its period, so a revocation the bundle predates still
 * counts against a proof made after it.
 */
export interface IssuerPin {
  keyId: string;
  /** The organization (`operator` or a license id) that accepts it; unset: any. */
  acceptedBy?: string | undefined;
  validFrom?: string | undefined;
  validUntil?: string | null | undefined;
  revokedFrom?: string | null | undefined;
  /** The issuer's revocation roots as a trust root lists them: a proof's root must be the newest by its time. */
  roots?: ReadonlyArray<{ seq: number; root: string; publishedAt: string }> | undefined;
}

/** How old the trust root's issuers may be when another web process changed them (this one forgets at once). */
export const TRUST_ROOT_ISSUERS_TTL_MS = 5_000;
const listedIssuers = new WeakMap<Db, { at: number; issuers: Promise<TrustIssuer[]> }>();

/**
 * Every issuer an organization on this service accepts, as the trust root lists them: read at most once
 * per TRUST_ROOT_ISSUERS_TTL_MS per process (the public route reads every issuer and root), and afresh
 * after this process changed one.
 */
export function trustRootIssuers(db: Db): Promise<TrustIssuer[]> {
  const hit = listedIssuers.get(db);
  if (hit && Date.now() - hit.at < TRUST_ROOT_ISSUERS_TTL_MS) return hit.issuers;
  const issuers = readTrustRootIssuers(db);
  listedIssuers.set(db, { at: Date.now(), issuers });
  issuers.catch(() => listedIssuers.delete(db));
  return issuers;
}

/** After a change to the issuers or their roots: the next trust root reads them again. */
const changedIssuers = <T>(db: Db, done: Promise<T>): Promise<T> =>
  done.finally(() => listedIssuers.delete(db));

async function readTrustRootIssuers(db: Conn): Promise<TrustIssuer[]> {
  const rows = (await db('credential_issuers').orderBy(['registered_at', 'key_id'])) as IssuerRow[];
  const roots = new Map<string, Array<{ seq: number; root: string; publishedAt: string }>>();
  for (const r of (await db('issuer_revocation_roots')
    .orderBy(['key_id', 'seq'])
    .select('key_id', 'seq', 'root', 'published_at')) as RootRow[]) {
    const list = roots.get(r.key_id) ?? [];
    list.push({ seq: r.seq, root: r.root, publishedAt: r.published_at.toISOString() });
    roots.set(r.key_id, list);
  }
  return rows.map((r) => ({
    keyId: r.key_id,
    name: r.name,
    publicKey: r.public_key,
    acceptedBy: r.owner,
    schemas: r.statement.schemas,
    validFrom: r.valid_from.toISOString(),
    ...(r.valid_until ? { validUntil: r.valid_until.toISOString() } : {}),
    ...(r.revoked_from ? { revokedFrom: r.revoked_from.toISOString() } : {}),
    version: r.version,
    leafIndex: Number(r.leaf_index),
    revocationRoots: roots.get(r.key_id) ?? [],
  }));
}

export interface IssuerRecord {
  keyId: string;
  name: string;
  publicKey: [string, string];
  schemas: CredentialSchema[];
  validFrom: string;
  validUntil: string | null;
  revokedFrom: string | null;
  version: number;
  statement: IssuerStatement;
  leafIndex: number;
}

export interface RevocationRootRecord {
  keyId: string;
  seq: number;
  root: string;
  publishedAt: string;
  loggedAt: string;
  statement: RevocationRootStatement;
  leafIndex: number;
}

interface IssuerRow {
  owner: string;
  key_id: string;
  name: string;
  public_key: [string, string];
  schemas: CredentialSchema[];
  valid_from: Date;
  valid_until: Date | null;
  revoked_from: Date | null;
  version: number;
  statement: IssuerStatement;
  leaf_index: string | number;
}

interface RootRow {
  key_id: string;
  seq: number;
  root: string;
  nonces: string[];
  published_at: Date;
  logged_at: Date;
  statement: RevocationRootStatement;
  leaf_index: string | number;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

const issuerRecord = (r: IssuerRow): IssuerRecord => ({
  keyId: r.key_id,
  name: r.name,
  publicKey: r.public_key,
  schemas: r.schemas,
  validFrom: r.valid_from.toISOString(),
  validUntil: iso(r.valid_until),
  revokedFrom: iso(r.revoked_from),
  version: r.version,
  statement: r.statement,
  leafIndex: Number(r.leaf_index),
});

const rootRecord = (r: RootRow): RevocationRootRecord => ({
  keyId: r.key_id,
  seq: r.seq,
  root: r.root,
  publishedAt: r.published_at.toISOString(),
  loggedAt: r.logged_at.toISOString(),
  statement: r.statement,
  leafIndex: Number(r.leaf_index),
});

async function checkedPublication(input: unknown) {
  const { problems, publication, schemas } = await checkPublication(input);
  if (problems.length > 0 || !publication)
    throw unprocessable(
      'invalid_issuer_publication',
      `The issuer's publication does not hold: ${problems.join('; ')}.`,
      {
        problems,
      },
    );
  if (publication.revocation.nonces.length > MAX_PUBLISHED_REVOKED)
    throw unprocessable(
      'too_many_revocations',
      `A publication lists at most ${MAX_PUBLISHED_REVOKED} revoked nonces: a prover builds the tree from them.`,
    );
  // The root must be the tree of the nonces it lists: a prover's path is built from them.
  const root = await revocationRoot({
    type: 'proof-exchange/issuer-revocations/v1',
    keyId: publication.keyId,
    revoked: publication.revocation.nonces.map((nonce) => ({ nonce, at: publication.revocation.at })),
  });
  if (root !== publication.revocation.root)
    throw unprocessable(
      'invalid_issuer_publication',
      'The revocation root is not the tree of the nonces listed.',
    );
  return { publication, schemas };
}

/** Logs a new revocation root of `keyId` when the publication is newer than the last; the latest root. */
async function recordRoot(
  trx: Knex.Transaction,
  publication: IssuerPublication,
): Promise<RevocationRootRecord> {
  const last = (await trx('issuer_revocation_roots')
    .where('key_id', publication.keyId)
    .orderBy('seq', 'desc')
    .forUpdate()
    .first()) as RootRow | undefined;
  const at = new Date(publication.revocation.at);
  if (last) {
    if (at.getTime() === last.published_at.getTime() && last.root === publication.revocation.root)
      return rootRecord(last);
    if (at <= last.published_at)
      throw conflict(
        'revocation_root_stale',
        `The issuer published a newer root (${last.published_at.toISOString()}); this publication is older.`,
      );
    const kept = new Set(publication.revocation.nonces);
    if (last.nonces.some((n) => !kept.has(n)))
      throw conflict(
        'revocation_withdrawn',
        'A revocation is permanent: this publication drops a nonce revoked before.',
      );
  }
  const seq = last ? last.seq + 1 : 1;
  const statement: RevocationRootStatement = {
    type: REVOCATION_ROOT_STATEMENT_TYPE,
    keyId: publication.keyId,
    seq,
    root: publication.revocation.root,
    revoked: publication.revocation.revoked,
    publishedAt: at.toISOString(),
    signature: publication.signature,
  };
  const id = `${publication.keyId}:${seq}`;
  const logged = await appendEntries(trx, [
    { key: leafKey('revocation_root', id), entry: entryFor('revocation_root', id, statement) },
  ]);
  const loggedAt = new Date();
  const [row] = (await trx('issuer_revocation_roots')
    .insert({
      key_id: publication.keyId,
      seq,
      root: statement.root,
      nonces: JSON.stringify(publication.revocation.nonces),
      published_at: at,
      logged_at: loggedAt,
      statement: JSON.stringify(statement),
      leaf_index: logged.start,
    })
    .returning('*')) as RootRow[];
  return rootRecord(row!);
}

async function logIssuer(
  trx: Knex.Transaction,
  row: Omit<IssuerStatement, 'type' | 'at'>,
): Promise<IssuerRecord> {
  const statement: IssuerStatement = { type: ISSUER_STATEMENT_TYPE, ...row, at: new Date().toISOString() };
  const id = `${row.owner}:${row.keyId}:${row.version}`;
  const logged = await appendEntries(trx, [
    { key: leafKey('credential_issuer', id), entry: entryFor('credential_issuer', id, statement) },
  ]);
  return {
    keyId: row.keyId,
    name: row.name,
    publicKey: row.publicKey,
    schemas: [],
    validFrom: row.validFrom,
    validUntil: row.validUntil,
    revokedFrom: row.revokedFrom,
    version: row.version,
    statement,
    leafIndex: logged.start,
  };
}

/**
 * Accepts an issuer for `owner` (or updates its schemas and validity): its publication must hold (its
 * key id, its schemas' ids, its root, its signature); the acceptance is logged, and so is the
 * publication's revocation root. Throws 422 naming what does not hold.
 */
export async function registerIssuer(
  db: Db,
  input: {
    owner: string;
    publication: unknown;
    validFrom?: string | undefined;
    validUntil?: string | undefined;
  },
): Promise<{ issuer: IssuerRecord; revocation: RevocationRootRecord }> {
  const { publication, schemas } = await checkedPublication(input.publication);
  // Whole seconds, as a proof's time is: a proof made the second the issuer is accepted counts.
  const validFrom = new Date(
    Math.floor((input.validFrom ? Date.parse(input.validFrom) : Date.now()) / 1000) * 1000,
  );
  const validUntil = input.validUntil ? new Date(input.validUntil) : null;
  if (validUntil && validUntil <= validFrom)
    throw unprocessable('issuer_validity_invalid', 'validUntil is not after validFrom.');
  return changedIssuers(
    db,
    db.transaction(async (trx) => {
      const existing = (await trx('credential_issuers')
        .where({ owner: input.owner, key_id: publication.keyId })
        .forUpdate()
        .first()) as IssuerRow | undefined;
      const version = existing ? existing.version + 1 : 1;
      const logged = await logIssuer(trx, {
        owner: input.owner,
        keyId: publication.keyId,
        name: publication.name,
        publicKey: publication.publicKey,
        schemas: schemas.map((_, i) => publication.schemas[i]!.id),
        validFrom: validFrom.toISOString(),
        validUntil: iso(validUntil),
        revokedFrom: iso(existing?.revoked_from ?? null),
        version,
      });
      const row = {
        owner: input.owner,
        key_id: publication.keyId,
        name: publication.name,
        public_key: JSON.stringify(publication.publicKey),
        schemas: JSON.stringify(schemas),
        valid_from: validFrom,
        valid_until: validUntil,
        version,
        statement: JSON.stringify(logged.statement),
        leaf_index: logged.leafIndex,
      };
      if (existing)
        await trx('credential_issuers').where({ owner: input.owner, key_id: publication.keyId }).update(row);
      else await trx('credential_issuers').insert(row);
      const revocation = await recordRoot(trx, publication);
      return { issuer: { ...logged, schemas }, revocation };
    }),
  );
}

/** Logs a newer publication of an issuer the owner accepts: its revocation root. */
export async function publishRevocations(
  db: Db,
  input: { owner: string; keyId: string; publication: unknown },
): Promise<RevocationRootRecord> {
  await issuerOrThrow(db, input.owner, input.keyId);
  const { publication } = await checkedPublication(input.publication);
  if (publication.keyId !== input.keyId)
    throw unprocessable('invalid_issuer_publication', 'The publication is another issuer key’s.');
  return changedIssuers(
    db,
    db.transaction((trx) => recordRoot(trx, publication)),
  );
}

/** Stops accepting an issuer key from `from` on (a compromised key: its proofs at or after fail). */
export async function revokeIssuer(
  db: Db,
  input: { owner: string; keyId: string; from: string },
): Promise<IssuerRecord> {
  return changedIssuers(
    db,
    db.transaction(async (trx) => {
      const row = (await trx('credential_issuers')
        .where({ owner: input.owner, key_id: input.keyId })
        .forUpdate()
        .first()) as IssuerRow | undefined;
      if (!row) throw notFound(`Issuer ${input.keyId}`);
      const from = new Date(input.from);
      const version = row.version + 1;
      const logged = await logIssuer(trx, {
        owner: input.owner,
        keyId: row.key_id,
        name: row.name,
        publicKey: row.public_key,
        schemas: row.statement.schemas,
        validFrom: row.valid_from.toISOString(),
        validUntil: iso(row.valid_until),
        revokedFrom: from.toISOString(),
        version,
      });
      await trx('credential_issuers')
        .where({ owner: input.owner, key_id: input.keyId })
        .update({
          revoked_from: from,
          version,
          statement: JSON.stringify(logged.statement),
          leaf_index: logged.leafIndex,
        });
      return { ...logged, schemas: row.schemas };
    }),
  );
}

export async function issuerOrThrow(db: Conn, owner: string, keyId: string): Promise<IssuerRecord> {
  const row = (await db('credential_issuers').where({ owner, key_id: keyId }).first()) as
    IssuerRow | undefined;
  if (!row) throw notFound(`Issuer ${keyId}`);
  return issuerRecord(row);
}

/** The issuer `owner` accepts with this public key, if any. */
export async function acceptedIssuer(
  db: Conn,
  owner: string,
  publicKey: readonly [string, string],
): Promise<IssuerRecord | undefined> {
  const row = (await db('credential_issuers')
    .where({ owner, key_id: issuerKeyId(publicKey) })
    .first()) as IssuerRow | undefined;
  return row ? issuerRecord(row) : undefined;
}

export async function listIssuers(db: Conn, owner: string): Promise<IssuerRecord[]> {
  const rows = (await db('credential_issuers').where({ owner }).orderBy('registered_at')) as IssuerRow[];
  return rows.map(issuerRecord);
}

/** The latest logged root of this issuer key with this value (a republished root is its newest row). */
export async function loggedRoot(
  db: Conn,
  keyId: string,
  root: string,
): Promise<RevocationRootRecord | undefined> {
  const row = (await db('issuer_revocation_roots')
    .where({ key_id: keyId, root })
    .orderBy('seq', 'desc')
    .first()) as RootRow | undefined;
  return row ? rootRecord(row) : undefined;
}

/** Whether the issuer had published another root than `root`, after `seq`, by `at` (s since 1970). */
export async function newerRootBefore(
  db: Conn,
  keyId: string,
  seq: number,
  root: string,
  at: number,
): Promise<boolean> {
  const row = (await db('issuer_revocation_roots')
    .where('key_id', keyId)
    .where('seq', '>', seq)
    .whereNot('root', root)
    .where('published_at', '<=', new Date(at * 1000))
    .first('seq')) as { seq: number } | undefined;
  return row !== undefined;
}

/** The issuer key's latest root with its nonces: what a prover builds its non-membership path from. */
export async function latestRevocations(
  db: Conn,
  keyId: string,
): Promise<(RevocationRootRecord & { nonces: string[] }) | undefined> {
  const row = (await db('issuer_revocation_roots').where('key_id', keyId).orderBy('seq', 'desc').first()) as
    RootRow | undefined;
  return row ? { ...rootRecord(row), nonces: row.nonces } : undefined;
}
