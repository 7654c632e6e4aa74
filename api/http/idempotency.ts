// Idempotency-Key on POST: the same key and body replay the first response; another body is a 409.
// Records live in Postgres, so a retry lands on the same answer whichever web process takes it.
// * Scope: method, path and the caller — the authenticated principal, else the job capability it
//   holds (a jt_ token), else the client address — so another caller's key names nothing (no replay,
//   no 409 oracle on someone else's body).
// * A reply that carries a credential or secret shown once (an agent's API key, a job's capability,
//   salts) is replayed only to the authenticated caller that made it. An anonymous caller is only an
//   address, which a NAT or proxy shares with strangers: repeating its key answers 409
//   idempotency_reply_withheld with the created resource's Location, never the reply.
// * At rest: the key is stored as an HMAC under a server secret; the response is sealed under a key
//   derived from that secret AND the client's key: a dump alone opens nothing, and a dump plus a
//   guessed key still needs the server secret.
// * Runs inside the route, after authentication: a request that does not authenticate, or names no
//   route, stores nothing. Not stored either: a 401/403 or 429 from the route, and any 5xx (nothing
//   happened; retry with the key).
import type { Request, Response } from 'express';
import { capabilityHash } from '../../shared/platform/capabilities';
import { canonicalJson } from '../../shared/platform/canonical';
import { createHmac, hkdfSync } from 'node:crypto';
import { AppError } from '../../shared/platform/errors';
import { open, purposeKey, seal } from '../../shared/platform/sealing';
import type { AppDeps } from '../deps';
import { isJobCapability, resolveCredential } from './auth';
import { callerKey } from './ratelimit';

/** At least 16 visible ASCII characters: a short key is guessable, and a guessed key would replay. */
const KEY_PATTERN = /^[\x21-\x7e]{16,255}$/;
const serverSecret = () => purposeKey('idempotency');
const keyed = (...parts: string[]) =>
  createHmac('sha256', serverSecret()).update(parts.join('\n')).digest('hex');
const notStored = (status: number) => status === 401 || status === 403 || status === 429 || status >= 500;
/** A request that died without answering frees its key after this long. */
const STALE_LOCK_MS = 60_000;

interface StoredRow {
  request_hash: string;
  response_status: number | null;
  response_body: unknown;
  locked_at: Date | null;
}

/**
 * Called by a POST route once its caller is authenticated (so a request that does not authenticate,
 * or names no route, never touches the table). True when it answered (a replay); throws on a
 * conflict; otherwise records the answer the route is about to give.
 */
export async function idempotent(
  deps: AppDeps,
  req: Request,
  res: Response,
  secretReply = false,
): Promise<boolean> {
  const key = req.header('idempotency-key');
  if (req.method !== 'POST' || key === undefined) return false;
  if (!KEY_PATTERN.test(key)) {
    throw new AppError(
      400,
      'invalid_idempotency_key',
      'Idempotency-Key must be 16–255 visible ASCII characters (a random UUID is a good key).',
    );
  }
  const { principal, token } = await resolveCredential(req, deps);
  const withhold = secretReply && !principal;
  // Known only by its address but holding a job's capability, a caller is scoped by the capability:
  // another caller at the same address (a NAT, a proxy) without it replays none of its requests.
  const caller =
    !principal && token && isJobCapability(token)
      ? `cap:${capabilityHash(token)}`
      : callerKey(principal, req);
  const scope = `${req.method} ${req.path} ${keyed('caller', caller).slice(0, 32)}`;
  const clientKey = key;
  // An x402 retry repeats the request with a payment header and the same key: it is a request of its
  // own (the first answered 402), and a replay of it answers what its own first attempt answered.
  const payment = req.header('payment-signature') ?? req.header('x-payment');
  const keyDigest = payment
    ? keyed('key', scope, clientKey, 'payment', keyed('payment', payment))
    : keyed('key', scope, clientKey);
  // Keyed by the server secret and the client's key: a plain hash of a small private input could be
  // guessed from a dump.
  const requestHash = keyed(
    'request',
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
      if (stored.withheld) {
        throw new AppError(
          409,
          'idempotency_reply_withheld',
          'A request with this Idempotency-Key already succeeded; its reply carried a credential shown once, which is replayed only to an authenticated caller. Use what the first reply gave; send a new key for another request.',
          { headers: stored.headers.location ? { Location: stored.headers.location } : {} },
        );
      }
      for (const [k, v] of Object.entries(stored.headers)) res.setHeader(k, v);
      res.setHeader('Idempotency-Replayed', 'true');
      res.status(row.response_status).send(stored.body);
      return true;
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

  // Store what this request answers before its last bytes go out, so a client that has the answer and
  // sends the key again gets the replay, never "still being processed"; an answer that did nothing
  // frees the key.
  const store = (body: unknown) => {
    const status = res.statusCode;
    return notStored(status)
      ? deps.db('idempotency_keys').where({ scope, key: keyDigest }).delete()
      : deps
          .db('idempotency_keys')
          .where({ scope, key: keyDigest })
          .update({
            response_status: status,
            response_body: JSON.stringify(
              sealResponse(
                withhold && status < 400
                  ? { headers: pickHeaders(res.getHeaders(), ['location']), body: '', withheld: true }
                  : { headers: pickHeaders(res.getHeaders()), body: bodyText(body) },
                clientKey,
                scope,
              ),
            ),
            locked_at: null,
          });
  };
  const warn = (err: Error) => req.log?.warn({ err: err.message }, 'could not store idempotent response');
  // At end: the status, every header and the body are final there, however the route answered.
  const end = res.end.bind(res) as (...args: unknown[]) => typeof res;
  let stored = false;
  res.end = ((...args: unknown[]) => {
    if (stored) return end(...args);
    stored = true;
    const body = typeof args[0] === 'function' ? undefined : args[0];
    // Through a promise from the start: a store that throws at once still lets the answer out.
    void Promise.resolve()
      .then(() => store(body))
      .catch(warn)
      .finally(() => end(...args));
    return res;
  }) as typeof res.end;
  return false;
}

interface StoredResponse {
  headers: Record<string, string>;
  body: string;
  /** The reply carried a secret for an anonymous caller: only its Location is kept. */
  withheld?: boolean;
}

function bodyText(captured: unknown): string {
  if (captured === undefined || captured === null) return '';
  if (typeof captured === 'string') return captured;
  if (Buffer.isBuffer(captured)) return captured.toString('utf8');
  return JSON.stringify(captured);
}

/** Only the service, for the holder of the Idempotency-Key, can open what was stored under it. */
function responseKey(clientKey: string, scope: string): Buffer {
  const ikm = Buffer.concat([serverSecret(), Buffer.from(clientKey)]);
  return Buffer.from(hkdfSync('sha256', ikm, scope, 'proof-exchange idempotent response/v2', 32));
}

const sealResponse = (r: StoredResponse, clientKey: string, scope: string): string =>
  seal(responseKey(clientKey, scope), scope, JSON.stringify(r)).toString('base64');

const openResponse = (stored: unknown, clientKey: string, scope: string): StoredResponse =>
  JSON.parse(
    open(responseKey(clientKey, scope), scope, Buffer.from(String(stored), 'base64')).toString('utf8'),
  ) as StoredResponse;

const replayedHeaders = [
  'content-type',
  'location',
  'payment-required',
  'payment-response',
  'x-payment-response',
];

function pickHeaders(headers: Record<string, unknown>, keep = replayedHeaders): Record<string, string> {
  return Object.fromEntries(keep.filter((k) => headers[k] !== undefined).map((k) => [k, String(headers[k])]));
}
