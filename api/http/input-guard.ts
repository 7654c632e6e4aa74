// The one gate every inbound value passes before any route sees it: body, query and path parameters.
// Strings carry no NUL and no other C0 control character but tab, line feed and carriage return
// (Postgres refuses NUL in text and jsonb; the others have no place in names, queries or ids), and
// JSON nests at most MAX_JSON_DEPTH levels (deeper input would exhaust the stack of every recursive
// walk after it, canonical JSON included).
import type { RequestHandler } from 'express';
import { AppError, validationFailed } from '../../shared/platform/errors';

export const MAX_JSON_DEPTH = 64;
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/;

const showKey = (key: string) => (/^[\w$-]+$/.test(key) ? key : JSON.stringify(key).slice(1, -1));

/**
 * Walks a parsed value without recursion; throws the first problem found: `400 json_too_deep` past
 * the depth limit, `400 validation_failed` for a control character in a string or a member name.
 */
export function guardInput(value: unknown, where: string): void {
  const stack: Array<[unknown, string, number]> = [[value, where, 0]];
  while (stack.length) {
    const [v, path, depth] = stack.pop()!;
    if (typeof v === 'string') {
      if (CONTROL.test(v)) {
        throw validationFailed([
          { path, message: 'must not contain NUL or other control characters (tab, CR and LF are fine)' },
        ]);
      }
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) {
      throw new AppError(400, 'json_too_deep', `Input may nest at most ${MAX_JSON_DEPTH} levels deep.`, {
        errors: [{ path: where, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }],
      });
    }
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}.${i}`, depth + 1]);
      continue;
    }
    for (const key of Object.keys(v)) {
      if (CONTROL.test(key)) {
        throw validationFailed([
          { path: `${path}.${showKey(key)}`, message: 'member names must not contain control characters' },
        ]);
      }
      stack.push([(v as Record<string, unknown>)[key], `${path}.${showKey(key)}`, depth + 1]);
    }
  }
}

/** The query string, for every route and page. */
export const guardQuery: RequestHandler = (req, _res, next) => {
  guardInput(req.query, 'query');
  next();
};

/** The parsed JSON body, before idempotency and the routes. */
export const guardBody: RequestHandler = (req, _res, next) => {
  if (req.body !== undefined) guardInput(req.body, 'body');
  next();
};
