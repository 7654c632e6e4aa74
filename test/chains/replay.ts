// A loopback HTTP server that answers with recorded chain responses, for the adapter tests.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/chains');

export function fixture<T = unknown>(path: string): T {
  return JSON.parse(readFileSync(join(fixtures, path), 'utf8')) as T;
}

export interface Reply {
  status?: number;
  /** A string is sent as is; anything else as JSON. */
  body?: unknown;
  /** Never answer (to exercise timeouts). */
  hang?: boolean;
}

export interface Request {
  method: string;
  path: string;
  body: unknown;
}

export interface Replay {
  url: string;
  requests: Request[];
  close(): Promise<void>;
}

export async function startReplay(answer: (req: Request) => Reply): Promise<Replay> {
  const requests: Request[] = [];
  const server: Server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const request: Request = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      body: text ? JSON.parse(text) : undefined,
    };
    requests.push(request);
    const reply = answer(request);
    if (reply.hang) return;
    const body = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? null);
    res.writeHead(reply.status ?? 200, {
      'content-type': typeof reply.body === 'string' ? 'text/plain' : 'application/json',
    });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Wraps a JSON-RPC result in the envelope a node sends, echoing the request id. */
export function rpcResult(req: Request, result: unknown): Reply {
  const id = (req.body as { id?: unknown } | undefined)?.id ?? 1;
  return { body: { jsonrpc: '2.0', result, id } };
}

export function rpcError(req: Request, code: number, message: string): Reply {
  const id = (req.body as { id?: unknown } | undefined)?.id ?? 1;
  return { body: { jsonrpc: '2.0', error: { code, message }, id } };
}

/** A loopback port with nothing listening, for "RPC down". */
export async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
