// Opaque keyset cursors, base64url JSON, for lists ordered newest first by id (ids are time-ordered) and
// for searches ordered by full-text relevance: the last row's sort key, and the list or search it
// belongs to. Keyset paging, so rows added while a client pages never shift or repeat a page; a cursor
// of one list or search is refused by another.
import type { Knex } from 'knex';
import { z } from 'zod';
import { badRequest } from './errors';

export const MAX_LIST_LIMIT = 100;
export const DEFAULT_LIST_LIMIT = 20;

/** The query of a list route: `limit` (1 to 100, 20 by default) and the `cursor` a page returned. */
export const listQueryShape = {
  limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_LIST_LIMIT),
  cursor: z.string().min(1).max(512).optional(),
};

// Ids are a lowercase prefix and a ULID, or a number: nothing else reaches a query.
const cursorSchema = z.strictObject({ l: z.string().max(32), id: z.string().regex(/^[0-9a-z_]{1,64}$/) });

/** A search ordered by relevance carries the rank (float4, printed exactly) beside the id. */
const searchCursorSchema = z.strictObject({
  id: z.string().min(1).max(64),
  rank: z
    .string()
    .regex(/^-?\d+(\.\d+)?(e-?\d+)?$/i)
    .optional(),
  /** The search the cursor belongs to: a cursor replayed against another query is refused. */
  q: z.string().max(16),
});
export type SearchCursor = z.infer<typeof searchCursorSchema>;

export interface ListPage<T> {
  items: T[];
  nextCursor: string | null;
}

const encode = (cursor: object) => Buffer.from(JSON.stringify(cursor)).toString('base64url');

/** What a cursor's text decodes to: its JSON, or undefined when it is not base64url JSON. */
function decode(text: string): unknown {
  try {
    return JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

export const invalidCursor = (of: 'list' | 'search' = 'list') =>
  badRequest('invalid_cursor', `The cursor is not one this ${of} returned; start again without it.`, [
    { path: 'query.cursor', message: 'unknown cursor' },
  ]);

/** The id a cursor of `list` ends after; undefined without a cursor; 400 invalid_cursor for any other. */
export function decodeListCursor(text: string | undefined, list: string): string | undefined {
  if (text === undefined) return undefined;
  const result = cursorSchema.safeParse(decode(text));
  if (!result.success || result.data.l !== list) throw invalidCursor();
  return result.data.id;
}

/** The cursor of the search `searchKey`; undefined without one; 400 invalid_cursor for any other. */
export function decodeSearchCursor(text: string | undefined, searchKey: string): SearchCursor | undefined {
  if (text === undefined) return undefined;
  const result = searchCursorSchema.safeParse(decode(text));
  if (!result.success || result.data.q !== searchKey) throw invalidCursor('search');
  return result.data;
}

/** A page of `limit` rows from `limit + 1` fetched, with the cursor after its last row when there is more. */
function pageWith<R, T>(
  rows: R[],
  limit: number,
  view: (row: R) => T,
  cursorAfter: (last: R) => object,
): ListPage<T> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  return { items: kept.map(view), nextCursor: more && last ? encode(cursorAfter(last)) : null };
}

/** A page of `limit` rows from `limit + 1` fetched, with the cursor of the next page when there is one. */
export function listPage<R, T>(
  rows: R[],
  limit: number,
  list: string,
  view: (row: R) => T,
  idOf: (row: R) => string = (r) => (r as { id: string }).id,
): ListPage<T> {
  return pageWith(rows, limit, view, (last) => ({ l: list, id: idOf(last) }));
}

/** A page of a search (orderBySearch), its cursor carrying the last row's rank when it was ranked. */
export function searchPage<R extends { id: string; rank?: string | null }, T>(
  rows: R[],
  limit: number,
  searchKey: string,
  view: (row: R) => T,
): ListPage<T> {
  return pageWith(rows, limit, view, (last) => ({
    id: last.id,
    q: searchKey,
    ...(last.rank != null ? { rank: last.rank } : {}),
  }));
}

/**
 * Orders a search and applies its cursor: by full-text relevance then id when there is text (websearch
 * syntax over the table's `search_vector`), else newest first; keyset, so pages never shift.
 */
export function orderBySearch(
  db: Knex,
  query: Knex.QueryBuilder,
  q: string | null,
  cursor: SearchCursor | undefined,
): void {
  if (q) {
    const tsq = db.raw("websearch_to_tsquery('english', ?)", [q]);
    query
      .select('*', db.raw('ts_rank(search_vector, ?)::text as rank', [tsq]))
      .whereRaw('search_vector @@ ?', [tsq]);
    if (cursor?.rank !== undefined)
      query.whereRaw('(ts_rank(search_vector, ?), id) < (?::real, ?)', [tsq, cursor.rank, cursor.id]);
    query.orderByRaw('ts_rank(search_vector, ?) desc, id desc', [tsq]);
  } else {
    query.select('*');
    if (cursor) query.where('id', '<', cursor.id);
    query.orderBy('id', 'desc');
  }
}
