// Idempotency-Key on POST: the same key and body replay the first response; another body is a 409.
// Records live in Postgres, so a retry lands on the same answer whichever web process takes it.
import type { RequestHandler } from 'express';
import { canonicalJson } from '../../shared/canonical';
import { sha256Hex } from '../../shared/crypto';
import { AppError } from '../../shared/errors';
import type { AppDeps } from '../deps';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** A request that died without answering frees its key after this long. */
const STALE_LOCK_MS = 60_000;

interface StoredRow {
  request_hash: string;
  response_status: number | null;
  response_body: unknown;
  response_headers: Record<string, string> | null;
  locked_at: Date | null;
}

export function idempotency(deps: AppDeps): RequestHandler {
  return async (req, res, next) => {
    const key = req.header('idempotency-key');
    if (req.method !== 'POST' || key === undefined) return next();
    if (!KEY_PATTERN.test(key)) {
      throw new AppError(
        400,
        'invalid_idempotency_key',
        'Idempotency-Key must be 1–255 visible ASCII characters.',
      );
    }
    const scope = `${req.method} ${req.path} ${sha256Hex(req.header('authorization') ?? '').slice(0, 16)}`;
    const requestHash = sha256Hex(canonicalJson({ body: req.body ?? null, query: req.query ?? {} }));

    const inserted = await deps
      .db('idempotency_keys')
      .insert({ scope, key, request_hash: requestHash, locked_at: deps.db.fn.now() })
      .onConflict(['scope', 'key'])
      .ignore()
      .returning('key');

    if (inserted.length === 0) {
      const row = (await deps.db('idempotency_keys').where({ scope, key }).first()) as StoredRow | undefined;
      if (row && row.request_hash !== requestHash) {
        throw new AppError(
          409,
          'idempotency_conflict',
          'This Idempotency-Key was already used with a different request body.',
        );
      }
      if (row && row.response_status !== null) {
        for (const [k, v] of Object.entries(row.response_headers ?? {})) res.setHeader(k, v);
        res.setHeader('Idempotency-Replayed', 'true');
        const body = row.response_body;
        res.status(row.response_status).send(typeof body === 'string' ? body : JSON.stringify(body));
        return;
      }
      const stale = !row || (row.locked_at && Date.now() - new Date(row.locked_at).getTime() > STALE_LOCK_MS);
      if (!stale) {
        throw new AppError(
          409,
          'idempotency_in_progress',
          'A request with this Idempotency-Key is still being processed.',
          {
            headers: { 'Retry-After': '1' },
          },
        );
      }
      await deps.db('idempotency_keys').where({ scope, key }).update({ locked_at: deps.db.fn.now() });
    }

    // Capture what this request answers and store it; a 5xx frees the key so the client can retry.
    const send = res.send.bind(res);
    let captured: unknown;
    res.send = (body?: unknown) => {
      captured = body;
      return send(body);
    };
    res.on('finish', () => {
      const status = res.statusCode;
      const done =
        status >= 500
          ? deps.db('idempotency_keys').where({ scope, key }).delete()
          : deps
              .db('idempotency_keys')
              .where({ scope, key })
              .update({
                response_status: status,
                response_body: JSON.stringify(
                  typeof captured === 'string' ? safeParse(captured) : (captured ?? null),
                ),
                response_headers: JSON.stringify(pickHeaders(res.getHeaders())),
                locked_at: null,
              });
      done.catch((err: Error) => req.log?.warn({ err: err.message }, 'could not store idempotent response'));
    });
    next();
  };
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function pickHeaders(headers: Record<string, unknown>): Record<string, string> {
  const keep = ['content-type', 'location'];
  return Object.fromEntries(keep.filter((k) => headers[k] !== undefined).map((k) => [k, String(headers[k])]));
}
