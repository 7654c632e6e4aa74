// The web server's limits apply on time: a client that sends its headers slowly is cut within the
// configured time (not at Node's next 30 s connection sweep), and connections past the cap are refused
// with an answer rather than held. What Node itself refuses (headers too large, a malformed request, a
// request not in time, chunk extensions too large) is answered as problem+json, and the app never runs.
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createWebServer } from '../../api/http/server';
import { env } from '../../shared/platform/env';

let server: Server | undefined;
const sockets: net.Socket[] = [];
/** Requests the app was handed. */
let handled = 0;
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

/** The app reads the whole body before it answers `ok`. */
async function listen(limits: Parameters<typeof createWebServer>[1]): Promise<number> {
  server = createWebServer((req, res) => {
    handled++;
    req.resume();
    req.on('end', () => res.end('ok'));
  }, limits);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
    sockets.push(s);
  });
}

/** A whole problem+json answer, after which the server closes the connection. */
function expectProblem(data: string, status: number, code: string) {
  const [head, body] = data.split('\r\n\r\n') as [string, string];
  expect(head).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
  expect(head).toContain('Content-Type: application/problem+json');
  expect(head).toContain('Connection: close');
  expect(head).toContain(`Content-Length: ${Buffer.byteLength(body)}`);
  expect(JSON.parse(body)).toMatchObject({ type: `/problems/${code}`, status, code });
  expect(JSON.parse(body).title).toEqual(expect.any(String));
  expect(JSON.parse(body).detail).toEqual(expect.any(String));
}

/** Everything the server sends until it closes the connection, and when it closed. */
function untilClosed(s: net.Socket): Promise<{ data: string; at: number }> {
  let data = '';
  s.on('data', (d: Buffer) => (data += d.toString()));
  return new Promise((r) => s.once('close', () => r({ data, at: Date.now() })));
}

describe('slow headers', () => {
  it('are cut within HTTP_HEADERS_TIMEOUT_MS, with 408', async () => {
    const port = await listen({ headersTimeoutMs: 1000, requestTimeoutMs: 31_000, maxConnections: 100 });
    const s = await connect(port);
    const closed = untilClosed(s);
    const start = Date.now();
    s.write('GET / HTTP/1.1\r\nHost: x\r\n');
    // One header line every 200 ms, never the blank line that ends them.
    const drip = setInterval(() => s.writable && s.write(`X-Slow-${Date.now()}: 1\r\n`), 200);
    try {
      const { data, at } = await closed;
      expectProblem(data, 408, 'request_timeout');
      expect(at - start).toBeGreaterThanOrEqual(900);
      // The limit plus at most one check period (a quarter of it) and scheduling slack.
      expect(at - start).toBeLessThan(1000 + 250 + 500);
    } finally {
      clearInterval(drip);
    }
  });

  it('has defaults in the schema: headers 10 s, the whole request above the 30 s long poll', () => {
    expect(env.HTTP_HEADERS_TIMEOUT_MS).toBe(10_000);
    expect(env.HTTP_REQUEST_TIMEOUT_MS).toBeGreaterThan(30_000);
  });
});

describe('the connection cap', () => {
  it('answers 503 problem+json to a connection past it and closes it; a freed place is taken again', async () => {
    const port = await listen({ headersTimeoutMs: 5000, requestTimeoutMs: 31_000, maxConnections: 3 });
    const held = await Promise.all([connect(port), connect(port), connect(port)]);
    // The server has counted them once each has been accepted.
    await new Promise((r) => setTimeout(r, 100));
    const extra = await connect(port);
    const refused = untilClosed(extra);
    extra.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
    const { data } = await refused;
    expect(data).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(data).toContain('Content-Type: application/problem+json');
    expect(data).toContain('Retry-After: 1');
    expect(data).toContain('"code":"service_unavailable"');
    expect(data).not.toContain('ok');

    held[0]!.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const again = await connect(port);
    const answer = untilClosed(again);
    again.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const { data: ok } = await answer;
    expect(ok).toMatch(/^HTTP\/1\.1 200/);
  });
});

describe('what Node refuses before the app', () => {
  const limits = { headersTimeoutMs: 500, requestTimeoutMs: 1000, maxConnections: 100 };
  const refused = async (port: number, request: string) => {
    const s = await connect(port);
    const closed = untilClosed(s);
    s.write(request);
    return (await closed).data;
  };

  it('answers headers over 16 KiB 431 request_header_fields_too_large', async () => {
    const port = await listen(limits);
    const before = handled;
    const data = await refused(port, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expectProblem(data, 431, 'request_header_fields_too_large');
    expect(handled).toBe(before);
  });

  it('answers a malformed request line 400 bad_request', async () => {
    const port = await listen(limits);
    const before = handled;
    expectProblem(await refused(port, 'NOT A REQUEST\r\n\r\n'), 400, 'bad_request');
    expectProblem(await refused(port, 'GET / HTTP/1.1\r\nHost x\r\n\r\n'), 400, 'bad_request');
    expect(handled).toBe(before);
  });

  it('answers chunk extensions over the limit 413 payload_too_large', async () => {
    const port = await listen(limits);
    const before = handled;
    const data = await refused(
      port,
      `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;${'e'.repeat(20_000)}\r\nhello\r\n0\r\n\r\n`,
    );
    expectProblem(data, 413, 'payload_too_large');
    // The request reached the app (its headers were whole); its body never did.
    expect(handled - before).toBeLessThanOrEqual(1);
  });

  it('answers a body that does not arrive within the request timeout 408 request_timeout', async () => {
    const port = await listen(limits);
    const s = await connect(port);
    const closed = untilClosed(s);
    s.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{');
    const { data } = await closed;
    expectProblem(data, 408, 'request_timeout');
  });

  it('answers a second request on a kept-alive connection the same way', async () => {
    const port = await listen(limits);
    const s = await connect(port);
    const closed = untilClosed(s);
    const first = new Promise<void>((resolve) => {
      const onData = (d: Buffer) => {
        if (!d.toString().includes('ok')) return;
        s.off('data', onData);
        resolve();
      };
      s.on('data', onData);
    });
    s.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await first;
    s.write(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const { data } = await closed;
    expect(data).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expectProblem(data.slice(data.indexOf('HTTP/1.1 431')), 431, 'request_header_fields_too_large');
  });
});
