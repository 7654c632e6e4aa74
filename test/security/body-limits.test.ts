// Each route reads at most its own body limit: a few KB for the routes whose inputs are small (most),
// nothing but `{}` for a route without a body, the service's BODY_LIMIT_BYTES only where the real input
// is big (a package to verify, a trustee's shares for every ballot, a room's members). A body over the
// limit is refused 413 from its declared length before a byte of it is read, or as soon as a chunked
// one passes the limit: a caller cannot make the web parse 64 KB of junk for a route that takes 300 bytes.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { NO_BODY_BYTES, SMALL_BODY_BYTES, routeBodyLimit } from '../../api/http/route';
import { buildTables } from '../../api/tables';
import { forgedPackage } from '../fixtures/trustee-room';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';

let app: TestApp;
let server: http.Server;
let port: number;
const jobCount = async () => Number((await app.deps.db('jobs').count({ n: '*' }))[0]!.n);

beforeAll(async () => {
  app = testApp();
  server = http.createServer(createApp(app.deps));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await app.close();
});

/** Sends `head` (and then `chunks`, one at a time while the socket is open); what came back, once closed or answered. */
function exchange(head: string, chunks: string[] = []): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let data = '';
    const done = () => {
      s.destroy();
      resolve(data);
    };
    s.on('data', (d: Buffer) => {
      data += d.toString();
      if (/\r\n\r\n[\s\S]*\}$/.test(data)) done();
    });
    s.on('close', done);
    s.on('error', (e: NodeJS.ErrnoException) =>
      e.code === 'ECONNRESET' || e.code === 'EPIPE' ? done() : reject(e),
    );
    s.write(head);
    let i = 0;
    const next = () => {
      if (i >= chunks.length || s.destroyed) return;
      s.write(chunks[i++]!, () => setTimeout(next, 5));
    };
    next();
  });
}

const problemOf = (reply: string) => {
  const [head, body] = reply.split('\r\n\r\n') as [string, string];
  return {
    status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]),
    head,
    body: JSON.parse(body) as { code: string },
  };
};

describe('each route’s own body limit', () => {
  it('is BODY_LIMIT_BYTES only for the routes whose real input is big, a few KB for every other', () => {
    const tables = buildTables();
    const large: string[] = [];
    for (const table of [tables.exchange, tables.commercial, tables.site]) {
      for (const r of table.list()) {
        const limit = routeBodyLimit(r, 64 * 1024);
        if (r.bodyLimit === 'large') large.push(`${r.method} ${r.path}`);
        else expect(limit, `${r.method} ${r.path}`).toBe(r.body ? SMALL_BODY_BYTES : NO_BODY_BYTES);
      }
    }
    expect(large.sort()).toEqual([
      'post /api/auctions/verify',
      'post /api/auctions/{auctionId}/decryptions',
      'post /api/governance/proposals/{proposalId}/decryptions',
      'post /api/governance/rooms',
      'post /api/governance/rooms/{roomId}/committees',
      'post /api/governance/rooms/{roomId}/identities',
      'post /api/governance/rooms/{roomId}/members',
      'post /api/governance/verify',
      'post /api/proof-workflows/approver-sets',
      'post /api/proof-workflows/issuers',
      'post /api/proof-workflows/issuers/{keyId}/revocations',
      'post /api/proof-workflows/verify',
      'post /api/treasury/verify',
    ]);
  });

  it('refuses a declared length over the route’s limit before a byte of the body is sent, and writes nothing', async () => {
    const before = await jobCount();
    // Only the head: the answer must come without the body (the old service-wide limit waited for it).
    const reply = await exchange(
      `POST /api/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${SMALL_BODY_BYTES + 1}\r\n\r\n`,
    );
    const problem = problemOf(reply);
    expect(problem.status).toBe(413);
    expect(problem.head).toMatch(/content-type: application\/problem\+json/i);
    expect(problem.body.code).toBe('payload_too_large');
    expect(await jobCount()).toBe(before);
  });

  it('refuses a chunked body once it passes the limit, never parsing it', async () => {
    const piece = `"${'x'.repeat(2046)}",`;
    const chunks = [`{"items":[`, ...Array.from({ length: 12 }, () => piece)].map(
      (c) => `${Buffer.byteLength(c).toString(16)}\r\n${c}\r\n`,
    );
    const reply = await exchange(
      'POST /api/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
      chunks,
    );
    expect(problemOf(reply)).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });
  });

  it('takes no more than `{}` where a route takes no body', async () => {
    const res = await app.request
      .post(`/api/governance/rooms/room_${'a'.repeat(26)}/challenge`)
      .send({ pad: 'x'.repeat(NO_BODY_BYTES) });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
  });

  it('still reads a big real input where the route needs it: a 16-trustee package to verify', async () => {
    const body = JSON.stringify({ package: forgedPackage() });
    expect(Buffer.byteLength(body)).toBeGreaterThan(SMALL_BODY_BYTES);
    const res = await app.request
      .post('/api/governance/verify')
      .set('content-type', 'application/json')
      .send(body);
    expect(res.status).toBe(200);
    expect(res.body.valid).toBe(false);
  });

  it('documents each route’s limit in the OpenAPI document', async () => {
    type Doc = { paths: Record<string, Record<string, { requestBody?: { description?: string } }>> };
    const exchange = (await app.request.get('/openapi.json')).body as Doc;
    const platform = (await app.request.get('/openapi/platform.json')).body as Doc;
    expect(exchange.paths['/api/jobs']?.post?.requestBody?.description).toContain(
      `${SMALL_BODY_BYTES} bytes`,
    );
    expect(platform.paths['/api/governance/verify']?.post?.requestBody?.description).toContain(
      'BODY_LIMIT_BYTES',
    );
  });
});
