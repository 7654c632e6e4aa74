// The record of administrative actions on licenses and keys: who (the operator, or an organization's
// license or key), what, on which target, when. Written in the transaction of the action itself, so an
// action is never done without its record, nor recorded without being done. Never a secret in it.
import type { Knex } from 'knex';
import type { Db } from '../platform/db/knex';
import { decodeListCursor, invalidCursor, listPage } from '../platform/paging';
import type { ListPage } from '../platform/paging';

export interface AdminActionRow {
  id: string;
  actor: string;
  action: string;
  target: string;
  license_id: string | null;
  detail: Record<string, unknown>;
  at: Date;
}

export interface AdminAction {
  id: string;
  actor: string;
  action: string;
  target: string;
  licenseId: string | null;
  detail: Record<string, unknown>;
  at: string;
}

export async function recordAction(
  trx: Knex | Knex.Transaction,
  action: {
    actor: string;
    action: string;
    target: string;
    licenseId?: string | null;
    detail?: Record<string, unknown>;
  },
): Promise<void> {
  await trx('admin_actions').insert({
    actor: action.actor,
    action: action.action,
    target: action.target,
    license_id: action.licenseId ?? null,
    detail: JSON.stringify(action.detail ?? {}),
  });
}

const view = (r: AdminActionRow): AdminAction => ({
  id: String(r.id),
  actor: r.actor,
  action: r.action,
  target: r.target,
  licenseId: r.license_id,
  detail: r.detail,
  at: new Date(r.at).toISOString(),
});

/** The actions, newest first; of one license when `licenseId` is given. */
export async function listActions(
  db: Db,
  opts: { licenseId?: string | undefined; limit: number; cursor?: string | undefined },
): Promise<ListPage<AdminAction>> {
  const after = decodeListCursor(opts.cursor, 'audit');
  // The audit's ids are numbers: a cursor naming anything else was not made here.
  if (after !== undefined && !/^\d{1,18}$/.test(after)) throw invalidCursor();
  const q = db('admin_actions')
    .select('*')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1);
  if (opts.licenseId) q.where('license_id', opts.licenseId);
  if (after) q.where('id', '<', after);
  const rows = (await q) as AdminActionRow[];
  return listPage(rows, opts.limit, 'audit', view, (r) => String(r.id));
}
