// A loopback JSON-RPC front for a real node (ganache): forwards every request and records it, and can
// play what other nodes do — refuse batches (as a whole, in three ways seen in the wild), fail one call
// inside a batch, answer a batch out of order, or answer late.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * - object-400: HTTP 400 with one error object (no batch support);
 * - object-200: HTTP 200 with one error object;
 * - null-id:    an array holding one error whose id is null (geth's "batch too large").
 */
export type BatchRefusal = 'none' | 'object-400' | 'object-200' | 'null-id';

interface RpcRequest {
  jsonrpc: '2.0';
  id: number;
  method: string;
  params?: unknown[];
}

export interface Seen {
  batch: boolean;
  methods: string[];
}

export interface RpcFront {
  url: string;
  /** Every request that reached the front, in order. */
  seen: Seen[];
  refuseBatches: BatchRefusal;
  /** Answer batches in reverse order (JSON-RPC does not promise the order). */
  reverse: boolean;
  /** Answer each request this long after the node did. */
  delayMs: number;
  /** Calls of `method` whose first parameter is `param` are answered with this error instead. */
  fail(method: string, param: string, error: { code: number; message: string }): void;
  clearFaults(): void;
  close(): Promise<void>;
}

export async function startRpcFront(target: string): Promise<RpcFront> {
  const faults = new Map<string, { code: number; message: string }>();
  const faultKey = (method: string, param: unknown) => `${method}|${String(param).toLowerCase()}`;
  const front: Omit<RpcFront, 'url' | 'close'> = {
    seen: [],
    refuseBatches: 'none',
    reverse: false,
    delayMs: 0,
    fail: (method, param, error) => void faults.set(faultKey(method, param), error),
    clearFaults: () => faults.clear(),
  };

  async function forward(calls: RpcRequest[]): Promise<unknown[]> {
    const passed = calls.filter((c) => !faults.has(faultKey(c.method, c.params?.[0])));
    const answers: Array<{ id: number }> = passed.length
      ? ((await (
          await fetch(target, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(passed),
          })
        ).json()) as Array<{ id: number }>)
      : [];
    const byId = new Map(answers.map((a) => [a.id, a]));
    return calls.map(
      (c) =>
        byId.get(c.id) ?? {
          jsonrpc: '2.0',
          id: c.id,
          error: faults.get(faultKey(c.method, c.params?.[0])),
        },
    );
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const doc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RpcRequest | RpcRequest[];
      const batch = Array.isArray(doc);
      const calls = batch ? doc : [doc];
      front.seen.push({ batch, methods: calls.map((c) => c.method) });
      const reply = (status: number, body: unknown) => {
        const send = () => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (front.delayMs > 0) setTimeout(send, front.delayMs);
        else send();
      };
      const refusal = { code: -32600, message: 'batch requests are not supported' };
      if (batch && front.refuseBatches === 'object-400')
        return reply(400, { jsonrpc: '2.0', id: null, error: refusal });
      if (batch && front.refuseBatches === 'object-200')
        return reply(200, { jsonrpc: '2.0', id: null, error: refusal });
      if (batch && front.refuseBatches === 'null-id')
        return reply(200, [
          { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch too large' } },
        ]);
      try {
        const answers = await forward(calls);
        if (!batch) return reply(200, answers[0]);
        return reply(200, front.reverse ? [...answers].reverse() : answers);
      } catch {
        res.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(front, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
