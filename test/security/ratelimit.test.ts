// Rate limits cannot be escaped: every request spends from its address's bucket, a Bearer token that
// authenticates nothing earns no bucket of its own, anonymous proving has a small budget of its own,
// one caller can keep only a few proofs queued, and Groth16 verification has its own limit.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { BatchedLimiter } from '../../api/http/ratelimit';
import { sha256Hex } from '../../shared/platform/crypto';
import { Queues } from '../../shared/platform/queues';
import { untagged, waitReady } from '../../shared/platform/redis';
import { env } from '../../shared/platform/env';
import { expectProblem, newWallet, registerAgent } from '../exchange/fixtures';
import { behindProxy, eventually, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import type { AppDeps } from '../../api/deps';

const apps: TestApp[] = [];
afterAll(async () => {
  for (const a of apps) await a.close();
});

/** An app with its own limits and counters (its own key prefix, so they start at zero). */
async function limitedApp(rateLimit: Partial<AppDeps['rateLimit']>): Promise<TestApp> {
  const app = testApp();
  app.deps.rateLimit = { ...app.deps.rateLimit, enabled: true, ...rateLimit };
  app.deps.queues = new Queues(
    app.deps.redis,
    `${app.deps.queues.prefix}:t${randomBytes(3).toString('hex')}`,
  );
  expect(await waitReady(app.deps.redis)).toBe(true);
  apps.push(app);
  return app;
}

const junkAgentKey = () => `Bearer ak_${randomBytes(32).toString('base64url')}`;
const proofCount = async (app: TestApp) => Number((await app.deps.db('proofs').count({ n: '*' }))[0]!.n);

describe('per-address and per-credential buckets', () => {
  it('meets 429 within 60 junk-token requests at 40 a minute', async () => {
    // The failure budget (test/security/auth-failures.test.ts) is lifted: this is the address's bucket.
    const app = await limitedApp({ ipPerMinute: 40, keyPerMinute: 10_000, authFailuresPerMinute: 10_000 });
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) {
      const res = await app.request
        .get('/api/pricing')
        .set('Authorization', i % 2 ? junkAgentKey() : `Bearer junk-${i}-${randomBytes(8).toString('hex')}`);
      statuses.push(res.status);
      if (res.status === 429) {
        expectProblem(res, 429, 'rate_limited');
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      }
    }
    expect(statuses.slice(0, 40).every((s) => s === 200)).toBe(true);
    expect(statuses.slice(40).every((s) => s === 429)).toBe(true);
  });

  it('answers health and readiness to an address that is rate limited', async () => {
    const app = await limitedApp({ ipPerMinute: 5 });
    for (let i = 0; i < 5; i++) await app.request.get('/api/pricing').expect(200);
    expectProblem(await app.request.get('/api/pricing'), 429, 'rate_limited');
    for (let i = 0; i < 10; i++) {
      const health = await app.request.get('/api/health').expect(200);
      expect(health.body.status).toBe('ok');
      await app.request.get('/api/v1/readiness').expect(200);
    }
    // The exemption is those two paths, not the address: everything else stays refused.
    expectProblem(await app.request.get('/api/pricing'), 429, 'rate_limited');
    expectProblem(await app.request.get('/api/health/x'), 429, 'rate_limited');
  });

  it('spends an authenticated agent’s own bucket as well as its address’s', async () => {
    const app = await limitedApp({ ipPerMinute: 10_000, keyPerMinute: 5 });
    const agent = await registerAgent(app);
    for (let i = 0; i < 5; i++) await app.request.get('/api/pricing').set(agent.auth).expect(200);
    expectProblem(await app.request.get('/api/pricing').set(agent.auth), 429, 'rate_limited');
    // Anonymous requests from the same address still pass: the key bucket is the agent's alone.
    await app.request.get('/api/pricing').expect(200);
  });
});

describe('budgets spent from local reservations', () => {
  // An address budget of 300 a minute: each web process reserves 3 points of it at a time in Redis.
  it('lets one process spend its whole budget, and not one request more', async () => {
    const app = await limitedApp({ ipPerMinute: 300 });
    let passed = 0;
    for (let i = 0; i < 310; i++) {
      const res = await app.request.get('/api/pricing');
      if (res.status === 200) passed++;
      else expectProblem(res, 429, 'rate_limited');
    }
    expect(passed).toBe(300);
  });

  it('holds the budget across two web processes, within the points they hold unspent', async () => {
    const a = await limitedApp({ ipPerMinute: 300 });
    // A second app on the same counters (same key prefix), with reservations of its own: another process.
    const b = testApp();
    b.deps.rateLimit = { ...a.deps.rateLimit };
    b.deps.queues = new Queues(b.deps.redis, a.deps.queues.prefix);
    apps.push(b);
    // (Until its Redis connection is ready, a process counts in memory alone.)
    expect(await waitReady(b.deps.redis)).toBe(true);
    const statuses: number[] = [];
    for (let i = 0; i < 360; i++) statuses.push((await (i % 2 ? a : b).request.get('/api/pricing')).status);
    const passed = statuses.filter((s) => s === 200).length;
    // Never more than the budget; early by at most the other process's unspent reservation (batch - 1).
    expect(passed).toBeLessThanOrEqual(300);
    expect(passed).toBeGreaterThanOrEqual(298);
    expect(statuses.slice(-40).every((s) => s === 429)).toBe(true);
    // Both processes refuse the address now, and each answers health.
    for (const app of [a, b]) {
      expectProblem(await app.request.get('/api/pricing'), 429, 'rate_limited');
      await app.request.get('/api/health').expect(200);
    }
  });
});

describe('a request costs one point, alone or among many', () => {
  /** The Redis counter of this app's address budget: the points its process reserved this window. */
  const reserved = async (app: TestApp) =>
    Number(
      await app.deps.redis.get(
        `${untagged(app.deps.queues.prefix)}:rl:ip:${sha256Hex('127.0.0.1').slice(0, 32)}`,
      ),
    );

  it('spends exactly N points for N concurrent requests, as for N sequential ones', async () => {
    // 1,200 a minute: the process reserves 12 points at a time.
    const app = await limitedApp({ ipPerMinute: 1200 });
    const server = http.createServer(createApp(app.deps));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
    const get = (path: string) =>
      new Promise<{ status: number; remaining: number }>((resolve, reject) => {
        const port = (server.address() as AddressInfo).port;
        http
          .get({ host: '127.0.0.1', port, path, agent }, (res) => {
            res.resume();
            res.on('end', () =>
              resolve({ status: res.statusCode!, remaining: Number(res.headers['ratelimit-remaining']) }),
            );
          })
          .on('error', reject);
      });
    try {
      // Fifty connections open first (health spends nothing), so the fifty requests arrive together.
      await Promise.all(Array.from({ length: 50 }, () => get('/api/health')));
      const together = await Promise.all(Array.from({ length: 50 }, () => get('/api/services')));
      expect(together.every((r) => r.status === 200)).toBe(true);
      // Each request spent a point of its own: 1,199 down to 1,150, each seen once.
      expect(together.map((r) => r.remaining).sort((a, b) => b - a)).toEqual(
        Array.from({ length: 50 }, (_, i) => 1199 - i),
      );
      // Whole batches in Redis, as few as 50 points take (5 of 12), not a batch a request.
      expect(await reserved(app)).toBe(60);
      for (let i = 0; i < 50; i++) expect((await get('/api/services')).status).toBe(200);
      expect((await get('/api/services')).remaining).toBe(1099);
      expect(await reserved(app)).toBe(108);
    } finally {
      agent.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('admits a pool of 20 in flight its whole budget of createJob, and writes nothing for the rest', async () => {
    // 200 a minute: reservations of 2 points.
    const app = await limitedApp({ ipPerMinute: 200 });
    const jobs = async () => Number((await app.deps.db('jobs').count({ n: '*' }))[0]!.n);
    const before = await jobs();
    const statuses: number[] = [];
    let sent = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (sent < 230) {
          sent++;
          const res = await app.request
            .post('/api/jobs')
            .send({ service: 'attest.timestamp', input: { digest: randomBytes(32).toString('hex') } });
          statuses.push(res.status);
          if (res.status !== 202) expectProblem(res, 429, 'rate_limited');
        }
      }),
    );
    expect(statuses.filter((s) => s === 202)).toHaveLength(200);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30);
    expect(await jobs()).toBe(before + 200);
  });

  it('serves a burst its budget, refuses the rest, and serves it again once the window has passed', async () => {
    // The limiter itself over a two-second window, on the real Redis: 300 points, batches of 3.
    const app = await limitedApp({});
    const keyPrefix = `${untagged(app.deps.queues.prefix)}:rl:short`;
    const store = new RateLimiterRedis({ storeClient: app.deps.redis, keyPrefix, points: 300, duration: 2 });
    const limiter = new BatchedLimiter(store, 300);
    const burst = async (n: number) => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: n }, async () => limiter.consume('bucket')),
      );
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(RateLimiterRes);
      return outcomes.filter((o) => o.status === 'fulfilled').length;
    };
    expect(await burst(340)).toBe(300);
    expect(await burst(20)).toBe(0);
    // The window ends in Redis: the bucket is whole again.
    await eventually(async () => (await app.deps.redis.exists(`${keyPrefix}:bucket`)) === 0, 5000);
    expect(await burst(40)).toBe(40);
  });
});

describe('proving and verifying budgets', () => {
  const prove = (app: TestApp, inputs: Record<string, unknown>, auth?: { Authorization: string }) => {
    const req = app.request.post('/api/proof-workflows/blind-policy/prove');
    if (auth) req.set(auth);
    return req.send({ policy: 'threshold', inputs });
  };
  const unsatisfied = { value: '10', threshold: '11' };

  it('answers the 11th anonymous prove in a minute with 429 and queues nothing', async () => {
    const app = await limitedApp({});
    expect(app.deps.rateLimit.proveAnonPerMinute).toBe(10); // the default
    const before = await proofCount(app);
    for (let i = 0; i < 10; i++) expect((await prove(app, unsatisfied)).status).toBe(422);
    expectProblem(await prove(app, unsatisfied), 429, 'rate_limited');
    // A valid proof is refused as well: the budget is spent before any work.
    expectProblem(await prove(app, { value: '12', threshold: '11' }), 429, 'rate_limited');
    expect(await proofCount(app)).toBe(before);
    // A free agent counts as the network that registered it: no fresh budget from minting one.
    const agent = await registerAgent(app);
    expectProblem(await prove(app, unsatisfied, agent.auth), 429, 'rate_limited');
    // One registered from another network spends that network's budget.
    const elsewhere = await behindProxy(app)
      .post('/api/registry/register')
      .set('X-Forwarded-For', '2001:db8:77:1::9')
      .send({ name: 'elsewhere', walletPublicKey: newWallet().publicKey })
      .expect(201);
    expect((await prove(app, unsatisfied, { Authorization: `Bearer ${elsewhere.body.apiKey}` })).status).toBe(
      422,
    );
  });

  it('gives eight fresh agents from one network no more proving than one', async () => {
    const app = await limitedApp({ proveMaxInFlight: 4, proveAnonPerMinute: 1000 });
    const before = await proofCount(app);
    const agents = [];
    for (let i = 0; i < 8; i++) agents.push(await registerAgent(app, { name: `minted ${i}` }));
    const statuses: number[] = [];
    for (const agent of agents) {
      for (let i = 0; i < 4; i++) {
        statuses.push(
          (await prove(app, { value: String(100 + statuses.length), threshold: '11' }, agent.auth)).status,
        );
      }
    }
    expect(statuses.filter((s) => s === 202)).toHaveLength(4);
    expect(statuses.filter((s) => s === 429)).toHaveLength(28);
    expect(await proofCount(app)).toBe(before + 4);
  });

  it('budgets agent registration per network, IPv6 by its /64', async () => {
    const app = await limitedApp({});
    const proxied = behindProxy(app);
    const register = (from: string) =>
      proxied
        .post('/api/registry/register')
        .set('X-Forwarded-For', from)
        .send({ name: 'minted', walletPublicKey: newWallet().publicKey });
    const agents = async () => Number((await app.deps.db('agents').count({ n: '*' }))[0]!.n);
    const before = await agents();
    const limit = env.AGENT_REGISTRATIONS_PER_HOUR;
    // Every registration from another address of the same /64.
    for (let i = 0; i < limit; i++) await register(`2001:db8:5:6::${(i + 1).toString(16)}`).expect(201);
    expectProblem(await register('2001:db8:5:6:ffff::1'), 429, 'rate_limited');
    expect(await agents()).toBe(before + limit);
    // Another /64 has a budget of its own.
    await register('2001:db8:5:7::1').expect(201);
  });

  it('keeps at most PROVE_MAX_IN_FLIGHT proofs queued per caller', async () => {
    const app = await limitedApp({ proveMaxInFlight: 2 });
    const before = await proofCount(app);
    // No prover runs here: accepted proofs stay queued.
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      ids.push((await prove(app, { value: String(20 + i), threshold: '11' }).expect(202)).body.proof.id);
    }
    expectProblem(await prove(app, { value: '30', threshold: '11' }), 429, 'too_many_in_flight');
    expect(await proofCount(app)).toBe(before + 2);
    // Once one of them is done, the caller may queue another.
    await app.deps.db('proofs').where({ id: ids[0] }).update({ status: 'failed', input_sealed: null });
    await prove(app, { value: '31', threshold: '11' }).expect(202);
    expect(await proofCount(app)).toBe(before + 3);
    // The ended one was dropped from the count, the two still queued were not.
    expectProblem(await prove(app, { value: '32', threshold: '11' }), 429, 'too_many_in_flight');
    expect(await proofCount(app)).toBe(before + 3);
  });

  it('limits Groth16 verifications per address', async () => {
    const app = await limitedApp({ verifyPerMinute: 3 });
    const verify = () => app.request.post('/api/proof-workflows/blind-policy/verify').send({});
    for (let i = 0; i < 3; i++) expect((await verify()).status).toBe(400);
    expectProblem(await verify(), 429, 'rate_limited');
  });
});
