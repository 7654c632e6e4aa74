// Opaque keyset cursors for lists ordered newest first by id (ids are time-ordered): the last row's id
// and the list it belongs to, base64url JSON. Keyset paging, so rows added while a client pages never
// shift or repeat a page; a cursor of one list is refused by another.
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

export interface ListPage<T> {
  items: T[];
  nextCursor: string | null;
}

const encode = (list: string, id: string) =>
  Buffer.from(JSON.stringify({ l: list, id })).toString('base64url');

export const invalidCursor = () =>
  badRequest('invalid_cursor', 'The cursor is not one this list returned; start again without it.', [
    { path: 'query.cursor', message: 'unknown cursor' },
  ]);

/** The id a cursor of `list` ends after; undefined without a cursor; 400 invalid_cursor for any other. */
export function decodeListCursor(text: string | undefined, list: string): string | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const result = cursorSchema.safeParse(parsed);
  if (!result.success || result.data.l !== list) throw invalidCursor();
  return result.data.id;
}

/** A page of `limit` rows from `limit + 1` fetched, with the cursor of the next page when there is one. */
export function listPage<R, T>(
  rows: R[],
  limit: number,
  list: string,
  view: (row: R) => T,
  idOf: (row: R) => string = (r) => (r as { id: string }).id,
): ListPage<T> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  return { items: kept.map(view), nextCursor: more && last ? encode(list, idOf(last)) : null };
}
