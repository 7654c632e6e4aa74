// A job id names a job; only the job's credential opens it. An attacker who holds another caller's
// job id (anonymous, with its own agent key, with a license of its own, with a made-up jt_ token, with
// the token of a job of its own) asks for everything a job offers: its status and result, its event
// stream, a payment, a delivery of its result, and over A2A JSON-RPC (the `@a2a-js/sdk` client) GetTask,
// CancelTask, SubscribeToTask, the push notification config operations and a follow-up message. Each
// answer is the 404 (A2A: task not found) a job that does not exist gets, and nothing changes: the job
// is not cancelled, no push config, payment or delivery is written or removed. The creator (its agent
// or license key, or the job's token for an anonymous job) and the operator succeed at each. The token
// is shown once and kept only as its hash; an anonymous repeat of createJob's Idempotency-Key is not
// shown it again. (The x402 payer's token and its replay: test/payments/x402.test.ts.)
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Role, TaskState } from '@a2a-js/sdk';
import type { Message, Task } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import bs58 from 'bs58';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers';

// One enabled asset (a stablecoin: no rate needed), so priced jobs are quoted and wait for payment.
process.env.TREASURY_SOLANA = 'So11111111111111111111111111111111111111112';
process.env.LOGISTICS_ALLOW_PRIVATE_TARGETS = 'true';

const { grantLicense, sha256Of, testApp } = await import('../helpers');
const { expectProblem, registerAgent } = await import('../exchange/fixtures');
const { createApp } = await import('../../api/app');
const { capabilityHash } = await import('../../shared/platform/capabilities');

const OPERATOR = { Authorization: 'Bearer op_test_token_0123456789' };
type Auth = Record<string, string>;
const bearer = (token: string): Auth => ({ Authorization: `Bearer ${token}` });

let app: TestApp;
let server: http.Server;
let base: string;
let client: Client;

beforeAll(async () => {
  app = testApp();
  server = http.createServer(createApp(app.deps));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  app.deps.urls.base = base;
  client = await new ClientFactory().createFromUrl(base);
});
afterAll(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  await app?.close();
});

interface Created {
  id: string;
  token: string;
  /** What opens it for its creator: its key, or (anonymous) its token. */
  creator: Auth;
  quote: { asset: string; reference: string };
}

/** A priced job (it waits for payment, so it can still be cancelled), made over HTTP by `as`. */
async function createJob(as: Auth = {}): Promise<Created> {
  const res = await app.request
    .post('/api/jobs')
    .set(as)
    .send({ service: 'attest.batch', input: { digests: [await sha256Of(randomUUID())] } })
    .expect(402);
  const token = res.body.accessToken as string;
  expect(token).toMatch(/^jt_[\w-]{43}$/);
  return {
    id: res.body.job.id,
    token,
    creator: Object.keys(as).length ? as : bearer(token),
    quote: res.body.payment.quotes[0],
  };
}

function dataMessage(data: unknown, extra: Partial<Message> = {}): Message {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      {
        content: { $case: 'data', value: data },
        mediaType: 'application/json',
        filename: '',
        metadata: undefined,
      },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

/** A priced task made over A2A by `as`; its token comes in the task's metadata. */
async function createTask(as: Auth = {}): Promise<Created> {
  const task = (await client.sendMessage(
    {
      tenant: '',
      message: dataMessage({ service: 'attest.batch', input: { digests: [await sha256Of(randomUUID())] } }),
      configuration: undefined,
      metadata: undefined,
    },
    { serviceParameters: as },
  )) as Task;
  const token = String((task.metadata as Record<string, unknown>).accessToken);
  expect(token).toMatch(/^jt_[\w-]{43}$/);
  const quote = await app.deps.db('quotes').where({ job_id: task.id }).first();
  return {
    id: task.id,
    token,
    creator: Object.keys(as).length ? as : bearer(token),
    quote: { asset: quote.asset, reference: quote.id },
  };
}

const opts = (auth: Auth) => ({ serviceParameters: auth });
const pushConfig = (taskId: string, url = 'http://127.0.0.1:9/attacker') => ({
  tenant: '',
  id: '',
  taskId,
  url,
  token: 'attacker',
  authentication: undefined,
});
/** A transaction signature of the right shape (base58 of 64 bytes) that pays nothing. */
const txRef = () => bs58.encode(randomBytes(64));

/** What must not move while an attacker tries a job. */
async function snapshot(jobId: string) {
  const db = app.deps.db;
  const job = await db('jobs').where({ id: jobId }).first();
  return {
    job,
    events: await db('job_events').where({ job_id: jobId }).orderBy('id'),
    webhooks: await db('job_webhooks').where({ job_id: jobId }),
    payments: await db('payments').where({ job_id: jobId }),
    deliveries: await db('logistics_requests').where({ job_id: jobId }),
  };
}

/** The SSE route, read far enough to see its status; the stream of a live job is then closed. */
async function eventsStatus(jobId: string, auth: Auth): Promise<{ status: number; body: string }> {
  const abort = new AbortController();
  const res = await fetch(`${base}/api/jobs/${jobId}/events`, { headers: auth, signal: abort.signal });
  if (res.status !== 200) return { status: res.status, body: await res.text() };
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const reader = res.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  abort.abort();
  await reader.cancel().catch(() => undefined);
  return { status: 200, body: first };
}

async function attackOverHttp(victim: Created, auth: Auth) {
  const notFound = `Job ${victim.id} was not found.`;
  const read = await app.request.get(`/api/jobs/${victim.id}`).set(auth);
  expectProblem(read, 404, 'not_found');
  expect(read.body.detail).toBe(notFound);
  expectProblem(await app.request.get(`/api/jobs/${victim.id}?wait=1`).set(auth), 404, 'not_found');
  const events = await eventsStatus(victim.id, auth);
  expect(events.status).toBe(404);
  expect(JSON.parse(events.body)).toMatchObject({ code: 'not_found', detail: notFound });
  const pay = await app.request
    .post(`/api/jobs/${victim.id}/payment`)
    .set(auth)
    .send({ asset: victim.quote.asset, txRef: txRef(), reference: victim.quote.reference });
  expectProblem(pay, 404, 'not_found');
  expect(pay.body.detail).toBe(notFound);
  const deliver = await app.request
    .post('/api/logistics/request')
    .set(auth)
    .send({ jobId: victim.id, method: 'webhook', targetUrl: 'http://127.0.0.1:9/attacker' });
  expectProblem(deliver, 404, 'not_found');
  // Nothing in any answer shows the job, its result or its state.
  for (const res of [read, pay, deliver]) expect(JSON.stringify(res.body)).not.toMatch(/awaiting_payment/);
}

async function attackOverA2A(victim: Created, auth: Auth, configId: string) {
  const o = opts(auth);
  // With a credential that does not open the task: not found. With none at all: 401 before the id is
  // looked at (no task opens without one), alike for a task that exists and one that does not.
  const notFound = auth.Authorization
    ? { name: 'TaskNotFoundError' }
    : { message: expect.stringMatching(/\b401\b/) as unknown };
  await expect(client.getTask({ tenant: '', id: victim.id }, o)).rejects.toMatchObject(notFound);
  await expect(
    client.cancelTask({ tenant: '', id: victim.id, metadata: undefined }, o),
  ).rejects.toMatchObject(notFound);
  await expect(
    (async () => {
      for await (const e of client.resubscribeTask({ tenant: '', id: victim.id }, o)) void e;
    })(),
  ).rejects.toMatchObject(notFound);
  await expect(client.createTaskPushNotificationConfig(pushConfig(victim.id), o)).rejects.toMatchObject(
    notFound,
  );
  await expect(
    client.getTaskPushNotificationConfig({ tenant: '', taskId: victim.id, id: configId }, o),
  ).rejects.toMatchObject(notFound);
  await expect(
    client.listTaskPushNotificationConfig({ tenant: '', taskId: victim.id, pageSize: 0, pageToken: '' }, o),
  ).rejects.toMatchObject(notFound);
  await expect(
    client.deleteTaskPushNotificationConfig({ tenant: '', taskId: victim.id, id: configId }, o),
  ).rejects.toMatchObject(notFound);
  // A follow-up message naming the task: not found either (its state is not told).
  const followUp = dataMessage(
    { service: 'attest.batch', input: { digests: [await sha256Of(randomUUID())] } },
    { taskId: victim.id },
  );
  await expect(
    client.sendMessage({ tenant: '', message: followUp, configuration: undefined, metadata: undefined }, o),
  ).rejects.toMatchObject({ name: 'TaskNotFoundError' });
}

describe("an attacker holding another caller's job id", () => {
  it('gets 404 from every route and A2A operation, and nothing changes', async () => {
    const owner = await registerAgent(app, { name: 'Owner' });
    const license = await grantLicense(app.deps.db, 'Starter'); // no prepaid credit: the job is quoted
    const victims: Array<[string, Created]> = [
      ['an anonymous job', await createJob()],
      ["an agent's job", await createJob(owner.auth)],
      ["a license's job", await createJob(license.auth)],
      ['an anonymous A2A task', await createTask()],
      ["an agent's A2A task", await createTask(owner.auth)],
    ];

    const attacker = await registerAgent(app, { name: 'Attacker' });
    const attackerLicense = await grantLicense(app.deps.db, 'Starter');
    const own = await createJob(); // the attacker's own job, and its genuine token
    const attackers: Array<[string, Auth]> = [
      ['no credential', {}],
      ['its own agent key', attacker.auth],
      ['a license of its own', attackerLicense.auth],
      ['a made-up jt_ token', bearer(`jt_${'A'.repeat(43)}`)],
      ["another job's jt_ token", bearer(own.token)],
    ];

    for (const [what, victim] of victims) {
      // The victim has a push config of its own: the attacker must neither read nor remove it.
      const config = await client.createTaskPushNotificationConfig(
        pushConfig(victim.id, 'http://127.0.0.1:9/owner'),
        opts(victim.creator),
      );
      const before = await snapshot(victim.id);
      expect(before.webhooks).toHaveLength(1);
      for (const [who, auth] of attackers) {
        try {
          await attackOverHttp(victim, auth);
          await attackOverA2A(victim, auth, config.id);
        } catch (err) {
          throw new Error(`${what}, attacked with ${who}: ${(err as Error).message}`);
        }
      }
      const after = await snapshot(victim.id);
      expect(after, what).toEqual(before);
      expect(after.job.status).toBe('awaiting_payment');
      expect(after.webhooks[0].url).toBe('http://127.0.0.1:9/owner');
    }
  });

  it('is answered exactly as for a job that does not exist', async () => {
    const victim = await createJob();
    const missing = `job_${'0'.repeat(26)}`;
    const strip = (b: Record<string, unknown>) => ({ ...b, detail: undefined, instance: undefined });
    const a = await app.request.get(`/api/jobs/${victim.id}`);
    const b = await app.request.get(`/api/jobs/${missing}`);
    expect([a.status, b.status]).toEqual([404, 404]);
    expect(strip(a.body)).toEqual(strip(b.body));
    expect(a.body.detail.replace(victim.id, missing)).toBe(b.body.detail);
    const send = (id: string, method: string, auth: Auth) =>
      fetch(`${base}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...auth },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { id } }),
      });
    const rpc = async (id: string, method: string) =>
      (
        (await (await send(id, method, bearer(`jt_${'A'.repeat(43)}`))).json()) as {
          error: { code: number; message: string };
        }
      ).error;
    for (const method of ['GetTask', 'CancelTask']) {
      const [x, y] = [await rpc(victim.id, method), await rpc(missing, method)];
      expect(x.code).toBe(-32001);
      expect(y.code).toBe(-32001);
      expect(x.message.replace(victim.id, missing)).toBe(y.message);
      // Without a credential: the same 401 for both.
      const [u, v] = [await send(victim.id, method, {}), await send(missing, method, {})];
      expect([u.status, v.status]).toEqual([401, 401]);
      expect(strip((await u.json()) as Record<string, unknown>)).toEqual(
        strip((await v.json()) as Record<string, unknown>),
      );
    }
  });
});

describe('the creator, and the operator', () => {
  it('open their job with its key or token: every route and A2A operation succeeds', async () => {
    const owner = await registerAgent(app, { name: 'Creator' });
    const license = await grantLicense(app.deps.db, 'Starter');
    const makers: Array<[string, () => Promise<Created>]> = [
      ['anonymous, with the token', () => createJob()],
      ['an agent, with its key', () => createJob(owner.auth)],
      ['a license, with its key', () => createJob(license.auth)],
      ['an agent, with the token', async () => ({ ...(await createJob(owner.auth)), creator: {} })],
      ['anonymous over A2A, with the token', () => createTask()],
      ['an agent over A2A, with its key', () => createTask(owner.auth)],
      ['anonymous, read by the operator', async () => ({ ...(await createJob()), creator: OPERATOR })],
    ];
    for (const [what, make] of makers) {
      const job = await make();
      const auth = Object.keys(job.creator).length ? job.creator : bearer(job.token);
      try {
        const read = await app.request.get(`/api/jobs/${job.id}`).set(auth).expect(200);
        expect(read.body.job).toMatchObject({ id: job.id, status: 'awaiting_payment' });
        expect(JSON.stringify(read.body)).not.toContain(job.token); // shown once, at creation
        expect((await eventsStatus(job.id, auth)).body).toMatch(/event: awaiting_payment/);
        expect((await client.getTask({ tenant: '', id: job.id }, opts(auth))).id).toBe(job.id);
        const first = await (async () => {
          for await (const e of client.resubscribeTask({ tenant: '', id: job.id }, opts(auth))) return e;
        })().catch(() => undefined);
        // (The stream stays open while the job waits; its first event is the task.)
        expect(first?.payload?.$case).toBe('task');
        const config = await client.createTaskPushNotificationConfig(pushConfig(job.id), opts(auth));
        expect(
          (
            await client.getTaskPushNotificationConfig(
              { tenant: '', taskId: job.id, id: config.id },
              opts(auth),
            )
          ).url,
        ).toBe('http://127.0.0.1:9/attacker');
        const listed = await client.listTaskPushNotificationConfig(
          { tenant: '', taskId: job.id, pageSize: 0, pageToken: '' },
          opts(auth),
        );
        expect(listed.configs).toHaveLength(1);
        await client.deleteTaskPushNotificationConfig(
          { tenant: '', taskId: job.id, id: config.id },
          opts(auth),
        );
        expect(await app.deps.db('job_webhooks').where({ job_id: job.id })).toHaveLength(0);
        const followUp = dataMessage(
          { service: 'attest.batch', input: { digests: [await sha256Of(randomUUID())] } },
          { taskId: job.id },
        );
        await expect(
          client.sendMessage(
            { tenant: '', message: followUp, configuration: undefined, metadata: undefined },
            opts(auth),
          ),
        ).rejects.toMatchObject({ name: 'UnsupportedOperationError' });
        await app.request
          .post('/api/logistics/request')
          .set(auth)
          .send({ jobId: job.id, method: 'polling' })
          .expect(202);
        const cancelled = await client.cancelTask(
          { tenant: '', id: job.id, metadata: undefined },
          opts(auth),
        );
        expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
        expect((await app.deps.db('jobs').where({ id: job.id }).first()).status).toBe('cancelled');

        // A payment is submitted for a job still waiting for one.
        const unpaid = await make();
        const unpaidAuth = Object.keys(unpaid.creator).length ? unpaid.creator : bearer(unpaid.token);
        const paid = await app.request
          .post(`/api/jobs/${unpaid.id}/payment`)
          .set(unpaidAuth)
          .send({ asset: unpaid.quote.asset, txRef: txRef(), reference: unpaid.quote.reference })
          .expect(202);
        expect(paid.body.payment).toMatchObject({ jobId: unpaid.id, status: 'pending' });
      } catch (err) {
        throw new Error(`${what}: ${(err as Error).message}`);
      }
    }
  });
});

describe("a job's token", () => {
  it('is shown once and kept only as its hash', async () => {
    const job = await createJob();
    const row = await app.deps.db('jobs').where({ id: job.id }).first();
    expect(row.access_hash).toBe(capabilityHash(job.token));
    const dump = JSON.stringify(await app.deps.db('jobs').select('*'));
    expect(dump).not.toContain(job.token);
    expect(dump).not.toContain(job.token.slice(3));
  });

  it('is not shown to an anonymous repeat of the Idempotency-Key; an agent’s repeat replays it', async () => {
    const body = { service: 'attest.timestamp', input: { digest: await sha256Of(randomUUID()) } };
    const key = `job-access-${randomUUID()}`;
    const first = await app.request.post('/api/jobs').set('Idempotency-Key', key).send(body).expect(202);
    const jobs = Number((await app.deps.db('jobs').count({ n: '*' }))[0]!.n);
    const again = await app.request.post('/api/jobs').set('Idempotency-Key', key).send(body);
    expectProblem(again, 409, 'idempotency_reply_withheld');
    expect(again.headers.location).toBe(first.headers.location);
    expect(JSON.stringify(again.body)).not.toMatch(/jt_/);
    expect(Number((await app.deps.db('jobs').count({ n: '*' }))[0]!.n)).toBe(jobs);

    const agent = await registerAgent(app, { name: 'Repeater' });
    const mine = await app.request.post('/api/jobs').set(agent.auth).set('Idempotency-Key', key).send(body);
    expect(mine.status).toBe(202);
    const replay = await app.request.post('/api/jobs').set(agent.auth).set('Idempotency-Key', key).send(body);
    expect(replay.status).toBe(202);
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.body.accessToken).toBe(mine.body.accessToken);
    expect(replay.body.job.id).toBe(mine.body.job.id);
  });

  it('keeps its holder’s Idempotency-Keys apart from others at the same address', async () => {
    const job = await createJob();
    const body = { asset: job.quote.asset, txRef: txRef(), reference: job.quote.reference };
    const key = `pay-${randomUUID()}`;
    const paid = await app.request
      .post(`/api/jobs/${job.id}/payment`)
      .set(bearer(job.token))
      .set('Idempotency-Key', key)
      .send(body)
      .expect(202);
    // The same key and body from the same address, without the token (a NAT's other user): the job
    // is not found; the stored reply is not replayed.
    const replayed = await app.request
      .post(`/api/jobs/${job.id}/payment`)
      .set('Idempotency-Key', key)
      .send(body);
    expectProblem(replayed, 404, 'not_found');
    expect(replayed.headers['idempotency-replayed']).toBeUndefined();
    expect(JSON.stringify(replayed.body)).not.toContain(paid.body.payment.id);
    // Its holder's retry is answered as before.
    const again = await app.request
      .post(`/api/jobs/${job.id}/payment`)
      .set(bearer(job.token))
      .set('Idempotency-Key', key)
      .send(body)
      .expect(202);
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.body.payment.id).toBe(paid.body.payment.id);
    expect(await app.deps.db('payments').where({ job_id: job.id })).toHaveLength(1);
  });

  it('opens nothing where a key is required, and a job token is no key', async () => {
    const job = await createJob();
    expectProblem(await app.request.get('/api/revenue').set(bearer(job.token)), 401, 'unauthorized');
    expectProblem(
      await app.request.post('/api/marketplace/listings').set(bearer(job.token)).send({}),
      401,
      'unauthorized',
    );
  });
});
