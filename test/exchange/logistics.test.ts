// requestLogistics end to end: a real loopback receiver gets the job's result as a signed POST
// (HMAC-SHA256 with the secret returned once, and the service's ed25519 key), retried after a 500;
// polling and agent hand-off; a delivery that waits for its job; the refusals.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../shared/platform/db/knex';
import type { Db } from '../../shared/platform/db/knex';
import { hmacSha256Hex, verifyEd25519 } from '../../shared/platform/crypto';
import { env } from '../../shared/platform/env';
import { createRedis } from '../../shared/platform/redis';
import { startWorker } from '../../workers/pool';
import { deliveriesProcessor } from '../../workers/processors/deliveries';
import { eventually, sha256Of, testApp, testJobsWorker } from '../helpers';
import type { TestApp, TestWorker } from '../helpers';
import { expectProblem, registerAgent } from './fixtures';
import type { TestAgent } from './fixtures';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A loopback HTTP receiver answering with the given statuses in turn (then the last one). */
async function receiver(statuses: number[]) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.statusCode = statuses[Math.min(received.length - 1, statuses.length - 1)]!;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, received, close: () => new Promise<void>((r) => server.close(() => r())) };
}

let app: TestApp;
let jobs: TestWorker | undefined;
let db: Db;
let deliveries: Worker;
let deliveriesRedis: ReturnType<typeof createRedis>;
let buyer: TestAgent;

beforeAll(async () => {
  // The receivers below are this test's own loopback servers: it opts in to private targets.
  env.LOGISTICS_ALLOW_PRIVATE_TARGETS = true;
  app = testApp();
  db = createDb();
  deliveriesRedis = createRedis('worker');
  deliveries = startWorker('deliveries', deliveriesProcessor(db), deliveriesRedis);
  buyer = await registerAgent(app, { name: 'Buyer' });
});
afterAll(async () => {
  await deliveries.close();
  deliveriesRedis.disconnect();
  await jobs?.close();
  await db.destroy();
  await app.close();
});

async function newJob(auth?: { Authorization: string }) {
  const req = app.request.post('/api/jobs');
  if (auth) req.set(auth);
  const res = await req.send({
    service: 'attest.timestamp',
    input: { digest: await sha256Of(String(Math.random())) },
  });
  expect(res.status).toBe(202);
  return {
    jobId: res.body.job.id as string,
    /** What opens an anonymous job: its access token. */
    token: { Authorization: `Bearer ${res.body.accessToken as string}` },
  };
}

const row = (id: string) => app.deps.db('logistics_requests').where({ id }).first();

describe('requestLogistics', () => {
  it('waits for the job, then POSTs the signed result, retrying after a 500', async () => {
    const target = await receiver([500, 200]);
    try {
      const { jobId } = await newJob(buyer.auth);
      const res = await app.request
        .post('/api/logistics/request')
        .set(buyer.auth)
        .send({ jobId, method: 'webhook', targetUrl: target.url })
        .expect(202);
      const { request, secret } = res.body;
      expect(request).toMatchObject({ jobId, method: 'webhook', status: 'queued', attempts: 0 });
      expect(secret).toMatch(/^whsec_/);

      // No jobs worker yet: the delivery waits for the job without spending attempts.
      await eventually(async () => {
        const queued = await app.deps.queues.get('deliveries').getJob(request.id);
        return (await queued?.getState()) === 'delayed';
      });
      expect(target.received).toHaveLength(0);
      expect(await row(request.id)).toMatchObject({ status: 'queued', attempts: 0 });

      jobs = testJobsWorker();
      const done = await eventually(async () => {
        const r = await row(request.id);
        return r.status === 'delivered' && r;
      });
      expect(done).toMatchObject({ attempts: 2, last_status_code: 200 });
      expect(target.received).toHaveLength(2);

      const { publicKey } = (await app.request.get('/api/discovery').expect(200)).body.receiptPublicKey;
      for (const [i, hit] of target.received.entries()) {
        const ts = hit.headers['x-delivery-timestamp'] as string;
        expect(hit.headers['x-delivery-id']).toBe(request.id);
        expect(hit.headers['x-delivery-attempt']).toBe(String(i + 1));
        expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(60);
        expect(hit.headers['x-delivery-signature']).toBe(
          `sha256=${hmacSha256Hex(secret, `${ts}.${hit.body}`)}`,
        );
        expect(hit.headers['x-delivery-signature']).not.toBe(
          `sha256=${hmacSha256Hex('whsec_other', `${ts}.${hit.body}`)}`,
        );
        expect(
          verifyEd25519(
            publicKey,
            `${ts}.${hit.body}`,
            hit.headers['x-delivery-signature-ed25519'] as string,
          ),
        ).toBe(true);
        expect(
          verifyEd25519(
            publicKey,
            `${ts}.${hit.body}x`,
            hit.headers['x-delivery-signature-ed25519'] as string,
          ),
        ).toBe(false);
      }
      const body = JSON.parse(target.received[1]!.body);
      expect(body).toMatchObject({
        type: 'proof-exchange.delivery/v1',
        deliveryId: request.id,
        jobId,
        status: 'succeeded',
      });
      expect(body.result.digest).toBeTruthy();
      expect(body.links.job).toMatch(new RegExp(`/api/jobs/${jobId}$`));
      // The secret is never stored anywhere a route reads it back from, nor logged in the job.
      expect(JSON.stringify(await app.deps.db('jobs').where({ id: jobId }))).not.toContain(secret);
    } finally {
      await target.close();
    }
  });

  it('marks polling delivered when the job ends, and hands off to a registered agent endpoint', async () => {
    jobs ??= testJobsWorker();
    const target = await receiver([200]);
    try {
      const recipient = await registerAgent(app, { name: 'Recipient', endpointUrl: target.url });
      const { jobId, token } = await newJob();
      const polling = await app.request
        .post('/api/logistics/request')
        .set(token)
        .send({ jobId, method: 'polling' })
        .expect(202);
      expect(polling.body.secret).toBeNull();
      expect(polling.body.request.target.url).toMatch(new RegExp(`/api/jobs/${jobId}$`));
      const handoff = await app.request
        .post('/api/logistics/request')
        .set(token)
        .send({ jobId, method: 'agent_handoff', targetAgentId: recipient.id })
        .expect(202);
      expect(handoff.body.request.target).toEqual({ url: target.url, agentId: recipient.id });
      await eventually(async () => (await row(polling.body.request.id)).status === 'delivered');
      await eventually(async () => (await row(handoff.body.request.id)).status === 'delivered');
      expect(target.received).toHaveLength(1);
      expect(JSON.parse(target.received[0]!.body).jobId).toBe(jobId);
    } finally {
      await target.close();
    }
  });

  it('ends failed with the last answer once every attempt was refused', async () => {
    jobs ??= testJobsWorker();
    const target = await receiver([503]);
    try {
      const { jobId, token } = await newJob();
      const res = await app.request
        .post('/api/logistics/request')
        .set(token)
        .send({ jobId, method: 'webhook', targetUrl: target.url })
        .expect(202);
      const failed = await eventually(async () => {
        const r = await row(res.body.request.id);
        return r.status === 'failed' && r;
      }, 20_000);
      expect(failed).toMatchObject({ attempts: 8, last_status_code: 503 });
      expect(failed.last_error).toContain('503');
      expect(target.received).toHaveLength(8);
    } finally {
      await target.close();
    }
  });

  it('refuses what it cannot deliver, and jobs the caller cannot open', async () => {
    const { jobId } = await newJob(buyer.auth);
    const anonymous = await newJob();
    const other = await registerAgent(app, { name: 'Other' });
    const noEndpoint = await registerAgent(app, { name: 'No endpoint' });
    const send = (body: Record<string, unknown>, auth = buyer.auth) =>
      app.request.post('/api/logistics/request').set(auth).send(body);
    expectProblem(await send({ jobId, method: 'webhook' }), 400, 'validation_failed');
    expectProblem(
      await send({ jobId, method: 'polling', targetUrl: 'https://x.example/' }),
      400,
      'validation_failed',
    );
    expectProblem(
      await send({ jobId, method: 'webhook', targetUrl: 'ftp://x.example/' }),
      400,
      'validation_failed',
    );
    expectProblem(await send({ jobId, method: 'carrier_pigeon' }), 400, 'validation_failed');
    expectProblem(await send({ jobId, method: 'onchain_anchoring' }), 422, 'method_unavailable');
    expectProblem(
      await send({ jobId, method: 'agent_handoff', targetAgentId: noEndpoint.id }),
      422,
      'agent_has_no_endpoint',
    );
    expectProblem(
      await send({ jobId, method: 'agent_handoff', targetAgentId: `agt_${'0'.repeat(26)}` }),
      422,
      'target_agent_not_found',
    );
    // Someone else's job is not found, as one that does not exist: another agent, no credential,
    // another job's token; an anonymous job without its token.
    const missing = await send({ jobId: `job_${'0'.repeat(26)}`, method: 'polling' });
    expectProblem(missing, 404, 'not_found');
    for (const [id, auth] of [
      [jobId, other.auth],
      [jobId, anonymous.token],
      [anonymous.jobId, buyer.auth],
      [anonymous.jobId, { Authorization: `Bearer jt_${'A'.repeat(43)}` }],
    ] as const) {
      const refused = await send({ jobId: id, method: 'polling' }, auth);
      expectProblem(refused, 404, 'not_found');
      expect(refused.body.detail).toBe(`Job ${id} was not found.`);
    }
    expectProblem(
      await app.request.post('/api/logistics/request').send({ jobId, method: 'polling' }),
      404,
      'not_found',
    );
    expectProblem(
      await app.request
        .post('/api/logistics/request')
        .set('Authorization', 'Bearer ak_wrong')
        .send({ jobId, method: 'polling' }),
      401,
      'unauthorized',
    );

    // Where private targets are not allowed (production's default), loopback and plain http are refused.
    const before = env.LOGISTICS_ALLOW_PRIVATE_TARGETS;
    env.LOGISTICS_ALLOW_PRIVATE_TARGETS = false;
    try {
      expectProblem(
        await send({ jobId, method: 'webhook', targetUrl: 'http://example.com/hook' }),
        422,
        'target_not_allowed',
      );
      expectProblem(
        await send({ jobId, method: 'webhook', targetUrl: 'https://127.0.0.1:9/hook' }),
        422,
        'target_not_allowed',
      );
      expectProblem(
        await send({ jobId, method: 'webhook', targetUrl: 'https://[::1]:9/hook' }),
        422,
        'target_not_allowed',
      );
      expectProblem(
        await send({ jobId, method: 'webhook', targetUrl: 'https://10.1.2.3/hook' }),
        422,
        'target_not_allowed',
      );
      expectProblem(
        await send({ jobId, method: 'webhook', targetUrl: 'https://localhost/hook' }),
        422,
        'target_not_allowed',
      );
    } finally {
      env.LOGISTICS_ALLOW_PRIVATE_TARGETS = before;
    }
    expect(await app.deps.db('logistics_requests').where({ job_id: jobId })).toEqual([]);
    expect(await app.deps.db('logistics_requests').where({ job_id: anonymous.jobId })).toEqual([]);
  });
});
