// Credentials and what leaks around them: Basic auth works for Bull Board only (a browser's cached
// login is no credential on /api, not even for an empty form post), the agent card is not cached for
// others when its origin comes from the Host header, /metrics can require a token and the worker's
// listener stays on loopback, a second agent with the referrer's wallet cannot use its code, provider
// probes are reused for a few seconds, and production needs BASE_URL.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { env, parseEnv } from '../../shared/platform/env';
import { productionSettingIssues } from '../../shared/platform/startup-checks';
import { startMetricsServer } from '../../shared/platform/metrics';
import { expectProblem, newWallet } from '../exchange/fixtures';
import { sha256Of, testApp } from '../helpers';
import type { TestApp } from '../helpers';

const TOKEN = 'op_test_token_0123456789';
const OPERATOR = { Authorization: `Bearer ${TOKEN}` };
const basic = `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}`;

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(() => app.close());

describe('Basic auth', () => {
  it('is refused on /api, even an empty form post that would finalize an auction', async () => {
    const now = Date.now();
    const auction = await app.request
      .post('/api/auctions')
      .set(OPERATOR)
      .send({
        title: 'Lot 1',
        asset: 'USDC-SOL',
        pricing: 'first',
        biddingEndsAt: new Date(now + 60_000).toISOString(),
        revealEndsAt: new Date(now + 120_000).toISOString(),
      })
      .expect(201);
    const id = auction.body.auctionId as string;
    const before = await app.deps.db('auctions').where({ id }).first();
    const res = await app.request
      .post(`/api/auctions/${id}/finalize`)
      .set('Authorization', basic)
      .set('Content-Type', 'application/x-www-form-urlencoded')
      .send('');
    expectProblem(res, 401, 'unauthorized');
    expect(await app.deps.db('auctions').where({ id }).first()).toEqual(before);
    expectProblem(await app.request.get('/api/pricing').set('Authorization', basic), 401, 'unauthorized');
    expectProblem(await app.request.get('/api/revenue').set('Authorization', basic), 401, 'unauthorized');
  });

  it('still opens Bull Board, whose changes must come from its own page', async () => {
    await app.request.get('/admin/queues').set('Authorization', basic).expect(200);
    const res = await app.request
      .put('/admin/queues/api/queues/jobs/pause')
      .set('Authorization', basic)
      .set('Origin', 'https://attacker.example');
    expectProblem(res, 403, 'cross_origin_refused');
  });
});

describe('origins taken from the request', () => {
  it('marks the agent card uncacheable and varying by Host when BASE_URL is unset', async () => {
    const res = await app.request.get('/.well-known/agent-card.json').set('Host', 'evil.example').expect(200);
    expect(res.body.supportedInterfaces[0].url).toContain('evil.example');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.vary).toMatch(/\bHost\b/);
    const discovery = await app.request.get('/api/discovery').set('Host', 'evil.example').expect(200);
    expect(discovery.headers['cache-control']).toBe('no-store');
  });

  it('caches the card publicly when the address is configured, and ignores Host', async () => {
    const configured = testApp({ urls: { base: 'https://exchange.example' } });
    try {
      const res = await configured.request
        .get('/.well-known/agent-card.json')
        .set('Host', 'evil.example')
        .expect(200);
      expect(JSON.stringify(res.body)).not.toContain('evil.example');
      expect(res.headers['cache-control']).toMatch(/public/);
    } finally {
      await configured.close();
    }
  });

  it('requires BASE_URL in production: one of the start-up refusal lines of every process type', () => {
    const bare = parseEnv({ NODE_ENV: 'production', SERVICE_SIGNING_KEY: 'a'.repeat(64) });
    for (const kind of ['web', 'worker', 'prover', 'release'] as const)
      expect(productionSettingIssues(bare, kind).join('\n')).toMatch(/^BASE_URL is not set/m);
    const set = parseEnv({ NODE_ENV: 'production', BASE_URL: 'https://exchange.example' });
    expect(set.BASE_URL).toBe('https://exchange.example');
    expect(productionSettingIssues(set, 'web').join('\n')).not.toMatch(/^BASE_URL/m);
  });
});

describe('metrics', () => {
  it('needs METRICS_TOKEN on the web /metrics when one is configured', async () => {
    const guarded = testApp({ metricsToken: 'metrics-token-0123456789' });
    try {
      expectProblem(await guarded.request.get('/metrics'), 401, 'unauthorized');
      expectProblem(
        await guarded.request.get('/metrics').set('Authorization', 'Bearer wrong-token-0123456789'),
        401,
        'unauthorized',
      );
      await guarded.request
        .get('/metrics')
        .set('Authorization', 'Bearer metrics-token-0123456789')
        .expect(200);
    } finally {
      await guarded.close();
    }
  });

  it('keeps the worker’s listener on loopback by default, behind the token', async () => {
    expect(parseEnv({}).WORKER_METRICS_HOST).toBe('127.0.0.1');
    const server = startMetricsServer({
      port: 0,
      host: parseEnv({}).WORKER_METRICS_HOST,
      access: { token: 'metrics-token-0123456789' },
    });
    await new Promise((r) => server.once('listening', r));
    try {
      const { address, port } = server.address() as AddressInfo;
      expect(address).toBe('127.0.0.1');
      const get = (auth?: string) =>
        fetch(`http://127.0.0.1:${port}/metrics`, auth ? { headers: { authorization: auth } } : {});
      expect((await get()).status).toBe(401);
      expect((await get('Bearer metrics-token-0123456789')).status).toBe(200);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('self-referral', () => {
  it('refuses a referral code to a second agent registered with the referrer’s wallet', async () => {
    const wallet = newWallet();
    const register = async (name: string) =>
      (
        await app.request
          .post('/api/registry/register')
          .send({ name, walletPublicKey: wallet.publicKey })
          .expect(201)
      ).body.apiKey as string;
    const referrer = { Authorization: `Bearer ${await register('Referrer')}` };
    const sockPuppet = { Authorization: `Bearer ${await register('Sock puppet')}` };
    const code = (await app.request.post('/api/referrals').set(referrer).send({}).expect(201)).body.referral
      .code as string;
    const jobs = Number((await app.deps.db('jobs').count({ n: '*' }))[0]!.n);
    const res = await app.request
      .post(`/api/jobs?ref=${code}`)
      .set(sockPuppet)
      .send({ service: 'attest.timestamp', input: { digest: await sha256Of('sock') } });
    expectProblem(res, 422, 'self_referral');
    expect(Number((await app.deps.db('jobs').count({ n: '*' }))[0]!.n)).toBe(jobs);
  });
});

describe('provider status probes', () => {
  it('are reused for PROVIDER_STATUS_CACHE_MS rather than run upstream per call', async () => {
    let hits = 0;
    const runtime = http.createServer((_req, res) => {
      hits++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}');
    });
    await new Promise<void>((r) => runtime.listen(0, '127.0.0.1', r));
    const saved = { url: env.LOCAL_AI_URL, ttl: env.PROVIDER_STATUS_CACHE_MS };
    env.LOCAL_AI_URL = `http://127.0.0.1:${(runtime.address() as AddressInfo).port}`;
    env.PROVIDER_STATUS_CACHE_MS = 60_000;
    try {
      for (let i = 0; i < 5; i++) await app.request.get('/api/intelligence/providers/status').expect(200);
      expect(hits).toBe(1);
      for (let i = 0; i < 5; i++) await app.request.get('/api/v1/provider-integrations/status').expect(200);
      expect(hits).toBe(2);
    } finally {
      env.LOCAL_AI_URL = saved.url;
      env.PROVIDER_STATUS_CACHE_MS = saved.ttl;
      await new Promise<void>((r) => runtime.close(() => r()));
    }
  });
});
