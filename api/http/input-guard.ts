// The one gate every inbound value passes before any route sees it: body, query and path parameters.
// A string is one line unless it is text (below), and no string carries a character that would make it
// lie on a screen or a terminal (shared/platform/text.ts names them: C0 and C1 controls, NUL included —
// Postgres refuses it in text and jsonb —, DEL, U+2028/U+2029, bidirectional controls, invisible format
// characters, unpaired surrogates). Text — the value of a member named in TEXT_MEMBERS, and every
// string inside a member named in TEXT_TREES — may also hold tabs, line feeds, and a carriage return
// right before a line feed. JSON nests at most MAX_JSON_DEPTH levels (deeper input would exhaust the
// stack of every recursive walk after it, canonical JSON included).
import type { RequestHandler } from 'express';
import { AppError, validationFailed } from '../../shared/platform/errors';
import { printableJson, refusedCharacter } from '../../shared/platform/text';

export const MAX_JSON_DEPTH = 64;

/**
 * Members whose string value is free text that may span lines: descriptions (an agent's, a listing's),
 * the challenge texts a wallet signs and sends back verbatim (TRIAL, room membership, the payments
 * provider's), and the text parts of an A2A message. Every other string of every schema is one line:
 * names, titles, organizations, notes, reasons, ids, queries.
 */
export const TEXT_MEMBERS: ReadonlySet<string> = new Set(['description', 'challenge', 'text']);
/** Members holding a document the service signed, checked by its signature: quoted verbatim, notes and all. */
export const TEXT_TREES: ReadonlySet<string> = new Set(['package', 'receipt']);

const showKey = (key: string) => (/^[\w$-]+$/.test(key) ? key : printableJson(key).slice(1, -1));

/**
 * Walks a parsed value without recursion; throws the first problem found: `400 json_too_deep` past
 * the depth limit, `400 validation_failed` naming the field for a refused character in a string or a
 * member name. `where` names the root, and is itself a member name (a pasted `package` is text).
 */
export function guardInput(value: unknown, where: string): void {
  const stack: Array<[unknown, string, number, boolean, boolean]> = [
    [value, where, 0, TEXT_MEMBERS.has(where) || TEXT_TREES.has(where), TEXT_TREES.has(where)],
  ];
  while (stack.length) {
    const [v, path, depth, text, tree] = stack.pop()!;
    if (typeof v === 'string') {
      const problem = refusedCharacter(v, text);
      if (problem) throw validationFailed([{ path, message: problem }]);
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) {
      throw new AppError(400, 'json_too_deep', `Input may nest at most ${MAX_JSON_DEPTH} levels deep.`, {
        errors: [{ path: where, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }],
      });
    }
    if (Array.isArray(v)) {
      // The strings of an array are text when the array is (a text member's list, inside a document).
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}.${i}`, depth + 1, text, tree]);
      continue;
    }
    for (const key of Object.keys(v)) {
      const problem = refusedCharacter(key, false);
      if (problem) {
        throw validationFailed([{ path: `${path}.${showKey(key)}`, message: `member names ${problem}` }]);
      }
      const inTree = tree || TEXT_TREES.has(key);
      stack.push([
        (v as Record<string, unknown>)[key],
        `${path}.${showKey(key)}`,
        depth + 1,
        inTree || TEXT_MEMBERS.has(key),
        inTree,
      ]);
    }
  }
}

/** The query string, for every route and page. */
export const guardQuery: RequestHandler = (req, _res, next) => {
  guardInput(req.query, 'query');
  next();
};
