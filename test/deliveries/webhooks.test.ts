// Job webhooks end to end: a job created with `webhook: { url }` has each job and payment state change
// POSTed to a loopback receiver, signed (HMAC-SHA256 with the secret shown once, and the service's
// ed25519 key), one delivery id per change, and redelivered with backoff after a failed attempt.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChain } from '../payments/ganache';
import type { TestApp, TestWorker } from '../helpers';
import type { Chain } from '../payments/ganache';

const chain: Chain = await startChain(1337);
const [payer, treasury] = chain.accounts as [string, string];
Object.assign(process.env, {
  EVM_RPC_URL: chain.url,
  EVM_CONFIRMATIONS: '1',
  CHAIN_RPC_RETRIES: '0',
  TREASURY_EVM: treasury,
  ASSETS_JSON: JSON.stringify({
    ETH: { network: 'eip155:1337' },
    'USDC-ETH': { disabled: true },
    'WBTC-ETH': { disabled: true },
  }),
  RATES_USD: 'ETH=2000',
  PAYMENT_RECHECK_MS: '100',
  PAYMENT_RECHECK_MAX_MS: '300',
  // The receivers are this test's own loopback servers: it opts in to private targets.
  LOGISTICS_ALLOW_PRIVATE_TARGETS: 'true',
});

const { bearer, eventually, sha256Of, testApp, testJobsWorker, waitForJob } = await import('../helpers');
const { createRedis } = await import('../../shared/platform/redis');
const { createDb } = await import('../../shared/platform/db/knex');
const { hmacSha256Hex, verifyEd25519 } = await import('../../shared/platform/crypto');
const { startWorker } = await import('../../workers/pool');
const { paymentsProcessor } = await import('../../workers/processors/payments');
const { deliveriesProcessor } = await import('../../workers/processors/deliveries');
const { retireWebhooks, startWebhookRelay } = await import('../../shared/deliveries/webhooks');
const { a2aPushFormat } = await import('../../shared/a2a/pushes');
const { expireUnpaidJobs } = await import('../../shared/payments/expiry');

interface Delivery {
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: {
    type: string;
    deliveryId: string;
    event: string;
    jobId: string;
    sequence?: number;
    data?: Record<string, unknown>;
    payment?: Record<string, unknown> & { links: Record<string, string> };
  };
  answered: number;
}

/** A loopback receiver; `fail(body)` picks the attempts to answer 500 (redelivery is expected). */
async function receiver(fail: (d: Omit<Delivery, 'answered'>, seen: Delivery[]) => boolean = () => false) {
  const received: Delivery[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const d = { headers: req.headers, raw, body: JSON.parse(raw) as Delivery['body'] };
      const answered = fail(d, received) ? 500 : 204;
      received.push({ ...d, answered });
      res.statusCode = answered;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return {
    url,
    received,
    accepted: () => received.filter((d) => d.answered < 300),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let app: TestApp;
let jobsWorker: TestWorker;
let stop: () => Promise<void>;

beforeAll(() => {
  app = testApp();
  jobsWorker = testJobsWorker();
  const db = createDb();
  const redis = createRedis('worker');
  const workers: Worker[] = [
    startWorker('payments', paymentsProcessor(db, app.deps.queues), redis),
    startWorker('deliveries', deliveriesProcessor(db), redis),
  ];
  const relay = startWebhookRelay(db, app.deps.queues, { a2a: a2aPushFormat }, 25);
  stop = async () => {
    await relay.stop();
    await Promise.all(workers.map((w) => w.close()));
    redis.disconnect();
    await db.destroy();
  };
});
afterAll(async () => {
  await stop?.();
  await jobsWorker?.close();
  await app?.close();
  await chain.close();
});

const db = () => app.deps.db;
const createJob = async (service: string, input: unknown, url: string) =>
  app.request.post('/api/jobs').send({ service, input, webhook: { url } });

function expectSigned(d: Delivery, secret: string, publicKey: string) {
  const ts = d.headers['x-delivery-timestamp'] as string;
  expect(d.headers['x-delivery-signature']).toBe(`sha256=${hmacSha256Hex(secret, `${ts}.${d.raw}`)}`);
  expect(d.headers['x-delivery-signature']).not.toBe(`sha256=${hmacSha256Hex(secret, `${ts}.${d.raw} `)}`);
  expect(
    verifyEd25519(publicKey, `${ts}.${d.raw}`, d.headers['x-delivery-signature-ed25519'] as string),
  ).toBe(true);
  expect(d.headers['x-delivery-id']).toBe(d.body.deliveryId);
  expect(d.body.type).toBe('proof-exchange.event/v1');
}

describe('job webhooks', () => {
  it('delivers every job and payment state change of a paid job, signed, redelivering a failed one', async () => {
    // The first attempt of the `running` delivery fails: it must come again, same id, next attempt.
    const hooks = await receiver(
      (d, seen) => d.body.event === 'job.running' && !seen.some((s) => s.body.event === 'job.running'),
    );
    try {
      const created = await createJob(
        'attest.batch',
        { digests: [await sha256Of(`hook ${Math.random()}`)] },
        hooks.url,
      );
      expect(created.status).toBe(402);
      const jobId = created.body.job.id as string;
      const auth = bearer(created.body.accessToken);
      const { secret } = created.body.webhook;
      expect(created.body.webhook).toMatchObject({ url: hooks.url });
      expect(secret).toMatch(/^whsec_[\w-]{43}$/);
      expect(created.body.webhook.events).toEqual(
        expect.arrayContaining(['job.succeeded', 'payment.confirmed']),
      );
      // The secret is shown once: the job's status never carries it.
      const status = await app.request.get(`/api/jobs/${jobId}`).set(auth).expect(200);
      expect(JSON.stringify(status.body)).not.toContain(secret);

      const quoted = created.body.payment.quotes.find((q: { asset: string }) => q.asset === 'ETH').amount;
      const tx = await chain.sendEth(payer, treasury, BigInt(quoted));
      await app.request
        .post(`/api/jobs/${jobId}/payment`)
        .set(auth)
        .send({ asset: 'ETH', txRef: tx })
        .expect(202);
      expect((await waitForJob(app.request, jobId, created.body.accessToken)).status).toBe('succeeded');

      const expected = [
        'job.awaiting_payment',
        'payment.pending',
        'payment.confirmed',
        'job.queued',
        'job.running',
        'job.succeeded',
      ];
      await eventually(async () => hooks.accepted().length >= expected.length, 15_000);
      const accepted = hooks.accepted();
      expect(accepted.map((d) => d.body.event).sort()).toEqual([...expected].sort());
      expect(new Set(accepted.map((d) => d.body.deliveryId)).size).toBe(expected.length);

      const { publicKey } = (await app.request.get('/api/health').expect(200)).body.signingKey;
      for (const d of accepted) {
        expectSigned(d, secret, publicKey);
        expect(d.body.jobId).toBe(jobId);
      }
      const by = (event: string) => accepted.find((d) => d.body.event === event)!;

      // Job events come in the job's own order, with its event data.
      const jobEvents = accepted.filter((d) => d.body.event.startsWith('job.'));
      const order = [...jobEvents]
        .sort((a, b) => a.body.sequence! - b.body.sequence!)
        .map((d) => d.body.event);
      expect(order).toEqual(['job.awaiting_payment', 'job.queued', 'job.running', 'job.succeeded']);
      const confirmed = by('payment.confirmed').body.payment!;
      expect(confirmed).toMatchObject({ status: 'confirmed', settlement: 'exact', txRef: tx.toLowerCase() });
      expect(confirmed.links.receipt).toMatch(/\/api\/receipts\/rcpt_/);
      expect(by('job.queued').body.data).toMatchObject({ paymentId: confirmed.id });
      expect(by('payment.pending').body.payment).toMatchObject({ status: 'pending', id: confirmed.id });

      // The failed attempt was delivered again: same delivery id, attempt 2, and the row says so.
      const running = hooks.received.filter((d) => d.body.event === 'job.running');
      expect(running.map((d) => [d.answered, d.headers['x-delivery-attempt']])).toEqual([
        [500, '1'],
        [204, '2'],
      ]);
      expect(running[0]!.body.deliveryId).toBe(running[1]!.body.deliveryId);
      const row = await db()('logistics_requests').where({ id: running[1]!.body.deliveryId }).first();
      expect(row).toMatchObject({ status: 'delivered', attempts: 2, last_status_code: 204 });

      // The job is over: the relay stops looking at it.
      const sub = await db()('job_webhooks').where({ job_id: jobId }).first();
      expect(sub.active).toBe(false);
    } finally {
      await hooks.close();
    }
  });

  it('follows a free job too, without its progress, and writes nothing for a job without a webhook', async () => {
    const hooks = await receiver();
    try {
      const created = await createJob(
        'attest.timestamp',
        { digest: await sha256Of(`free ${Math.random()}`) },
        hooks.url,
      );
      expect(created.status).toBe(202);
      const jobId = created.body.job.id as string;
      expect((await waitForJob(app.request, jobId, created.body.accessToken)).status).toBe('succeeded');
      await eventually(async () => hooks.accepted().length >= 3);
      // Wait a few relay rounds: nothing else may come.
      await new Promise((r) => setTimeout(r, 200));
      expect(hooks.accepted().map((d) => d.body.event)).toEqual(
        expect.arrayContaining(['job.queued', 'job.running', 'job.succeeded']),
      );
      expect(hooks.received).toHaveLength(3);

      const plain = await app.request
        .post('/api/jobs')
        .send({ service: 'attest.timestamp', input: { digest: await sha256Of(`plain ${Math.random()}`) } })
        .expect(202);
      expect(plain.body.webhook).toBeUndefined();
      expect((await waitForJob(app.request, plain.body.job.id, plain.body.accessToken)).status).toBe(
        'succeeded',
      );
      expect(await db()('logistics_requests').where({ job_id: plain.body.job.id })).toHaveLength(0);
      expect(await db()('job_webhooks').where({ job_id: plain.body.job.id })).toHaveLength(0);
    } finally {
      await hooks.close();
    }
  });

  it('tells of an unpaid job expiring, and lets go of it once no late payment can revive it', async () => {
    const hooks = await receiver();
    try {
      const created = await createJob(
        'attest.batch',
        { digests: [await sha256Of(`exp ${Math.random()}`)] },
        hooks.url,
      );
      const jobId = created.body.job.id as string;
      const at = (secondsAgo: number) => new Date(Date.now() - secondsAgo * 1000);
      await db()('quotes')
        .where({ job_id: jobId })
        .update({ expires_at: at(60) });
      await db()('jobs')
        .where({ id: jobId })
        .update({ expires_at: at(60) });
      await expireUnpaidJobs(db());
      await eventually(async () => hooks.accepted().some((d) => d.body.event === 'job.expired'));
      // Inside the watch window the subscription stays: a late payment would revive the job.
      expect(await retireWebhooks(db())).toBe(0);
      expect((await db()('job_webhooks').where({ job_id: jobId }).first()).active).toBe(true);
      await db()('jobs')
        .where({ id: jobId })
        .update({ expires_at: at(2 * 3600) });
      expect(await retireWebhooks(db())).toBe(1);
      expect((await db()('job_webhooks').where({ job_id: jobId }).first()).active).toBe(false);
    } finally {
      await hooks.close();
    }
  });

  it('refuses a bad webhook before writing the job', async () => {
    const jobs = await db()('jobs').count({ n: '*' });
    const input = { digest: await sha256Of('refused') };
    const cases: Array<[unknown, number, string]> = [
      [{ url: 'ftp://127.0.0.1/hooks' }, 400, 'validation_failed'],
      [{ url: 'not a url' }, 400, 'validation_failed'],
      [{ url: 'http://127.0.0.1/hooks', secret: 'mine' }, 400, 'validation_failed'],
      [{ url: 'http://user:pw@127.0.0.1/hooks' }, 422, 'target_not_allowed'],
    ];
    for (const [webhook, status, code] of cases) {
      const res = await app.request.post('/api/jobs').send({ service: 'attest.timestamp', input, webhook });
      expect(res.status).toBe(status);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe(code);
    }
    expect(await db()('jobs').count({ n: '*' })).toEqual(jobs);
  });
});
