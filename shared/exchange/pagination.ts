// Opaque keyset cursors for the exchange's searches: the last row's sort key, base64url JSON.
// Keyset (not offset) paging, so rows inserted while a client pages never shift or repeat a page.
import type { Knex } from 'knex';
import { z } from 'zod';
import { badRequest } from '../platform/errors';

export const MAX_PAGE = 100;
export const DEFAULT_PAGE = 20;

/** A search ordered by relevance carries the rank (float4, printed exactly) beside the id. */
const cursorSchema = z.strictObject({
  id: z.string().min(1).max(64),
  rank: z
    .string()
    .regex(/^-?\d+(\.\d+)?(e-?\d+)?$/i)
    .optional(),
  /** The search the cursor belongs to: a cursor replayed against another query is refused. */
  q: z.string().max(16),
});
export type Cursor = z.infer<typeof cursorSchema>;

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

export function decodeCursor(text: string | undefined, queryKey: string): Cursor | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const result = cursorSchema.safeParse(parsed);
  if (!result.success || result.data.q !== queryKey) {
    throw badRequest(
      'invalid_cursor',
      'The cursor is not one this search returned; start again without it.',
      [{ path: 'query.cursor', message: 'unknown cursor' }],
    );
  }
  return result.data;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** Trims the one extra row fetched to learn whether another page exists. */
export function pageOf<R extends { id: string; rank?: string | null }, T>(
  rows: R[],
  limit: number,
  queryKey: string,
  view: (row: R) => T,
): Page<T> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  return {
    items: kept.map(view),
    nextCursor:
      more && last
        ? encodeCursor({ id: last.id, q: queryKey, ...(last.rank != null ? { rank: last.rank } : {}) })
        : null,
  };
}

/**
 * Orders a search and applies its cursor: by full-text relevance then id when there is text (websearch
 * syntax over the table's `search_vector`), else newest first; keyset, so pages never shift.
 */
export function orderBySearch(
  db: Knex,
  query: Knex.QueryBuilder,
  q: string | null,
  cursor: Cursor | undefined,
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
