// A full run's database dump holds no working credential. The run: an agent registers; it creates a job
// with a webhook (with an Idempotency-Key); an anonymous A2A task gets a push config carrying a token
// and Authorization credentials; a logistics request asks for a signed webhook; a TRIAL license is
// claimed, starts a workflow with plain policy parameters and makes an organization key. The real jobs
// worker, webhook relay and deliveries worker run in this process, and the loopback receiver checks each
// delivery's signature with the secret the reply handed out. Then the whole database is dumped as text (every row, and
// pg_dump's where it is installed) and none of those values appears in any form that could be used,
// nor in the logs.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp, TestWorker } from '../helpers';
import type { Received } from './at-rest';

// The receivers are this test's own loopback servers: it opts in to private targets.
process.env.LOGISTICS_ALLOW_PRIVATE_TARGETS = 'true';

const { eventually, sha256Of, testApp, testJobsWorker, testQueueWorker } = await import('../helpers');
const { registerAgent } = await import('../exchange/fixtures');
const { trialProof } = await import('../licensing/helpers');
const { hmacSha256Hex, verifyEd25519 } = await import('../../shared/platform/crypto');
const { deliveriesProcessor } = await import('../../workers/processors/deliveries');
const { startWebhookRelay } = await import('../../shared/deliveries/webhooks');
const { a2aPushFormat } = await import('../../shared/a2a/pushes');
const { logger } = await import('../../shared/platform/log');
const { captureLogs } = await import('../logs');
const { dumpText, receiver, usableForms } = await import('./at-rest');

let app: TestApp;
let jobs: TestWorker;
let deliveries: TestWorker;
let relay: { stop(): Promise<void> };
let logs: ReturnType<typeof captureLogs>;
let hook: Awaited<ReturnType<typeof receiver>>;

beforeAll(async () => {
  logs = captureLogs(logger);
  app = testApp();
  jobs = testJobsWorker();
  deliveries = testQueueWorker('deliveries', deliveriesProcessor);
  relay = startWebhookRelay(deliveries.db, app.deps.queues, { a2a: a2aPushFormat }, 25);
  hook = await receiver();
});
afterAll(async () => {
  logs?.stop();
  await relay?.stop();
  await deliveries?.close();
  await jobs?.close();
  await hook?.close();
  await app?.close();
});

/** Every credential or secret a reply handed out (or the caller chose and sent), by what it is. */
const handedOut: Array<{ name: string; value: string }> = [];
const keep = (name: string, value: unknown): string => {
  expect(typeof value === 'string' && value.length >= 10, `${name}: ${String(value)}`).toBe(true);
  handedOut.push({ name, value: value as string });
  return value as string;
};

const digest = () => sha256Of(randomUUID());

function expectSigned(d: Received, key: string, publicKey: string) {
  const ts = d.headers['x-delivery-timestamp'] as string;
  expect(d.headers['x-delivery-signature']).toBe(`sha256=${hmacSha256Hex(key, `${ts}.${d.raw}`)}`);
  expect(
    verifyEd25519(publicKey, `${ts}.${d.raw}`, d.headers['x-delivery-signature-ed25519'] as string),
  ).toBe(true);
}

describe('a database dump after a full run', () => {
  it('holds no credential or secret any reply handed out, in any usable form', async () => {
    const agent = await registerAgent(app, { name: 'Dump Agent' });
    keep('agent API key', agent.apiKey);

    // A job with a webhook, made with an Idempotency-Key (its reply, secret included, is kept for replay).
    const idempotencyKey = keep('idempotency key', `idem-${randomBytes(16).toString('hex')}`);
    const created = await app.request
      .post('/api/jobs')
      .set(agent.auth)
      .set('Idempotency-Key', idempotencyKey)
      .send({ service: 'attest.timestamp', input: { digest: await digest() }, webhook: { url: hook.url } })
      .expect(202);
    const jobId = created.body.job.id as string;
    const webhookSecret = keep('job webhook secret', created.body.webhook.secret);
    keep('job access token', created.body.accessToken);

    // An anonymous A2A task whose push receiver asked for a token and an Authorization header back.
    const pushToken = keep('A2A push token', `tok-${randomBytes(16).toString('hex')}`);
    const pushCredentials = keep('A2A push credentials', `cred-${randomBytes(16).toString('hex')}`);
    const rpc = await app.request
      .post('/a2a/jsonrpc')
      .set('A2A-Version', '1.0')
      .send({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: {
            messageId: randomUUID(),
            role: 'ROLE_USER',
            parts: [{ data: { service: 'attest.timestamp', input: { digest: await digest() } } }],
          },
          configuration: {
            taskPushNotificationConfig: {
              url: `${hook.url}/a2a`,
              token: pushToken,
              authentication: { scheme: 'Bearer', credentials: pushCredentials },
            },
          },
        },
      })
      .expect(200);
    expect(rpc.body.error, JSON.stringify(rpc.body)).toBeUndefined();
    const task = rpc.body.result.task ?? rpc.body.result;
    const taskId = task.id as string;
    expect(taskId).toMatch(/^job_/);
    keep('A2A task access token', task.metadata?.accessToken);

    // A requested delivery of the agent's job, signed with a secret of its own.
    const requested = await app.request
      .post('/api/logistics/request')
      .set(agent.auth)
      .send({ jobId, method: 'webhook', targetUrl: `${hook.url}/result` })
      .expect(202);
    const deliverySecret = keep('logistics webhook secret', requested.body.secret);

    // A TRIAL license, and a workflow it starts with plain policy parameters (committed, never kept).
    const trial = await app.request
      .post('/api/v1/commercial/checkout/prepare')
      .send({
        license: 'TRIAL',
        organization: `Dump Org ${randomUUID()}`,
        email: 'dump@example.test',
        ...(await trialProof(app.request)),
      })
      .expect(201);
    const licenseKey = keep('license key', trial.body.checkout.license.token);
    keep('checkout client secret', trial.body.clientSecret);
    const threshold = keep(
      'workflow private parameter',
      String(6_000_000_000 + Math.floor(Math.random() * 1e9)),
    );
    const workflow = await app.request
      .post('/api/proof-workflows/prepare')
      .set('Authorization', `Bearer ${licenseKey}`)
      .send({ template: 'Underwriting', policyParameters: { risk_assessment: { threshold } } })
      .expect(201);
    keep('workflow policy salt', workflow.body.policyGates[0].salts.thresholdSalt);
    // An organization key of that license, shown once and used once.
    const orgKey = keep(
      'organization key',
      (
        await app.request
          .post('/api/v1/organization/keys')
          .set('Authorization', `Bearer ${licenseKey}`)
          .send({ name: 'dump', scopes: ['read'] })
          .expect(201)
      ).body.apiKey,
    );
    await app.request.get('/api/proof-workflows').set('Authorization', `Bearer ${orgKey}`).expect(200);

    // The worker delivers: every job event to the webhook, the pushes, the requested result.
    const { publicKey } = (await app.request.get('/api/discovery').expect(200)).body.receiptPublicKey;
    const at = (path: string) => hook.received.filter((d) => d.path === path);
    const events = await eventually(async () => {
      const got = at('/hook').map((d) => JSON.parse(d.raw).event as string);
      return got.includes('job.succeeded') && at('/hook');
    }, 20_000);
    for (const d of events) expectSigned(d, webhookSecret, publicKey);
    const pushes = await eventually(async () => at('/hook/a2a').length >= 2 && at('/hook/a2a'), 20_000);
    for (const d of pushes) {
      expectSigned(d, pushToken, publicKey);
      expect(d.headers['x-a2a-notification-token']).toBe(pushToken);
      expect(d.headers.authorization).toBe(`Bearer ${pushCredentials}`);
    }
    const [result] = await eventually(
      async () => at('/hook/result').length > 0 && at('/hook/result'),
      20_000,
    );
    expectSigned(result!, deliverySecret, publicKey);

    // The dump, and the logs of the whole run at trace level.
    const dump = await dumpText(app.deps.db, process.env.DATABASE_URL!);
    expect(dump).toContain(jobId);
    const logText = logs.lines.join('\n');
    const found: string[] = [];
    for (const { name, value } of handedOut) {
      for (const form of usableForms(value)) {
        if (dump.includes(form)) found.push(`${name} in the dump (as ${form})`);
        if (logText.includes(form)) found.push(`${name} in the logs (as ${form})`);
      }
    }
    expect(found).toEqual([]);
  });
});
