// Load shedding: past OVERLOAD_MAX_IN_FLIGHT requests taken and not yet answered, the web answers a new
// request 503 `overloaded` with Retry-After at once, and runs nothing for it; health and readiness
// still answer; the request it took completes.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { httpShed } from '../../shared/platform/metrics';
import type { AppDeps } from '../../api/deps';
import { testApp } from '../helpers';

/** An app with these limits on a port of its own, for the file or describe block it is called in. */
function served(overload: AppDeps['overload']) {
  const app = testApp({ overload });
  const server = http.createServer(createApp(app.deps));
  const at = { app, port: 0 };
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    at.port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await app.close();
  });
  return at;
}

const t = served({ maxInFlight: 1, maxEventLoopDelayMs: 0 });

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}
const answer = (req: http.ClientRequest) =>
  new Promise<Answer>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
  });
const send = (method: string, path: string, body?: string) => {
  const req = http.request({
    host: '127.0.0.1',
    port: t.port,
    method,
    path,
    agent: false,
    headers: body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {},
  });
  const done = answer(req);
  req.end(body);
  return done;
};
const jobCount = async () => Number((await t.app.deps.db('jobs').count({ n: '*' }))[0]!.n);

describe('load shedding', () => {
  it('answers past the in-flight cap with 503 overloaded and Retry-After, keeps health, loses nothing it took', async () => {
    const before = await jobCount();
    const shedCount = async () => (await httpShed.get()).values.reduce((n, v) => n + v.value, 0);
    const shedBefore = await shedCount();
    // One request taken and held in flight: its body has not all arrived.
    const job = JSON.stringify({ service: 'attest.timestamp', input: { digest: 'cd'.repeat(32) } });
    const held = http.request({
      host: '127.0.0.1',
      port: t.port,
      method: 'POST',
      path: '/api/jobs',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(job) },
    });
    const heldAnswer = answer(held);
    held.write(job.slice(0, 10));
    await new Promise((r) => setTimeout(r, 200));

    const shed = await send('GET', '/api/pricing');
    expect(shed.status).toBe(503);
    expect(shed.headers['content-type']).toBe('application/problem+json');
    expect(shed.headers['retry-after']).toBe('1');
    expect(JSON.parse(shed.body)).toMatchObject({
      status: 503,
      code: 'overloaded',
      type: '/problems/overloaded',
    });

    // A write that is shed writes nothing.
    const shedJob = await send(
      'POST',
      '/api/jobs',
      JSON.stringify({ service: 'attest.timestamp', input: { digest: 'ef'.repeat(32) } }),
    );
    expect(shedJob.status).toBe(503);
    expect(await jobCount()).toBe(before);
    // Both refusals are counted on /metrics (px_http_shed_total).
    expect((await shedCount()) - shedBefore).toBe(2);

    // Liveness and readiness answer whatever the load.
    expect((await send('GET', '/api/health')).status).toBe(200);
    expect((await send('GET', '/api/v1/readiness')).status).toBe(200);

    // The request it took completes, and the place it held is free again.
    held.end(job.slice(10));
    expect((await heldAnswer).status).toBe(202);
    expect(await jobCount()).toBe(before + 1);
    expect((await send('GET', '/api/pricing')).status).toBe(200);
  });

  it('does not count a long poll that waits as work in flight', async () => {
    const created = await send(
      'POST',
      '/api/jobs',
      JSON.stringify({ service: 'attest.timestamp', input: { digest: '12'.repeat(32) } }),
    );
    expect(created.status).toBe(202);
    const { job, accessToken } = JSON.parse(created.body) as { job: { id: string }; accessToken: string };
    // No worker runs here: the job stays queued and the poll waits its 3 s out.
    const poll = http.request({
      host: '127.0.0.1',
      port: t.port,
      method: 'GET',
      path: `/api/jobs/${job.id}?wait=3`,
      agent: false,
      headers: { authorization: `Bearer ${accessToken}` },
    });
    const polled = answer(poll);
    poll.end();
    await new Promise((r) => setTimeout(r, 500));
    // With one place in flight, a request still passes while the poll waits.
    expect((await send('GET', '/api/pricing')).status).toBe(200);
    expect((await polled).status).toBe(200);
  });
});

describe('load shedding by the time requests spend in the process', () => {
  const slow = served({ maxInFlight: 4, maxEventLoopDelayMs: 0, targetMs: 50 });

  let n = 0;
  const jobBody = () =>
    JSON.stringify({
      service: 'attest.timestamp',
      input: { digest: (n++).toString(16).padStart(64, '0') },
    });
  const request = (body: string) =>
    http.request({
      host: '127.0.0.1',
      port: slow.port,
      method: 'POST',
      path: '/api/jobs',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
  /** A createJob taken and held in flight (its body has not all arrived) until `finish`. */
  const hold = () => {
    const body = jobBody();
    const req = request(body);
    const answered = answer(req);
    req.write(body.slice(0, 10));
    return () => {
      req.end(body.slice(10));
      return answered;
    };
  };
  const create = () => {
    const body = jobBody();
    const req = request(body);
    const answered = answer(req);
    req.end(body);
    return answered;
  };
  const shedByLatency = async () =>
    (await httpShed.get()).values.find((v) => v.labels.reason === 'latency')?.value ?? 0;
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('takes a burst past half the cap while requests are quick, and only half once they are slow', async () => {
    const shedBefore = await shedByLatency();
    // Quick so far: three held in flight (past half of 4) and a fourth are all taken.
    const burst = [hold(), hold(), hold()];
    await pause(200);
    expect((await create()).status).toBe(202);
    // The three were held over a second each: the recent requests took far longer than 50 ms.
    await pause(1000);
    for (const finish of burst) expect((await finish()).status).toBe(202);

    // Now two in flight (half the cap) is all it takes: the next is shed, though the cap is 4.
    const two = [hold(), hold()];
    await pause(200);
    const shed = await create();
    expect(shed.status).toBe(503);
    expect(shed.headers['retry-after']).toBe('1');
    expect(JSON.parse(shed.body)).toMatchObject({ code: 'overloaded' });
    expect((await shedByLatency()) - shedBefore).toBe(1);
    for (const finish of two) expect((await finish()).status).toBe(202);

    // Quick requests bring the average back under the target, and the whole cap is open again.
    for (let i = 0; i < 80; i++) expect((await create()).status).toBe(202);
    const three = [hold(), hold(), hold()];
    await pause(200);
    expect((await create()).status).toBe(202);
    for (const finish of three) expect((await finish()).status).toBe(202);
  });
});
