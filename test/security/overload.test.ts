// Load shedding: past OVERLOAD_MAX_IN_FLIGHT requests taken and not yet answered, the web answers a new
// request 503 `overloaded` with Retry-After at once, and runs nothing for it; health and readiness
// still answer; the request it took completes. A body still arriving holds no in-flight place, bodies
// have a cap and a deadline of their own, and no client network keeps another out of either.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { createDb } from '../../shared/platform/db/knex';
import { httpShed } from '../../shared/platform/metrics';
import type { AppDeps } from '../../api/deps';
import { eventually, testApp } from '../helpers';
import type { TestApp } from '../helpers';

/** An app with these limits on a port of its own, for the file or describe block it is called in. */
function served(overload: AppDeps['overload'], trustProxy = 0) {
  const app = testApp({ overload });
  const server = http.createServer(createApp(app.deps, { trustProxy }));
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

/** A client of one served app, from a loopback address of its choosing (127.0.0.2 is another network). */
function client(at: { port: number }, from = '127.0.0.1', headers: http.OutgoingHttpHeaders = {}) {
  const request = (method: string, path: string, body?: string) =>
    http.request({
      host: '127.0.0.1',
      port: at.port,
      localAddress: from,
      method,
      path,
      agent: false,
      headers: {
        ...headers,
        ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
      },
    });
  const send = (method: string, path: string, body?: string) => {
    const req = request(method, path, body);
    const done = answer(req);
    req.end(body);
    return done;
  };
  return { request, send };
}

let n = 0;
const jobBody = () =>
  JSON.stringify({ service: 'attest.timestamp', input: { digest: (n++).toString(16).padStart(64, '0') } });
const jobCount = async (app: TestApp) => Number((await app.deps.db('jobs').count({ n: '*' }))[0]!.n);
const shedBy = async (reason: string) =>
  (await httpShed.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;
const shedTotal = async () => (await httpShed.get()).values.reduce((sum, v) => sum + v.value, 0);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Holds createJobs in flight: each one's body has arrived and it waits for the jobs table, locked by a
 * transaction on a connection of the test's own. `hold(send)` sends one and resolves once it waits on
 * the lock (one at a time: creates sent together would share one INSERT).
 */
async function lockJobs() {
  const db = createDb(undefined, { poolMax: 2 });
  const trx = await db.transaction();
  await trx.raw('lock table jobs in share mode');
  let held = 0;
  const waiting = async () => {
    const { rows } = await db.raw<{ rows: Array<{ n: string }> }>(
      `select count(*) as n from pg_locks where not granted and relation = 'jobs'::regclass
         and database = (select oid from pg_database where datname = current_database())`,
    );
    return Number(rows[0]!.n);
  };
  return {
    /** Resolves to the request's answer-to-be (in an object: a promise of a promise would be one). */
    async hold<T>(send: () => Promise<T>): Promise<{ answer: Promise<T> }> {
      const answer = send();
      held++;
      await eventually(async () => (await waiting()) >= held);
      return { answer };
    },
    release: async () => {
      await trx.commit();
      await db.destroy();
    },
  };
}

/** Runs `fn` with the jobs table locked, released whatever happens. */
async function withLockedJobs(fn: (lock: Awaited<ReturnType<typeof lockJobs>>) => Promise<void>) {
  const lock = await lockJobs();
  try {
    await fn(lock);
  } finally {
    await lock.release().catch(() => undefined);
  }
}

describe('load shedding', () => {
  const t = served({ maxInFlight: 1, maxEventLoopDelayMs: 0 });
  const { send } = client(t);

  it('answers past the in-flight cap with 503 overloaded and Retry-After, keeps health, loses nothing it took', async () => {
    const before = await jobCount(t.app);
    const shedBefore = await shedTotal();
    let held: Promise<Answer> | undefined;
    await withLockedJobs(async (lock) => {
      // One request taken and held in flight: its body has arrived, and it waits on the jobs table.
      held = (await lock.hold(() => send('POST', '/api/jobs', jobBody()))).answer;

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
      const shedJob = await send('POST', '/api/jobs', jobBody());
      expect(shedJob.status).toBe(503);
      expect(await jobCount(t.app)).toBe(before);
      // Both refusals are counted on /metrics (px_http_shed_total).
      expect((await shedTotal()) - shedBefore).toBe(2);

      // Liveness and readiness answer whatever the load.
      expect((await send('GET', '/api/health')).status).toBe(200);
      expect((await send('GET', '/api/v1/readiness')).status).toBe(200);
    });
    // The request it took completes, and the place it held is free again.
    expect((await held!).status).toBe(202);
    expect(await jobCount(t.app)).toBe(before + 1);
    expect((await send('GET', '/api/pricing')).status).toBe(200);
  });

  it('does not count a long poll that waits as work in flight', async () => {
    const created = await send('POST', '/api/jobs', jobBody());
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
    await pause(500);
    // With one place in flight, a request still passes while the poll waits.
    expect((await send('GET', '/api/pricing')).status).toBe(200);
    expect((await polled).status).toBe(200);
  });
});

describe('load shedding by the time requests spend in the process', () => {
  const slow = served({ maxInFlight: 4, maxEventLoopDelayMs: 0, targetMs: 50 });
  const { send } = client(slow);

  it('takes a burst past half the cap while requests are quick, and only half once they are slow', async () => {
    const shedBefore = await shedBy('latency');
    const create = () => send('POST', '/api/jobs', jobBody());
    let held: Array<Promise<Answer>> = [];
    await withLockedJobs(async (lock) => {
      // Quick so far: three held in flight (past half of 4) and a fourth are all taken.
      for (let i = 0; i < 3; i++) held.push((await lock.hold(create)).answer);
      expect((await send('GET', '/api/pricing')).status).toBe(200);
      // The three are held over a second each: the recent requests took far longer than 50 ms.
      await pause(1000);
    });
    for (const h of held) expect((await h).status).toBe(202);

    held = [];
    await withLockedJobs(async (lock) => {
      // Now two in flight (half the cap) is all it takes: the next is shed, though the cap is 4.
      for (let i = 0; i < 2; i++) held.push((await lock.hold(create)).answer);
      const shed = await send('GET', '/api/pricing');
      expect(shed.status).toBe(503);
      expect(shed.headers['retry-after']).toBe('1');
      expect(JSON.parse(shed.body)).toMatchObject({ code: 'overloaded' });
      expect((await shedBy('latency')) - shedBefore).toBe(1);
    });
    for (const h of held) expect((await h).status).toBe(202);

    // Quick requests bring the average back under the target, and the whole cap is open again.
    for (let i = 0; i < 80; i++) expect((await create()).status).toBe(202);
    held = [];
    await withLockedJobs(async (lock) => {
      for (let i = 0; i < 3; i++) held.push((await lock.hold(create)).answer);
      expect((await send('GET', '/api/pricing')).status).toBe(200);
    });
    for (const h of held) expect((await h).status).toBe(202);
  });
});

/**
 * A raw connection that sends the headers and the first byte of a 60,000-byte body to a route that takes
 * one that long (a package to verify; createJob refuses it at once, over its own 16 KiB).
 */
function slowBody(at: { port: number }, from: string, headers = '') {
  const socket = net.connect({ host: '127.0.0.1', port: at.port, localAddress: from });
  let data = '';
  socket.on('data', (d: Buffer) => (data += d.toString()));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  socket.write(
    `POST /api/governance/verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n${headers}\r\n{`,
  );
  return { socket, closed, data: () => data };
}

describe('fair shares: a slow body holds no in-flight place, and no network holds them all', () => {
  // Twenty places in flight, as many as the honest network sends at once (so none of its own is shed
  // however the machine schedules them), and eight bodies still arriving: were the attacker's eight
  // bodies holding places, 28 would pass the cap and its quarter. No body deadline here (it is tested
  // below), nor the halving while requests are slow (above): on a loaded machine it would shed an honest one.
  const t = served({ maxInFlight: 20, maxEventLoopDelayMs: 0, targetMs: 0, maxBodies: 8, bodyMinRate: 0 });
  const honest = client(t, '127.0.0.1');

  it('serves another network at once while one network trickles 40 bodies, and refuses its bodies past its share', async () => {
    const before = await jobCount(t.app);
    const bodiesShed = await shedBy('bodies');
    // The attacker: 40 bodies from 127.0.0.2, one byte every 100 ms of 60,000.
    const attack = Array.from({ length: 40 }, () => slowBody(t, '127.0.0.2'));
    const drip = setInterval(() => {
      for (const a of attack) if (a.socket.writable) a.socket.write(' ');
    }, 100);
    try {
      // Alone, it may hold the whole cap of bodies; the 32 others are refused at once.
      const refused = await eventually(async () => {
        const answered = attack.filter((a) => a.data() !== '');
        return answered.length >= 32 && answered;
      });
      for (const a of refused) {
        expect(a.data()).toMatch(/^HTTP\/1\.1 503 /);
        expect(a.data()).toContain('Retry-After: 1');
        expect(a.data()).toContain('"code":"overloaded"');
      }

      // The honest network: reads and writes with bodies, ten of each at once, none shed.
      const started = performance.now();
      const answers = await Promise.all([
        ...Array.from({ length: 10 }, () => honest.send('GET', '/api/pricing')),
        ...Array.from({ length: 10 }, () => honest.send('POST', '/api/jobs', jobBody())),
      ]);
      expect(answers.map((a) => a.status)).toEqual([...Array(10).fill(200), ...Array(10).fill(202)]);
      // Answered while the attacker's eight bodies still trickle, none of them answered yet.
      expect(attack.filter((a) => a.data() === '')).toHaveLength(8);
      expect(performance.now() - started).toBeLessThan(5000);
      // The attacker's 32 were refused for the bodies' cap, not for places in flight.
      expect((await shedBy('bodies')) - bodiesShed).toBe(32);
      expect(await jobCount(t.app)).toBe(before + 10);
    } finally {
      clearInterval(drip);
      for (const a of attack) a.socket.destroy();
    }
    // Nothing the attacker sent was written.
    expect(await jobCount(t.app)).toBe(before + 10);
  });
});

describe('fair shares of the places in flight', () => {
  // Eight places; a network below its share is taken up to a quarter past them (two more).
  const t = served({ maxInFlight: 8, maxEventLoopDelayMs: 0, targetMs: 0 });
  const honest = client(t, '127.0.0.1');

  it('takes a request of a network below its share when another network holds every place', async () => {
    const shareShed = await shedBy('network_share');
    const attacker = client(t, '127.0.0.2');
    const held: Array<Promise<Answer>> = [];
    await withLockedJobs(async (lock) => {
      // The attacker fills the eight places in flight: createJobs whose bodies arrived, waiting.
      for (let i = 0; i < 8; i++)
        held.push((await lock.hold(() => attacker.send('POST', '/api/jobs', jobBody()))).answer);
      // Alone at the cap: its next request is shed.
      expect((await attacker.send('GET', '/api/pricing')).status).toBe(503);
      // The honest network is taken past the cap (below its share), and holds a place of its own too.
      expect((await honest.send('GET', '/api/pricing')).status).toBe(200);
      held.push((await lock.hold(() => honest.send('POST', '/api/jobs', jobBody()))).answer);
      expect((await honest.send('GET', '/api/pricing')).status).toBe(200);
      // The attacker, above its share while another network holds a place, is shed first.
      const shed = await attacker.send('GET', '/api/pricing');
      expect(shed.status).toBe(503);
      expect(JSON.parse(shed.body)).toMatchObject({ code: 'overloaded' });
      expect((await shedBy('network_share')) - shareShed).toBe(1);
    });
    for (const h of held) expect((await h).status).toBe(202);
  });
});

describe('fair shares behind a proxy: the network X-Forwarded-For vouches for, IPv6 by its /64', () => {
  const t = served({ maxInFlight: 8, maxEventLoopDelayMs: 0, targetMs: 0, maxBodies: 4, bodyMinRate: 0 }, 1);

  it('counts the addresses of one /64 as one network, and serves another /64', async () => {
    const before = await jobCount(t.app);
    // Twelve bodies from twelve addresses of one /64, through the proxy (the socket is loopback).
    const attack = Array.from({ length: 12 }, (_, i) =>
      slowBody(t, '127.0.0.1', `X-Forwarded-For: 2001:db8:1:2::${(i + 1).toString(16)}\r\n`),
    );
    try {
      const refused = await eventually(async () => {
        const answered = attack.filter((a) => a.data() !== '');
        return answered.length >= 8 && answered;
      });
      for (const a of refused) expect(a.data()).toMatch(/^HTTP\/1\.1 503 [^]*Retry-After: 1/);
      const other = client(t, '127.0.0.1', { 'X-Forwarded-For': '2001:db8:1:3::1' });
      expect((await other.send('POST', '/api/jobs', jobBody())).status).toBe(202);
      expect((await other.send('GET', '/api/pricing')).status).toBe(200);
      expect(attack.filter((a) => a.data() === '')).toHaveLength(4);
    } finally {
      for (const a of attack) a.socket.destroy();
    }
    expect(await jobCount(t.app)).toBe(before + 1);
  });
});

describe('a body that does not arrive in time', () => {
  // 300 ms, plus its 60,000 bytes at 100,000 bytes a second: 0.9 s.
  const t = served({ maxInFlight: 4, maxEventLoopDelayMs: 0, bodyMinRate: 100_000, bodyGraceMs: 300 });

  it('is answered 408 request_timeout and its connection closed, and nothing is written', async () => {
    const before = await jobCount(t.app);
    const slowShed = await shedBy('slow_body');
    const started = performance.now();
    const slow = slowBody(t, '127.0.0.2');
    const drip = setInterval(() => slow.socket.writable && slow.socket.write(' '), 100);
    try {
      await slow.closed;
    } finally {
      clearInterval(drip);
    }
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(850);
    // The deadline plus a check period (250 ms) and scheduling slack.
    expect(elapsed).toBeLessThan(900 + 250 + 1000);
    expect(slow.data()).toMatch(/^HTTP\/1\.1 408 /);
    expect(slow.data()).toContain('Content-Type: application/problem+json');
    expect(slow.data()).toContain('Connection: close');
    expect(slow.data()).toContain('"code":"request_timeout"');
    expect((await shedBy('slow_body')) - slowShed).toBe(1);
    expect(await jobCount(t.app)).toBe(before);
    // A body that arrives on time is served as ever.
    expect((await client(t).send('POST', '/api/jobs', jobBody())).status).toBe(202);
  });
});
