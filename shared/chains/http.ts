// A small HTTP and JSON-RPC client for chain endpoints: a timeout per attempt and bounded retries on
// transport errors, 5xx and 429. Anything it cannot get through is RpcUnreachableError, which the
// adapters turn into `pending` (never a rejection of the payer).

import { ExternalFailure } from '../platform/errors';
import { operatorFetch } from '../platform/egress';
import { logger } from '../platform/log';
import { chainRpcCalls, chainRpcRequests } from '../platform/metrics';

export interface RpcOptions {
  timeoutMs: number;
  retries: number;
  /** First retry delay; doubles each time. */
  backoffMs?: number;
}

/** Why an endpoint gave no answer, as a stable code (what a public status may say of it). */
export type UnreachableKind = 'unreachable' | 'timeout' | 'http_error' | 'unexpected_answer';

export class RpcUnreachableError extends ExternalFailure {
  constructor(
    readonly endpoint: string,
    detail: string,
    readonly kind: UnreachableKind = 'unreachable',
  ) {
    super(detail);
    this.name = 'RpcUnreachableError';
  }
}

/** A JSON-RPC error object from a node that answered: the request itself failed. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

export interface HttpAnswer {
  status: number;
  text: string;
}

/**
 * A transport failure as a public status may show it: a stable code, with the HTTP status or the
 * node's error code where there is one (`http_error (HTTP 503)`, `node_error (-32000)`), never the
 * endpoint nor the upstream's own words.
 */
export function publicFailure(err: unknown): string {
  if (err instanceof RpcUnreachableError) {
    const status = /\bHTTP (\d{3})\b/.exec(err.message)?.[1];
    return status ? `${err.kind} (HTTP ${status})` : err.kind;
  }
  if (err instanceof RpcError) return `node_error (${Math.trunc(err.code)})`;
  if ((err as Error | undefined)?.name === 'TimeoutError') return 'timeout';
  return 'failed';
}

/** What publicFailure gives; anything else read back (an older row's message) is not shown as is. */
export const PUBLIC_FAILURE = /^[a-z_]{1,32}(?: \((?:HTTP \d{3}|-?\d{1,16})\))?$/;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Only the origin is named in errors: a URL's path or query may carry an API key. */
export function endpointName(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'endpoint';
  }
}

/**
 * Sends one HTTP request with retries. Returns any answer below 500 (other than 429), including
 * 404s, for the caller to interpret; throws RpcUnreachableError when every attempt failed.
 */
export async function httpRequest(
  url: string,
  init: { method?: string; body?: string; headers?: Record<string, string> },
  options: RpcOptions,
): Promise<HttpAnswer> {
  const attempts = options.retries + 1;
  const backoff = options.backoffMs ?? 200;
  let last = '';
  let kind: UnreachableKind = 'unreachable';
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (attempt > 0) await sleep(backoff * 2 ** (attempt - 1));
    try {
      const res = await operatorFetch(url, {
        method: init.method ?? 'GET',
        ...(init.body === undefined ? {} : { body: init.body }),
        headers: { accept: 'application/json', ...init.headers },
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      const text = await res.text();
      if (res.status >= 500 || res.status === 429) {
        last = `HTTP ${res.status}`;
        kind = 'http_error';
        continue;
      }
      return { status: res.status, text };
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      kind = e.name === 'TimeoutError' ? 'timeout' : 'unreachable';
      last = kind === 'timeout' ? `no answer within ${options.timeoutMs} ms` : (e.cause?.code ?? e.message);
    }
  }
  throw new RpcUnreachableError(
    endpointName(url),
    `${endpointName(url)} could not be reached: ${last}`,
    kind,
  );
}

let nextId = 1;

/**
 * Calls one JSON-RPC 2.0 method; a node's error answer is RpcError (not retried). Integer members
 * named in `exactIntegers` come back as strings: JSON numbers past 2^53 would lose base units.
 */
export async function jsonRpc<T>(
  url: string,
  method: string,
  params: unknown,
  options: RpcOptions & { exactIntegers?: readonly string[] },
): Promise<T> {
  const id = nextId++;
  chainRpcRequests.inc({ kind: 'single' });
  chainRpcCalls.inc();
  const answer = await httpRequest(
    url,
    {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      headers: { 'content-type': 'application/json' },
    },
    options,
  );
  let doc: { result?: T; error?: { code: number; message: string; data?: unknown } };
  let text = answer.text;
  for (const name of options.exactIntegers ?? []) {
    text = text.replace(new RegExp(`("${name}"\\s*:\\s*)(\\d+)`, 'g'), '$1"$2"');
  }
  try {
    doc = JSON.parse(text);
  } catch {
    throw new RpcUnreachableError(
      endpointName(url),
      `${endpointName(url)} answered ${answer.status} without JSON`,
      'unexpected_answer',
    );
  }
  if (doc.error) throw new RpcError(doc.error.code, doc.error.message, doc.error.data);
  if (answer.status >= 400) {
    throw new RpcUnreachableError(
      endpointName(url),
      `${endpointName(url)} answered HTTP ${answer.status}`,
      'http_error',
    );
  }
  return doc.result as T;
}

// ---------------------------------------------------------------------------------------------------
// Batches (JSON-RPC 2.0 §6): many calls in one HTTP request, one answer per call.

export interface RpcCall {
  method: string;
  params: unknown;
}

/** One call's own outcome: in a batch, a failing call fails only itself. */
export type RpcOutcome<T = unknown> =
  { ok: true; result: T } | { ok: false; error: RpcError | RpcUnreachableError };

/**
 * The endpoint answered the batch as a whole instead of call by call: a single error object (no
 * batches here, or too large a batch), an error whose id is null inside the array (geth's "batch too
 * large"), or a 4xx without an array.
 */
export class BatchRefusedError extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = 'BatchRefusedError';
  }
}

interface RpcAnswer {
  id?: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/**
 * Sends the calls as one batch request. Throws RpcUnreachableError when the request did not get
 * through, BatchRefusedError when the endpoint will not take it as a batch; otherwise each call's
 * outcome, in the order given (the answer's order does not matter: answers are matched by id).
 */
export async function jsonRpcBatch(
  url: string,
  calls: readonly RpcCall[],
  options: RpcOptions,
): Promise<RpcOutcome[]> {
  const ids = calls.map(() => nextId++);
  chainRpcRequests.inc({ kind: 'batch' });
  chainRpcCalls.inc(calls.length);
  const answer = await httpRequest(
    url,
    {
      method: 'POST',
      body: JSON.stringify(
        calls.map((c, i) => ({ jsonrpc: '2.0', id: ids[i], method: c.method, params: c.params })),
      ),
      headers: { 'content-type': 'application/json' },
    },
    options,
  );
  let doc: unknown;
  try {
    doc = JSON.parse(answer.text);
  } catch {
    if (answer.status >= 400) throw new BatchRefusedError(`HTTP ${answer.status}`);
    throw new RpcUnreachableError(
      endpointName(url),
      `${endpointName(url)} answered ${answer.status} without JSON`,
    );
  }
  if (!Array.isArray(doc)) {
    const error = (doc as RpcAnswer | null)?.error;
    throw new BatchRefusedError(
      error ? `RPC error ${error.code}: ${error.message}` : `HTTP ${answer.status}`,
    );
  }
  const byId = new Map<unknown, RpcAnswer>();
  for (const item of doc as RpcAnswer[]) {
    if (item?.error && (item.id === null || item.id === undefined)) {
      throw new BatchRefusedError(`RPC error ${item.error.code}: ${item.error.message}`);
    }
    if (item && typeof item === 'object') byId.set(item.id, item);
  }
  return ids.map((id): RpcOutcome => {
    const item = byId.get(id);
    if (!item)
      return { ok: false, error: new RpcError(-32603, 'The batch answer has no answer to this call.') };
    if (item.error)
      return { ok: false, error: new RpcError(item.error.code, item.error.message, item.error.data) };
    return { ok: true, result: item.result };
  });
}

export interface RpcBatcherOptions extends RpcOptions {
  /** Most calls in one batch request; more are split over several requests sent together. */
  maxBatch?: number;
  /** After an endpoint refused a batch, calls go one by one for this long, then a batch is tried again. */
  retryBatchAfterMs?: number;
}

export interface RpcBatcher {
  /** Each call's outcome, in order, from as few HTTP requests as the endpoint takes. */
  call(calls: readonly RpcCall[]): Promise<RpcOutcome[]>;
  /** False while the endpoint is known to refuse batches. */
  batching(): boolean;
}

const settled = (err: unknown): RpcOutcome => {
  if (err instanceof RpcError || err instanceof RpcUnreachableError) return { ok: false, error: err };
  throw err;
};

/**
 * Calls an endpoint in batches, falling back to one request per call (sent concurrently) where the
 * endpoint refuses batches; the refusal is remembered for `retryBatchAfterMs`, so a node without batch
 * support costs one refused request per period, not one per tick.
 */
export function rpcBatcher(url: string, options: RpcBatcherOptions): RpcBatcher {
  const maxBatch = Math.max(1, options.maxBatch ?? 100);
  const retryAfter = options.retryBatchAfterMs ?? 10 * 60_000;
  let refusedUntil = 0;
  const batching = () => Date.now() >= refusedUntil;

  const singles = (calls: readonly RpcCall[]) =>
    Promise.all(
      calls.map((c) =>
        jsonRpc<unknown>(url, c.method, c.params, options).then(
          (result): RpcOutcome => ({ ok: true, result }),
          settled,
        ),
      ),
    );

  async function chunk(calls: readonly RpcCall[]): Promise<RpcOutcome[]> {
    if (calls.length === 1 || !batching()) return singles(calls);
    try {
      return await jsonRpcBatch(url, calls, options);
    } catch (err) {
      if (err instanceof RpcUnreachableError) return calls.map(() => ({ ok: false, error: err }));
      if (!(err instanceof BatchRefusedError)) throw err;
      if (batching())
        logger.warn(
          { endpoint: endpointName(url), detail: err.message, retryAfterMs: retryAfter },
          'the endpoint refused a JSON-RPC batch; calling one by one',
        );
      refusedUntil = Date.now() + retryAfter;
      return singles(calls);
    }
  }

  return {
    async call(calls) {
      const chunks: RpcCall[][] = [];
      for (let i = 0; i < calls.length; i += maxBatch) chunks.push(calls.slice(i, i + maxBatch));
      return (await Promise.all(chunks.map(chunk))).flat();
    },
    batching,
  };
}

/**
 * Adapters' common catch: transport trouble is pending, with the endpoint named but no secrets. The
 * network probe, if given, is reset: whatever answers after a reconnect is asked its network again.
 */
export function unreachable(
  err: unknown,
  probe?: NetworkProbe,
): { status: 'pending'; reason: 'rpc_unreachable'; detail: string } | undefined {
  if (err instanceof RpcUnreachableError) {
    probe?.reset();
    return { status: 'pending', reason: 'rpc_unreachable', detail: err.message };
  }
  return undefined;
}

export interface NetworkProbe {
  /** The CAIP-2 network the endpoint serves (cached). */
  get(): Promise<string>;
  /** Forget the answer: the endpoint dropped, the next caller asks again. */
  reset(): void;
}

/**
 * Asks an endpoint once which network it serves, and again after a reset (a reconnect) or after
 * `ttlMs`, so a node swapped behind one URL is noticed. A failed ask is not kept.
 */
export function networkProbe(ask: () => Promise<string>, ttlMs = 10 * 60_000): NetworkProbe {
  let current: { at: number; value: Promise<string> } | undefined;
  return {
    get() {
      if (!current || Date.now() - current.at > ttlMs) {
        const value = ask();
        const entry = { at: Date.now(), value };
        current = entry;
        value.catch(() => {
          if (current === entry) current = undefined;
        });
      }
      return current.value;
    },
    reset() {
      current = undefined;
    },
  };
}

/** An endpoint serving another network than the asset's never settles its payments. */
export function wrongNetwork(
  expected: string,
  actual: string,
): { status: 'pending'; reason: 'rpc_wrong_chain'; detail: string } | undefined {
  if (expected === actual) return undefined;
  return {
    status: 'pending',
    reason: 'rpc_wrong_chain',
    detail: `The endpoint serves ${actual}, not ${expected}; nothing is settled until it serves the right network.`,
  };
}
