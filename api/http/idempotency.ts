// Idempotency-Key on POST: the same key and body replay the first response; another body is a 409.
// Records live in Postgres, so a retry lands on the same answer whichever web process takes it.
// Only a hash of the key is stored, and the response is encrypted under a key derived from the client's
// Idempotency-Key: a response that carries a secret shown once (an agent's API key, a webhook secret)
// can be replayed to the client who holds the key, but a database dump reveals nothing.
import type { RequestHandler } from 'express';
import { canonicalJson } from '../../shared/canonical';
import { hkdfSync } from 'node:crypto';
import { hmacSha256Hex, sha256Hex } from '../../shared/crypto';
import { AppError } from '../../shared/errors';
import { open, seal } from '../../shared/sealing';
import type { AppDeps } from '../deps';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** A request that died without answering frees its key after this long. */
const STALE_LOCK_MS = 60_000;

interface StoredRow {
  request_hash: string;
  response_status: number | null;
  response_body: unknown;
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
    const clientKey = key;
    const keyDigest = sha256Hex(`${scope}\n${clientKey}`);
    // Keyed by the client's key: a plain hash of a small private input could be guessed from a dump.
    const requestHash = hmacSha256Hex(
      clientKey,
      canonicalJson({ body: req.body ?? null, query: req.query ?? {} }),
    );

    const inserted = await deps
      .db('idempotency_keys')
      .insert({ scope, key: keyDigest, request_hash: requestHash, locked_at: deps.db.fn.now() })
      .onConflict(['scope', 'key'])
      .ignore()
      .returning('key');

    if (inserted.length === 0) {
      const row = (await deps.db('idempotency_keys').where({ scope, key: keyDigest }).first()) as
        StoredRow | undefined;
      if (row && row.request_hash !== requestHash) {
        throw new AppError(
          409,
          'idempotency_conflict',
          'This Idempotency-Key was already used with a different request body.',
        );
      }
      if (row && row.response_status !== null) {
        const stored = openResponse(row.response_body, clientKey, scope);
        for (const [k, v] of Object.entries(stored.headers)) res.setHeader(k, v);
        res.setHeader('Idempotency-Replayed', 'true');
        res.status(row.response_status).send(stored.body);
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
      await deps
        .db('idempotency_keys')
        .where({ scope, key: keyDigest })
        .update({ locked_at: deps.db.fn.now() });
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
          ? deps.db('idempotency_keys').where({ scope, key: keyDigest }).delete()
          : deps
              .db('idempotency_keys')
              .where({ scope, key: keyDigest })
              .update({
                response_status: status,
                response_body: JSON.stringify(
                  sealResponse(
                    { headers: pickHeaders(res.getHeaders()), body: bodyText(captured) },
                    clientKey,
                    scope,
                  ),
                ),
                locked_at: null,
              });
      done.catch((err: Error) => req.log?.warn({ err: err.message }, 'could not store idempotent response'));
    });
    next();
  };
}

interface StoredResponse {
  headers: Record<string, string>;
  body: string;
}

function bodyText(captured: unknown): string {
  if (captured === undefined || captured === null) return '';
  if (typeof captured === 'string') return captured;
  if (Buffer.isBuffer(captured)) return captured.toString('utf8');
  return JSON.stringify(captured);
}

/** Only the holder of the Idempotency-Key can open what was stored under it. */
function responseKey(clientKey: string, scope: string): Buffer {
  return Buffer.from(hkdfSync('sha256', clientKey, scope, 'proof-exchange idempotent response', 32));
}

const sealResponse = (r: StoredResponse, clientKey: string, scope: string): string =>
  seal(responseKey(clientKey, scope), scope, JSON.stringify(r)).toString('base64');

const openResponse = (stored: unknown, clientKey: string, scope: string): StoredResponse =>
  JSON.parse(
    open(responseKey(clientKey, scope), scope, Buffer.from(String(stored), 'base64')).toString('utf8'),
  ) as StoredResponse;

function pickHeaders(headers: Record<string, unknown>): Record<string, string> {
  const keep = ['content-type', 'location'];
  return Object.fromEntries(keep.filter((k) => headers[k] !== undefined).map((k) => [k, String(headers[k])]));
}
