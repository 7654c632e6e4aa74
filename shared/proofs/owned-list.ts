// An owner's own rows of one table, newest first by id, a page at a time with an opaque cursor: what the
// lists of each line's subjects (workflows, rooms, proposals, treasury requests, auctions) share. Each
// names its table, the columns it may read and its view; nothing else of a row leaves the database, and
// never another owner's row.
import type { Db } from '../platform/db/knex';
import { decodeListCursor, listPage } from '../platform/paging';
import type { ListPage } from '../platform/paging';

export interface ListOpts {
  limit: number;
  cursor?: string | undefined;
}

export interface OwnedList<R extends { id: string }, T> {
  table: string;
  /** The list's name in its cursors: a cursor of one list is refused by another. */
  list: string;
  /** The columns read, `id` first. */
  columns: readonly (keyof R & string)[];
  view: (row: R) => T;
}

/** The rows of `spec.table` that `owner` (a license id, or 'operator') made, newest first. */
export async function listOwned<R extends { id: string }, T>(
  db: Db,
  spec: OwnedList<R, T>,
  owner: string,
  opts: ListOpts,
): Promise<ListPage<T>> {
  const after = decodeListCursor(opts.cursor, spec.list);
  const q = db(spec.table)
    .where({ owner })
    .select(...spec.columns)
    .orderBy('id', 'desc')
    .limit(opts.limit + 1);
  if (after) q.where('id', '<', after);
  return listPage((await q) as R[], opts.limit, spec.list, spec.view);
}

/** A line's list as its route calls it: (db, owner, opts). */
export const ownedList =
  <R extends { id: string }, T>(spec: OwnedList<R, T>) =>
  (db: Db, owner: string, opts: ListOpts): Promise<ListPage<T>> =>
    listOwned(db, spec, owner, opts);
