// Guessing a credential goes nowhere fast: every mount (Bull Board, /metrics, the OpenAPI documents,
// /docs, problem pages, the agent card) sits behind the per-network rate limiter, and each presented
// credential that authenticates nothing (a wrong operator token or Bull Board password, a wrong
// METRICS_TOKEN, a junk Bearer key) spends from a small per-network budget, AUTH_FAILURES_PER_MINUTE.
// Once it is spent, the network's guessable credentials (the operator token, a metrics token, a Bull
// Board login) are refused with 429 before they are checked — the right one included — while another
// network's are not, nor a key this service issued (no budget makes a right one a guess).
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { env } from '../../shared/platform/env';
import { Queues } from '../../shared/platform/queues';
import { waitReady } from '../../shared/platform/redis';
import { expectProblem, newWallet } from '../exchange/fixtures';
import { behindProxy, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import type { AppDeps } from '../../api/deps';

const TOKEN = 'op_test_token_0123456789';
const basic = (password: string) => `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
const guess = () => `guess-${randomBytes(12).toString('hex')}`;

const apps: TestApp[] = [];
afterAll(async () => {
  for (const a of apps) await a.close();
});

/** An app with its own limits and counters (its own key prefix, so they start at zero), behind one proxy hop. */
async function limitedApp(
  rateLimit: Partial<AppDeps['rateLimit']> = {},
  overrides: Partial<AppDeps> = {},
): Promise<{ app: TestApp; from: (address: string) => Client }> {
  const app = testApp(overrides);
  app.deps.rateLimit = { ...app.deps.rateLimit, enabled: true, ...rateLimit };
  app.deps.queues = new Queues(
    app.deps.redis,
    `${app.deps.queues.prefix}:t${randomBytes(3).toString('hex')}`,
  );
  expect(await waitReady(app.deps.redis)).toBe(true);
  apps.push(app);
  const proxied = behindProxy(app);
  const from = (address: string): Client => ({
    get: (path) => proxied.get(path).set('X-Forwarded-For', address),
    post: (path) => proxied.post(path).set('X-Forwarded-For', address),
    put: (path) => proxied.put(path).set('X-Forwarded-For', address),
  });
  return { app, from };
}

/** Requests from one client address (through the trusted proxy hop). */
interface Client {
  get(path: string): ReturnType<ReturnType<typeof behindProxy>['get']>;
  post(path: string): ReturnType<ReturnType<typeof behindProxy>['post']>;
  put(path: string): ReturnType<ReturnType<typeof behindProxy>['put']>;
}

/** Sends `n` requests one after another; returns their statuses. */
async function burst(n: number, send: (i: number) => PromiseLike<{ status: number }>): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push((await send(i)).status);
  return statuses;
}

const firstRefusal = (statuses: number[]) => statuses.indexOf(429);

describe('failed operator authentication', () => {
  it('meets 429 at Bull Board after AUTH_FAILURES_PER_MINUTE wrong guesses from one network; another network’s right token still works', async () => {
    const { app, from } = await limitedApp();
    const limit = env.AUTH_FAILURES_PER_MINUTE;
    expect(limit).toBe(20); // the default
    const jobs = app.deps.queues.get('jobs');
    // The attacker rotates through addresses of one IPv6 /64, Bearer and Basic, reads and a pause.
    const statuses = await burst(60, (i) => {
      const attacker = from(`2001:db8:ad:1::${(i + 1).toString(16)}`);
      if (i % 3 === 0) return attacker.get('/admin/queues').set('Authorization', `Bearer ${guess()}`);
      if (i % 3 === 1) return attacker.get('/admin/queues/api/queues').set('Authorization', basic(guess()));
      return attacker
        .put('/admin/queues/api/queues/jobs/pause')
        .set('Authorization', basic(guess()))
        .set('Origin', 'http://127.0.0.1');
    });
    expect(statuses.slice(0, limit).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(limit).every((s) => s === 429)).toBe(true);
    expect(await jobs.isPaused()).toBe(false);

    const refused = await from('2001:db8:ad:1::ffff')
      .get('/admin/queues')
      .set('Authorization', basic(guess()));
    expectProblem(refused, 429, 'rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // While the window lasts, the attacker's network is refused before any check: a right guess is
    // not confirmed.
    expectProblem(
      await from('2001:db8:ad:1::1').get('/admin/queues').set('Authorization', `Bearer ${TOKEN}`),
      429,
      'rate_limited',
    );
    // The operator elsewhere is not held to it.
    await from('198.51.100.20').get('/admin/queues').set('Authorization', basic(TOKEN)).expect(200);
    await from('198.51.100.20').get('/admin/queues').set('Authorization', `Bearer ${TOKEN}`).expect(200);
    // Nor is anyone without a credential on the attacker's network.
    await from('2001:db8:ad:1::1').get('/openapi.json').expect(200);
  });

  it('meets 429 after AUTH_FAILURES_PER_MINUTE wrong METRICS_TOKEN guesses', async () => {
    const metricsToken = 'metrics-token-0123456789';
    const { from } = await limitedApp({ authFailuresPerMinute: 5 }, { metricsToken });
    const statuses = await burst(12, () =>
      from('203.0.113.40').get('/metrics').set('Authorization', `Bearer ${guess()}`),
    );
    expect(statuses).toEqual([...Array(5).fill(401), ...Array(7).fill(429)]);
    expectProblem(
      await from('203.0.113.40').get('/metrics').set('Authorization', `Bearer ${metricsToken}`),
      429,
      'rate_limited',
    );
    await from('203.0.113.41').get('/metrics').set('Authorization', `Bearer ${metricsToken}`).expect(200);
    // A right token is no failure: scraping never spends the budget.
    const scrapes = await burst(8, () =>
      from('203.0.113.42').get('/metrics').set('Authorization', `Bearer ${metricsToken}`),
    );
    expect(scrapes.every((s) => s === 200)).toBe(true);
  });

  it('meets 429 after AUTH_FAILURES_PER_MINUTE junk Bearer tokens on /api, whatever the route', async () => {
    const { app, from } = await limitedApp({ authFailuresPerMinute: 10 });
    const referrals = async () => Number((await app.deps.db('referrals').count({ n: '*' }))[0]!.n);
    const before = await referrals();
    const junk = [
      () => `Bearer ${guess()}`,
      () => `Bearer ak_${randomBytes(32).toString('base64url')}`,
      () => `Bearer lk_${randomBytes(32).toString('base64url')}`,
    ];
    const statuses = await burst(30, (i) => {
      const auth = junk[i % 3]!();
      const attacker = from('198.51.100.60');
      // An operator route, an agent route that writes, a public route.
      if (i % 3 === 0) return attacker.get('/api/revenue').set('Authorization', auth);
      if (i % 3 === 1) return attacker.post('/api/referrals').set('Authorization', auth).send({});
      return attacker.get('/api/pricing').set('Authorization', auth);
    });
    expect(firstRefusal(statuses)).toBe(10);
    expect(statuses.slice(10).every((s) => s === 429)).toBe(true);
    expect(await referrals()).toBe(before);

    // The right operator token from that network is refused unchecked: it is configured, so it
    // could be a guess, and a right guess in a spent window is not confirmed.
    expectProblem(
      await from('198.51.100.60').get('/api/revenue').set('Authorization', `Bearer ${TOKEN}`),
      429,
      'rate_limited',
    );
    // A key this service issued carries 256 random bits: no budget makes it a guess, so the honest
    // clients of that network keep using theirs, while each further junk key still meets 429.
    const agent = await from('198.51.100.61')
      .post('/api/registry/register')
      .send({ name: 'honest', walletPublicKey: newWallet().publicKey })
      .expect(201);
    const auth = { Authorization: `Bearer ${agent.body.apiKey}` };
    await from('198.51.100.60').post('/api/referrals').set(auth).send({}).expect(201);
    expectProblem(
      await from('198.51.100.60')
        .post('/api/referrals')
        .set('Authorization', `Bearer ak_${randomBytes(32).toString('base64url')}`)
        .send({}),
      429,
      'rate_limited',
    );
    expect(await referrals()).toBe(before + 1);
    // Without a credential, the attacker's network is served as before.
    await from('198.51.100.60').get('/api/pricing').expect(200);
  });

  it('does not count the payments provider’s access tokens, which the service passes on unread', async () => {
    const { from } = await limitedApp({ authFailuresPerMinute: 3 });
    const wallet = newWallet().publicKey;
    const statuses = await burst(8, () =>
      from('203.0.113.70')
        .get(`/api/v1/${env.PAYMENTS_PROVIDER_SLUG}/balances/${wallet}`)
        .set('Authorization', `Bearer ${guess()}`),
    );
    expect(statuses.includes(429)).toBe(false);
    // The budget is untouched: the first junk token elsewhere is a plain 401.
    expectProblem(
      await from('203.0.113.70').get('/api/revenue').set('Authorization', `Bearer ${guess()}`),
      401,
      'unauthorized',
    );
  });
});

describe('capabilities are not failed credentials', () => {
  it('lets a job’s creator follow it with its token more often than the failure budget', async () => {
    const { from } = await limitedApp({ authFailuresPerMinute: 3 });
    const created = await from('203.0.113.80')
      .post('/api/jobs')
      .send({ service: 'attest.timestamp', input: { digest: 'cd'.repeat(32) } })
      .expect(202);
    const statuses = await burst(10, () =>
      from('203.0.113.80')
        .get(`/api/jobs/${created.body.job.id as string}`)
        .set('Authorization', `Bearer ${created.body.accessToken as string}`),
    );
    expect(statuses.every((s) => s === 200)).toBe(true);
    // The budget is untouched: junk keys are still counted from the first.
    expectProblem(
      await from('203.0.113.80').get('/api/revenue').set('Authorization', `Bearer ${guess()}`),
      401,
      'unauthorized',
    );
  });
});

describe('every mount behind the rate limiter', () => {
  it.each([
    ['/admin/queues'],
    ['/metrics'],
    ['/openapi.json'],
    ['/openapi/platform.json'],
    ['/docs/'],
    ['/problems/rate_limited'],
    ['/.well-known/agent-card.json'],
  ])('answers %s with 429 once the network spent its requests', async (path) => {
    const { from } = await limitedApp({ ipPerMinute: 3 });
    const client = from('2001:db8:1:9::1');
    for (let i = 0; i < 3; i++) expect((await client.get(path)).status).not.toBe(429);
    const res = await from('2001:db8:1:9::2').get(path);
    expectProblem(res, 429, 'rate_limited');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    // Another network is served.
    expect((await from('2001:db8:1:a::1').get(path)).status).not.toBe(429);
  });
});
