// Every per-address budget counts an IPv6 client by its network (a /64 by default), not by its
// address: a subscriber is handed a whole /64, so counting addresses would give it 2^64 budgets. The
// attacks rotate through addresses of one /64 (through one trusted proxy hop, as TRUST_PROXY=1 says)
// against the request limit, the TRIAL limit and the anonymous idempotency scope.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { env } from '../../shared/platform/env';
import { Queues } from '../../shared/platform/queues';
import { waitReady } from '../../shared/platform/redis';
import { trialProof } from '../licensing/helpers';
import { expectProblem, newWallet } from '../exchange/fixtures';
import { behindProxy, sha256Of, testApp } from '../helpers';
import type { TestApp } from '../helpers';

let app: TestApp;
let proxied: ReturnType<typeof behindProxy>;
beforeAll(async () => {
  app = testApp();
  // Counters of their own (a key prefix of this file's own), starting at zero.
  app.deps.queues = new Queues(
    app.deps.redis,
    `${app.deps.queues.prefix}:t${randomBytes(3).toString('hex')}`,
  );
  expect(await waitReady(app.deps.redis)).toBe(true);
  proxied = behindProxy(app);
});
afterAll(() => app.close());

const count = async (table: string) => Number((await app.deps.db(table).count({ n: '*' }))[0]!.n);
/** The i-th address of the /64 `prefix` (e.g. 2001:db8:1:2), spread over its 64 host bits. */
const inNetwork = (prefix: string, i: number) =>
  [prefix, ...[i * 7919 + 1, i * 31, i, i + 1].map((n) => (n % 0x10000).toString(16))].join(':');

describe('an IPv6 /64 is one client', () => {
  it('gets one request budget: 40 addresses of a /64 meet 429 after 30 a minute; another /64 passes', async () => {
    const saved = app.deps.rateLimit;
    app.deps.rateLimit = { ...saved, enabled: true, ipPerMinute: 30 };
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 40; i++) {
        const res = await proxied.get('/api/pricing').set('X-Forwarded-For', inNetwork('2001:db8:40:1', i));
        statuses.push(res.status);
        if (res.status === 429) {
          expectProblem(res, 429, 'rate_limited');
          expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
        }
      }
      expect(statuses.slice(0, 30).every((s) => s === 200)).toBe(true);
      expect(statuses.slice(30).every((s) => s === 429)).toBe(true);
      // The next /64 over has a budget of its own; so does an IPv4 client.
      await proxied.get('/api/pricing').set('X-Forwarded-For', '2001:db8:40:2::1').expect(200);
      await proxied.get('/api/pricing').set('X-Forwarded-For', '203.0.113.40').expect(200);
    } finally {
      app.deps.rateLimit = saved;
    }
  });

  it('gets TRIAL_PER_ADDRESS_PER_DAY trials: six addresses of a /64 get one, nothing more is written', async () => {
    const saved = env.TRIAL_PER_ADDRESS_PER_DAY;
    env.TRIAL_PER_ADDRESS_PER_DAY = 1;
    try {
      const claim = async (organization: string, from: string) =>
        proxied
          .post('/api/v1/commercial/checkout/prepare')
          .set('X-Forwarded-For', from)
          .send({
            license: 'TRIAL',
            organization,
            email: 'trial@example.test',
            ...(await trialProof(app.request, newWallet())),
          });
      const [checkouts, licenses] = [await count('checkouts'), await count('licenses')];
      // Distinct wallets and organizations: only the network is shared.
      const first = await claim('Hexa One Ltd', inNetwork('2001:db8:77:1', 0));
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      for (let i = 1; i < 6; i++) {
        const refused = await claim(`Hexa Number${i} Labs`, inNetwork('2001:db8:77:1', i));
        expectProblem(refused, 429, 'trial_limit_reached');
        expect(refused.headers['retry-after']).toBeDefined();
      }
      expect(await count('checkouts')).toBe(checkouts + 1);
      expect(await count('licenses')).toBe(licenses + 1);
      // Another /64 is not held to this one's share.
      expect((await claim('Other Network Gmbh', '2001:db8:77:2::1')).status).toBe(201);
      expect(await count('licenses')).toBe(licenses + 2);
    } finally {
      env.TRIAL_PER_ADDRESS_PER_DAY = saved;
    }
  });

  it('shares one anonymous idempotency scope: a key used from one address replays to another of its /64 only', async () => {
    const body = { service: 'attest.timestamp', input: { digest: await sha256Of(`scope ${Math.random()}`) } };
    const key = `network-scope-${randomBytes(8).toString('hex')}`;
    const create = (from: string) =>
      proxied.post('/api/jobs').set('X-Forwarded-For', from).set('Idempotency-Key', key).send(body);
    const jobs = await count('jobs');
    const first = await create('2001:db8:51:1::a').expect(202);
    // Another address of the same /64 is the same anonymous caller: the first request's job, named
    // (its reply carried the job's token, which is never replayed to an anonymous caller), no new job.
    const again = await create('2001:db8:51:1:ffff:ffff:ffff:fffe').expect(409);
    expect(again.body.code).toBe('idempotency_reply_withheld');
    expect(again.headers.location).toBe(first.headers.location);
    expect(await count('jobs')).toBe(jobs + 1);
    // Another /64 has its own keys: the same key there is a new request.
    const elsewhere = await create('2001:db8:51:2::a').expect(202);
    expect(elsewhere.headers['idempotency-replayed']).toBeUndefined();
    expect(elsewhere.body.job.id).not.toBe(first.body.job.id);
    expect(await count('jobs')).toBe(jobs + 2);
  });
});
