// A small HTTP and JSON-RPC client for chain endpoints: a timeout per attempt and bounded retries on
// transport errors, 5xx and 429. Anything it cannot get through is RpcUnreachableError, which the
// adapters turn into `pending` (never a rejection of the payer).

import { operatorFetch } from '../egress';

export interface RpcOptions {
  timeoutMs: number;
  retries: number;
  /** First retry delay; doubles each time. */
  backoffMs?: number;
}

export class RpcUnreachableError extends Error {
  constructor(
    readonly endpoint: string,
    detail: string,
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
        continue;
      }
      return { status: res.status, text };
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      last =
        e.name === 'TimeoutError' ? `no answer within ${options.timeoutMs} ms` : (e.cause?.code ?? e.message);
    }
  }
  throw new RpcUnreachableError(endpointName(url), `${endpointName(url)} could not be reached: ${last}`);
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
    );
  }
  if (doc.error) throw new RpcError(doc.error.code, doc.error.message, doc.error.data);
  if (answer.status >= 400) {
    throw new RpcUnreachableError(endpointName(url), `${endpointName(url)} answered HTTP ${answer.status}`);
  }
  return doc.result as T;
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
