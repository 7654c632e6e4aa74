// Named operator keys (as Stripe's restricted keys, for the people who run the service): each has a name
// and a role, is shown once as `opk_…` and stored only as its sha256, and is named in every audited
// action it takes. The bootstrap OPERATOR_TOKEN is an admin with no name of its own (`operator` in the
// audit); it issues the first keys. A revoked or rotated-away key is refused from its next request on:
// every request reads the key's row, nothing is cached.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { sha256Hex } from '../platform/crypto';
import type { Db } from '../platform/db/knex';
import { AppError, conflict, notFound } from '../platform/errors';
import { idPattern, newId } from '../platform/ids';
import { decodeListCursor, listPage } from '../platform/paging';
import type { ListPage } from '../platform/paging';
import { recordAction } from './audit';

/**
 * What an operator may do, each role everything the one before it may:
 * * `read-only`: read every operator route and Bull Board, change nothing;
 * * `support`: also contain abuse and undo it — suspend and resume a license, revoke an agent's or an
 *   organization's key — and retry or promote jobs on Bull Board;
 * * `admin`: everything — issue, rotate and revoke licenses, rotate agent keys, act on tenants' lines,
 *   clean, remove and pause on Bull Board, and issue, rotate and revoke operator keys.
 */
export const operatorRoles = ['read-only', 'support', 'admin'] as const;
export type OperatorRole = (typeof operatorRoles)[number];

export const roleAllows = (role: OperatorRole, needed: OperatorRole): boolean =>
  operatorRoles.indexOf(role) >= operatorRoles.indexOf(needed);

export const OPERATOR_KEY_PREFIX = 'opk_';
const KEY_PATTERN = /^opk_[A-Za-z0-9_-]{43}$/;
/** Characters of a key kept to tell it apart in a list: the prefix and 8 of its 43 random ones. */
const SHOWN = OPERATOR_KEY_PREFIX.length + 8;
/** A person's name or handle as the audit will show it. */
export const OPERATOR_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** An operator as the API knows it: the bootstrap token (`operatorId` null) or a named key. */
export interface OperatorIdentity {
  operatorId: string | null;
  name: string;
  role: OperatorRole;
}

export const BOOTSTRAP_OPERATOR: OperatorIdentity = { operatorId: null, name: 'operator', role: 'admin' };

/** Who acted, as the audit records it: `operator` for the bootstrap token, `operator:<name>` for a key. */
export const operatorActor = (o: OperatorIdentity): string =>
  o.operatorId ? `operator:${o.name}` : 'operator';

interface OperatorKeyRow {
  id: string;
  name: string;
  role: OperatorRole;
  key_hash: string;
  prefix: string;
  created_by: string;
  created_at: Date;
  rotated_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

export interface OperatorKeyView {
  operatorId: string;
  name: string;
  role: OperatorRole;
  /** The key's first characters, never the key. */
  prefix: string;
  createdBy: string;
  createdAt: string;
  rotatedAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

const view = (r: OperatorKeyRow): OperatorKeyView => ({
  operatorId: r.id,
  name: r.name,
  role: r.role,
  prefix: `${r.prefix}…`,
  createdBy: r.created_by,
  createdAt: new Date(r.created_at).toISOString(),
  rotatedAt: iso(r.rotated_at),
  lastUsedAt: iso(r.last_used_at),
  revokedAt: iso(r.revoked_at),
});

const newKey = () => {
  const key = `${OPERATOR_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { key, hash: sha256Hex(key), prefix: key.slice(0, SHOWN) };
};

/** A new operator key; the key is returned here and never again. A name is never used twice. */
export async function issueOperatorKey(
  db: Db,
  by: OperatorIdentity,
  input: { name: string; role: OperatorRole },
): Promise<{ operator: OperatorKeyView; operatorKey: string }> {
  const { key, hash, prefix } = newKey();
  return db.transaction(async (trx) => {
    const [row] = (await trx('operator_keys')
      .insert({
        id: newId('opr'),
        name: input.name,
        role: input.role,
        key_hash: hash,
        prefix,
        created_by: operatorActor(by),
      })
      .onConflict('name')
      .ignore()
      .returning('*')) as OperatorKeyRow[];
    if (!row) {
      throw conflict(
        'operator_name_taken',
        `An operator key named ${input.name} exists or existed: names are never reused, so the audit's names stay one person's. Rotate that key, or pick another name.`,
      );
    }
    await recordAction(trx, {
      actor: operatorActor(by),
      action: 'operator_key.issue',
      target: row.id,
      detail: { name: row.name, role: row.role },
    });
    return { operator: view(row), operatorKey: key };
  });
}

/** Every operator key, newest first, revoked ones included (with when); never a key. */
export async function listOperatorKeys(
  db: Db,
  opts: { limit: number; cursor?: string | undefined },
): Promise<ListPage<OperatorKeyView>> {
  const after = decodeListCursor(opts.cursor, 'operators');
  const q = db('operator_keys')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1);
  if (after) q.where('id', '<', after);
  return listPage((await q) as OperatorKeyRow[], opts.limit, 'operators', view);
}

async function lockedKey(trx: Knex.Transaction, operatorId: string): Promise<OperatorKeyRow> {
  if (!idPattern('opr').test(operatorId)) throw notFound(`Operator ${operatorId}`);
  const row = (await trx('operator_keys').where({ id: operatorId }).forUpdate().first()) as
    OperatorKeyRow | undefined;
  if (!row) throw notFound(`Operator ${operatorId}`);
  return row;
}

/** Revokes an operator key for good; revoking a revoked key answers as the first time did. */
export async function revokeOperatorKey(
  db: Db,
  by: OperatorIdentity,
  operatorId: string,
): Promise<OperatorKeyView> {
  return db.transaction(async (trx) => {
    let row = await lockedKey(trx, operatorId);
    if (row.revoked_at) return view(row);
    [row] = (await trx('operator_keys')
      .where({ id: operatorId })
      .update({ revoked_at: trx.fn.now() })
      .returning('*')) as [OperatorKeyRow];
    await recordAction(trx, {
      actor: operatorActor(by),
      action: 'operator_key.revoke',
      target: operatorId,
      detail: { name: row.name, role: row.role },
    });
    return view(row);
  });
}

/** A new key for the same operator (name, role, history); the old key is refused from now on. */
export async function rotateOperatorKey(
  db: Db,
  by: OperatorIdentity,
  operatorId: string,
): Promise<{ operator: OperatorKeyView; operatorKey: string }> {
  const { key, hash, prefix } = newKey();
  return db.transaction(async (trx) => {
    const row = await lockedKey(trx, operatorId);
    if (row.revoked_at) {
      throw conflict('operator_key_revoked', `Operator key ${operatorId} is revoked; issue a new one.`);
    }
    const [next] = (await trx('operator_keys')
      .where({ id: operatorId })
      .update({ key_hash: hash, prefix, rotated_at: trx.fn.now() })
      .returning('*')) as [OperatorKeyRow];
    await recordAction(trx, {
      actor: operatorActor(by),
      action: 'operator_key.rotate',
      target: operatorId,
      detail: { name: row.name, role: row.role },
    });
    return { operator: view(next), operatorKey: key };
  });
}

/**
 * The operator a key names; null for anything that is not one of our keys. A revoked key is refused
 * with its own 401.
 */
export async function resolveOperatorKey(db: Db, token: string): Promise<OperatorIdentity | null> {
  if (!KEY_PATTERN.test(token)) return null;
  const row = (await db('operator_keys')
    .where({ key_hash: sha256Hex(token) })
    .first()) as OperatorKeyRow | undefined;
  if (!row) return null;
  if (row.revoked_at) throw new AppError(401, 'key_revoked', 'This operator key has been revoked.');
  // At most one write a minute per key, and none when the row read says it is recent.
  const used = row.last_used_at;
  if (!used || Date.now() - new Date(used).getTime() >= 60_000) {
    void db('operator_keys')
      .where('id', row.id)
      .andWhere((q) =>
        q.whereNull('last_used_at').orWhere('last_used_at', '<', db.raw("now() - interval '1 minute'")),
      )
      .update({ last_used_at: db.fn.now() })
      .catch(() => undefined);
  }
  return { operatorId: row.id, name: row.name, role: row.role };
}
