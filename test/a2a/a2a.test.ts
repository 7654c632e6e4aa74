// A2A, as an unmodified `@a2a-js/sdk` client with default options sees it: the card, a message that
// becomes a job (its access token in the task's metadata), its stream, get and cancel with that token,
// resubscription, signed push notifications; and the callers who must be refused: a priced task
// without payment, someone else's task, a private push target, bad input of every kind (each in the
// transport's own error form, none internal). test/security/job-access.test.ts plays every caller
// without the task's credential against every operation on a task.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Role, StreamResponse, TaskState } from '@a2a-js/sdk';
import type { ListTasksRequest, Message, SendMessageConfiguration, Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TestApp, TestWorker } from '../helpers';

// One enabled asset (a stablecoin: no rate needed), so priced services can be quoted.
process.env.TREASURY_SOLANA = 'So11111111111111111111111111111111111111112';
// The push receivers below are this test's own loopback servers: it opts in to private targets.
process.env.LOGISTICS_ALLOW_PRIVATE_TARGETS = 'true';

const { eventually, grantLicense, sha256Of, testApp, testJobsWorker, testQueueWorker } =
  await import('../helpers');
const { registerAgent } = await import('../exchange/fixtures');
const { createApp } = await import('../../api/app');
const { env } = await import('../../shared/platform/env');
const { hmacSha256Hex, verifyEd25519 } = await import('../../shared/platform/crypto');
const { listServices } = await import('../../shared/jobs/catalog');
const { serviceOrThrow, validateServiceInput } = await import('../../shared/jobs/jobs');
const { deliveriesProcessor } = await import('../../workers/processors/deliveries');
const { startWebhookRelay } = await import('../../shared/deliveries/webhooks');
const { a2aPushFormat } = await import('../../shared/a2a/pushes');
const { captureLogs } = await import('../logs');
const { logger } = await import('../../shared/platform/log');

let app: TestApp;
let server: http.Server;
let base: string;
let client: Client;
let jobsWorker: TestWorker;
let deliveries: TestWorker;
let relay: { stop(): Promise<void> };

beforeAll(async () => {
  app = testApp();
  server = http.createServer(createApp(app.deps));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  app.deps.urls.base = base;
  jobsWorker = testJobsWorker();
  deliveries = testQueueWorker('deliveries', deliveriesProcessor);
  relay = startWebhookRelay(deliveries.db, app.deps.queues, { a2a: a2aPushFormat }, 25);
  client = await new ClientFactory().createFromUrl(base);
});
afterAll(async () => {
  await relay?.stop();
  await deliveries?.close();
  await jobsWorker?.close();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  await app?.close();
});

const digest = () => sha256Of(randomUUID());

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

const config = (c: Partial<SendMessageConfiguration>): SendMessageConfiguration => ({
  acceptedOutputModes: [],
  taskPushNotificationConfig: undefined,
  returnImmediately: false,
  ...c,
});

async function send(
  c: Client,
  message: Message,
  configuration?: SendMessageConfiguration,
  headers?: Record<string, string>,
): Promise<Task> {
  const result = await c.sendMessage(
    { tenant: '', message, configuration, metadata: undefined },
    headers ? { serviceParameters: headers } : undefined,
  );
  expect('messageId' in result, 'a task, not a message').toBe(false);
  return result as Task;
}

const jobRow = (id: string) => app.deps.db('jobs').where({ id }).first();
const count = async (table: string) => Number((await app.deps.db(table).count({ n: '*' }))[0]!.n);
const rpc = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const sendRpc = (message: unknown, method = 'SendMessage') =>
  rpc({ jsonrpc: '2.0', id: 7, method, params: { message } });
const rawMessage = (parts: unknown[]) => ({ messageId: randomUUID(), role: 'ROLE_USER', parts });
/** The access token a task carries in the reply to the message that created it, and only there. */
const tokenOf = (task: Task) => String((task.metadata as Record<string, unknown>).accessToken);
/** Call options that open a task: its access token as the Bearer credential. */
const opening = (task: Task) => ({ serviceParameters: { Authorization: `Bearer ${tokenOf(task)}` } });

describe('the agent card', () => {
  it('is A2A 1.0 on the two transports served, from BASE_URL, with no key required', async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the card as JSON, before any decoder
    const raw = (await (await fetch(`${base}/.well-known/agent-card.json`)).json()) as any;
    expect(raw.supportedInterfaces).toEqual([
      { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    ]);
    expect(raw.capabilities).toMatchObject({
      streaming: true,
      pushNotifications: true,
      extendedAgentCard: false,
    });
    expect(raw.capabilities.extensions[0].uri).toMatch(/a2a-x402/);
    expect(raw.securityRequirements ?? []).toEqual([]);
    expect(Object.keys(raw.securitySchemes)).toEqual(['taskToken', 'agentKey', 'licenseKey']);
    expect(raw.securitySchemes.taskToken.httpAuthSecurityScheme.description).toMatch(/metadata\.accessToken/);
    for (const s of raw.skills) expect(s.securityRequirements ?? []).toEqual([]);
    // The same card under each interface's address, without a credential or a version.
    for (const at of ['/a2a/jsonrpc', '/a2a/rest']) {
      const res = await fetch(`${base}${at}/.well-known/agent-card.json`);
      expect([res.status, await res.json()]).toEqual([200, raw]);
    }
    // What the SDK's default client made of it.
    expect(client.protocolVersion).toBe('1.0');
    const card = await client.getAgentCard();
    expect(card.skills.map((s) => s.id).sort()).toEqual(
      listServices()
        .map((s) => s.id)
        .sort(),
    );
  });

  it("has skill examples that the exchange's own validation accepts", async () => {
    const card = await client.getAgentCard();
    for (const skill of card.skills) {
      expect(skill.examples.length, skill.id).toBeGreaterThan(0);
      for (const example of skill.examples) {
        const { service, input } = JSON.parse(example) as { service: string; input: unknown };
        expect(service).toBe(skill.id);
        expect(() => validateServiceInput(serviceOrThrow(service), input)).not.toThrow();
      }
    }
  });

  it('answers a request without the A2A-Version it serves with the protocol error', async () => {
    const res = await fetch(`${base}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {} }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32009);
  });
});

describe('a free service', () => {
  it('runs from a message: the task is the job, and a blocking send answers it completed', async () => {
    const d = await digest();
    const task = await send(client, dataMessage({ service: 'attest.timestamp', input: { digest: d } }));
    expect(task.id).toMatch(/^job_[0-9a-z]{26}$/);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const result = task.artifacts[0]!.parts[0]!.content;
    expect(result?.$case).toBe('data');
    expect(JSON.stringify(result?.value)).toContain(d);
    expect(task.history).toEqual([]); // the input is never shown back
    expect(tokenOf(task)).toMatch(/^jt_[\w-]{43}$/);
    // The task's token opens its job over HTTP too.
    const job = (
      await app.request.get(`/api/jobs/${task.id}`).set(opening(task).serviceParameters).expect(200)
    ).body.job;
    expect(job).toMatchObject({ id: task.id, service: 'attest.timestamp', status: 'succeeded' });
    expect(job.result).toEqual(result?.value);
    const got = await client.getTask({ tenant: '', id: task.id }, opening(task));
    expect(got).toMatchObject({
      id: task.id,
      contextId: task.contextId,
      status: { state: TaskState.TASK_STATE_COMPLETED },
    });
    // Shown once: reading the task again never carries the token.
    expect(JSON.stringify(got)).not.toContain(tokenOf(task));
  });

  it('streams the task from submitted to completed, with the result as an artifact', async () => {
    const message = dataMessage(
      { service: 'attest.timestamp', input: { digest: await digest() } },
      { contextId: 'ctx-stream' },
    );
    const events = [];
    for await (const e of client.sendMessageStream({
      tenant: '',
      message,
      configuration: undefined,
      metadata: undefined,
    }))
      events.push(e);
    const first = events[0]!.payload;
    expect(first?.$case).toBe('task');
    const task = first!.value as Task;
    expect(task.contextId).toBe('ctx-stream');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    // The first event carries the new task's token; no later one does.
    expect(tokenOf(task)).toMatch(/^jt_/);
    for (const e of events.slice(1)) expect(JSON.stringify(StreamResponse.toJSON(e))).not.toMatch(/jt_/);
    const last = events.at(-1)!.payload;
    expect(last?.$case).toBe('statusUpdate');
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifact = events.find((e) => e.payload?.$case === 'artifactUpdate')?.payload;
    expect(artifact?.$case === 'artifactUpdate' && artifact.value.artifact?.artifactId).toBe('result');
    for (const e of events.slice(1))
      expect(e.payload?.$case !== 'task' && e.payload?.value.taskId).toBe(task.id);
    expect((await jobRow(task.id)).status).toBe('succeeded');
  });

  it('is served the same over HTTP+JSON', async () => {
    const rest = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: ['HTTP+JSON'] }),
    ).createFromUrl(base);
    const task = await send(
      rest,
      dataMessage({ service: 'attest.timestamp', input: { digest: await digest() } }),
    );
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(tokenOf(task)).toMatch(/^jt_/);
    expect((await rest.getTask({ tenant: '', id: task.id }, opening(task))).id).toBe(task.id);
    await expect(
      rest.cancelTask({ tenant: '', id: task.id, metadata: undefined }, opening(task)),
    ).rejects.toThrow(/cannot be cancelled/);
  });

  it('answers a resent message id with the task it made to whoever holds its token, and refuses the id for another message', async () => {
    const message = dataMessage({ service: 'attest.timestamp', input: { digest: await digest() } });
    const first = await send(client, message);
    const again = await send(client, message, undefined, opening(first).serviceParameters);
    expect(again.id).toBe(first.id);
    expect(JSON.stringify(again)).not.toContain(tokenOf(first)); // the token is not shown twice
    // From the same address without the token (a NAT shares it): told which task, never shown it.
    const jobs = await count('jobs');
    await expect(send(client, message)).rejects.toThrow(new RegExp(`already made task ${first.id}`));
    expect(await count('jobs')).toBe(jobs);
    const other = {
      ...message,
      parts: dataMessage({ service: 'attest.timestamp', input: { digest: await digest() } }).parts,
    };
    await expect(send(client, other)).rejects.toThrow(/already sent with another message/);
  });

  it("answers an agent's resent message id with its task, the agent's key opening it", async () => {
    const agent = await registerAgent(app);
    const message = dataMessage({ service: 'attest.timestamp', input: { digest: await digest() } });
    const first = await send(client, message, undefined, agent.auth);
    expect(tokenOf(first)).toMatch(/^jt_/);
    const again = await send(client, message, undefined, agent.auth);
    expect(again.id).toBe(first.id);
    expect((await client.getTask({ tenant: '', id: first.id }, { serviceParameters: agent.auth })).id).toBe(
      first.id,
    );
  });
});

describe('a priced service', () => {
  it('answers input-required, without x402 where nothing x402 can pay, and does not run unpaid', async () => {
    const task = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
    );
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    // Only Solana is quoted here, which x402's `exact` cannot pay: no x402 requirement is offered, so
    // the status carries no x402 metadata (never an empty `accepts`) and names the quotes instead.
    // test/dev/x402-devnet.test.ts covers the task's x402 requirements where a settler can pay.
    const meta = task.status!.message!.metadata ?? {};
    expect(meta['x402.payment.status']).toBeUndefined();
    expect(meta['x402.payment.required']).toBeUndefined();
    expect(task.status!.message!.extensions).toEqual([]);
    const text = task.status!.message!.parts[0]!.content;
    expect(text?.$case === 'text' && text.value).toContain(`/api/jobs/${task.id}/payment`);
    const http = (
      await app.request.get(`/api/jobs/${task.id}`).set(opening(task).serviceParameters).expect(200)
    ).body;
    expect(http.payment.required).toBe(true);
    expect(http.payment.x402).toBeUndefined();
    // The jobs worker runs; the job is never claimed.
    await new Promise((r) => setTimeout(r, 300));
    expect((await jobRow(task.id)).status).toBe('awaiting_payment');
    expect(await app.deps.db('job_events').where({ job_id: task.id, type: 'running' })).toHaveLength(0);
  });

  it("is paid by a license's prepaid credit, never made free by a license without it, as createJob", async () => {
    const batch = async () => dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } });
    const starter = await grantLicense(app.deps.db, 'Starter'); // no prepaid credit
    const quoted = await send(client, await batch(), undefined, starter.auth);
    expect(quoted.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const business = await grantLicense(app.deps.db, 'Business');
    const paid = await send(client, await batch(), undefined, business.auth);
    expect(paid.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(await app.deps.db('license_credit_debits').where({ job_id: paid.id })).toHaveLength(1);
    expect(await app.deps.db('license_credit_debits').where({ job_id: quoted.id })).toHaveLength(0);
  });

  it('is cancelled before it is paid; an ended task is not cancelable', async () => {
    const task = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
    );
    const cancelled = await client.cancelTask(
      { tenant: '', id: task.id, metadata: undefined },
      opening(task),
    );
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await jobRow(task.id)).status).toBe('cancelled');
    expect(
      (await client.cancelTask({ tenant: '', id: task.id, metadata: undefined }, opening(task))).status
        ?.state,
    ).toBe(TaskState.TASK_STATE_CANCELED);
    const done = await send(
      client,
      dataMessage({ service: 'attest.timestamp', input: { digest: await digest() } }),
    );
    await expect(
      client.cancelTask({ tenant: '', id: done.id, metadata: undefined }, opening(done)),
    ).rejects.toMatchObject({
      name: 'TaskNotCancelableError',
    });
  });

  it('is not cancelled once work or a payment is under way', async () => {
    const task = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
    );
    const cancel = () => client.cancelTask({ tenant: '', id: task.id, metadata: undefined }, opening(task));
    const quote = await app.deps.db('quotes').where({ job_id: task.id }).first();
    const [payment] = await app.deps
      .db('payments')
      .insert({
        id: `pay_${'0'.repeat(25)}1`,
        job_id: task.id,
        quote_id: quote.id,
        asset: quote.asset,
        chain: quote.network,
        tx_ref: randomUUID(),
        status: 'verifying',
        created_at: new Date(),
        updated_at: new Date(),
      })
      .returning('id');
    await expect(cancel()).rejects.toThrow(/payment for it is being verified/);
    // Set by hand (no worker holds an unpaid job): paid and queued, then running.
    await app.deps.db('payments').where({ id: payment.id }).update({ status: 'confirmed' });
    await app.deps.db('jobs').where({ id: task.id }).update({ status: 'queued' });
    const paid = await client.getTask({ tenant: '', id: task.id }, opening(task));
    expect(paid.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    expect(paid.status!.message!.metadata).toMatchObject({
      'x402.payment.status': 'payment-completed',
      'x402.payment.receipts': [{ success: true, network: quote.network }],
    });
    await expect(cancel()).rejects.toThrow(/it is paid/);
    await app.deps.db('jobs').where({ id: task.id }).update({ status: 'running' });
    await expect(cancel()).rejects.toMatchObject({ name: 'TaskNotCancelableError' });
    expect((await jobRow(task.id)).status).toBe('running');
    await app.deps.db('jobs').where({ id: task.id }).update({ status: 'failed' });
  });

  it('waits for input while an expired quote is still watched, and has failed after', async () => {
    const { taskStateOf } = await import('../../shared/a2a/tasks');
    const late = env.QUOTE_LATE_WINDOW_SECONDS * 1000;
    const expiredAt = (msAgo: number) => ({
      status: 'expired' as const,
      expires_at: new Date(Date.now() - msAgo),
    });
    expect(taskStateOf(expiredAt(1000))).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(taskStateOf(expiredAt(late + 1000))).toBe(TaskState.TASK_STATE_FAILED);
  });

  it('can be followed with a resubscription fed from its job events, to its end', async () => {
    const task = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
    );
    const seen: StreamResponse[] = [];
    const following = (async () => {
      for await (const e of client.resubscribeTask({ tenant: '', id: task.id }, opening(task))) seen.push(e);
    })();
    await eventually(async () => seen.length > 0);
    expect(seen[0]!.payload?.$case).toBe('task');
    await client.cancelTask({ tenant: '', id: task.id, metadata: undefined }, opening(task));
    await following;
    const last = seen.at(-1)!.payload;
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    // A subscriber that goes away leaves nothing waiting behind it.
    const task2 = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
    );
    const abort = new AbortController();
    const gone = (async () => {
      for await (const e of client.resubscribeTask(
        { tenant: '', id: task2.id },
        { ...opening(task2), signal: abort.signal },
      ))
        void e;
    })().catch(() => undefined);
    const waiters = (app.deps.notifier as unknown as { waiters: Map<string, unknown> }).waiters;
    await eventually(async () => waiters.has(task2.id));
    abort.abort();
    await gone;
    await eventually(async () => !waiters.has(task2.id), 5000);
    // A live follower waits again within HINT_REREAD_MS (2 s) at the latest; this one never does.
    for (const until = Date.now() + 2500; Date.now() < until;) {
      expect(waiters.has(task2.id)).toBe(false);
      await new Promise((r) => setTimeout(r, 50));
    }
    // An ended task has nothing to subscribe to.
    await expect(
      (async () => {
        for await (const e of client.resubscribeTask({ tenant: '', id: task.id }, opening(task))) void e;
      })(),
    ).rejects.toThrow(/has ended/);
  });
});

describe('push notifications', () => {
  interface Push {
    headers: http.IncomingHttpHeaders;
    raw: string;
  }
  async function receiver() {
    const received: Push[] = [];
    const srv = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        received.push({ headers: req.headers, raw });
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    return {
      url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/a2a-push`,
      received,
      close: () => new Promise<void>((r) => srv.close(() => r())),
    };
  }

  it('are signed job webhooks: each state, then the whole task, verifiable by the receiver', async () => {
    const hook = await receiver();
    try {
      const token = `tok-${randomUUID()}`;
      const task = await send(
        client,
        dataMessage({ service: 'attest.timestamp', input: { digest: await digest() } }),
        config({
          taskPushNotificationConfig: {
            tenant: '',
            id: '',
            taskId: '',
            url: hook.url,
            token,
            authentication: { scheme: 'Bearer', credentials: 'receiver-secret' },
          },
        }),
      );
      const final = await eventually(async () =>
        hook.received.find((p) => StreamResponse.fromJSON(JSON.parse(p.raw)).payload?.$case === 'task'),
      );
      const { publicKey } = (await app.request.get('/api/discovery').expect(200)).body.receiptPublicKey;
      for (const p of hook.received) {
        // As a receiver would: the service key from discovery over timestamp.body, its own token, HMAC.
        const ts = p.headers['x-delivery-timestamp'] as string;
        expect(
          verifyEd25519(publicKey, `${ts}.${p.raw}`, p.headers['x-delivery-signature-ed25519'] as string),
        ).toBe(true);
        expect(
          verifyEd25519(publicKey, `${ts}.${p.raw} `, p.headers['x-delivery-signature-ed25519'] as string),
        ).toBe(false);
        expect(p.headers['x-a2a-notification-token']).toBe(token);
        expect(p.headers.authorization).toBe('Bearer receiver-secret');
        expect(p.headers['x-delivery-signature']).toBe(`sha256=${hmacSha256Hex(token, `${ts}.${p.raw}`)}`);
        expect(p.headers['content-type']).toMatch(/^application\/a2a\+json/);
        expect(p.raw).not.toMatch(/"input"|"history":\[\{/); // the input never travels
      }
      const pushed = StreamResponse.fromJSON(JSON.parse(final.raw)).payload;
      expect(pushed?.$case === 'task' && pushed.value).toMatchObject({
        id: task.id,
        status: { state: TaskState.TASK_STATE_COMPLETED },
      });
      const states = hook.received
        .map((p) => StreamResponse.fromJSON(JSON.parse(p.raw)).payload)
        .filter((x) => x?.$case === 'statusUpdate')
        .map((x) => x?.$case === 'statusUpdate' && x.value.status?.state);
      expect(states).toContain(TaskState.TASK_STATE_SUBMITTED);
      // The config reads back without its secrets.
      const { configs } = await client.listTaskPushNotificationConfig(
        {
          tenant: '',
          taskId: task.id,
          pageSize: 0,
          pageToken: '',
        },
        opening(task),
      );
      expect(configs).toHaveLength(1);
      // Push notifications never carry the task's token.
      for (const p of hook.received) expect(p.raw).not.toContain(tokenOf(task));
      expect(configs[0]).toMatchObject({
        url: hook.url,
        token: '',
        authentication: { scheme: 'Bearer', credentials: '' },
      });
    } finally {
      await hook.close();
    }
  });

  it('can be added to a task later, read, and deleted', async () => {
    const task = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
    );
    const hook = await receiver();
    try {
      const created = await client.createTaskPushNotificationConfig(
        {
          tenant: '',
          id: '',
          taskId: task.id,
          url: hook.url,
          token: 'later',
          authentication: undefined,
        },
        opening(task),
      );
      expect(created.id).not.toBe('');
      expect(
        (
          await client.getTaskPushNotificationConfig(
            { tenant: '', taskId: task.id, id: created.id },
            opening(task),
          )
        ).url,
      ).toBe(hook.url);
      await expect(
        client.createTaskPushNotificationConfig(
          {
            tenant: '',
            id: '',
            taskId: task.id,
            url: hook.url,
            token: '',
            authentication: undefined,
          },
          opening(task),
        ),
      ).rejects.toThrow(/one per task/);
      await client.cancelTask({ tenant: '', id: task.id, metadata: undefined }, opening(task));
      const cancelled = await eventually(async () =>
        hook.received.find((p) => {
          const x = StreamResponse.fromJSON(JSON.parse(p.raw)).payload;
          return x?.$case === 'task' && x.value.status?.state === TaskState.TASK_STATE_CANCELED;
        }),
      );
      expect(cancelled.headers['x-a2a-notification-token']).toBe('later');
      await client.deleteTaskPushNotificationConfig(
        { tenant: '', taskId: task.id, id: created.id },
        opening(task),
      );
      expect(
        (
          await client.listTaskPushNotificationConfig(
            {
              tenant: '',
              taskId: task.id,
              pageSize: 0,
              pageToken: '',
            },
            opening(task),
          )
        ).configs,
      ).toEqual([]);
    } finally {
      await hook.close();
    }
  });

  it('follow task states: a payment shows there, not as an event of its own', async () => {
    const { emitWebhookEvent } = await import('../../shared/deliveries/webhooks');
    const task = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
      config({
        taskPushNotificationConfig: {
          tenant: '',
          id: '',
          taskId: '',
          url: 'http://127.0.0.1:9/x',
          token: '',
          authentication: undefined,
        },
      }),
    );
    const ids = await app.deps.db.transaction((trx) =>
      emitWebhookEvent(trx, task.id, () => ({
        event: 'payment.pending',
        occurredAt: new Date().toISOString(),
      })),
    );
    expect(ids).toEqual([]);
  });

  it('refuse a private target unless the deployment opted in, before anything is written', async () => {
    env.LOGISTICS_ALLOW_PRIVATE_TARGETS = false;
    try {
      const jobs = await count('jobs');
      await expect(
        send(
          client,
          dataMessage({ service: 'attest.timestamp', input: { digest: await digest() } }),
          config({
            taskPushNotificationConfig: {
              tenant: '',
              id: '',
              taskId: '',
              url: 'http://127.0.0.1:9/hook',
              token: '',
              authentication: undefined,
            },
          }),
        ),
      ).rejects.toMatchObject({ name: 'RequestMalformedError', message: expect.stringMatching(/refused/) });
      const raw = await rpc({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: rawMessage([{ data: { service: 'attest.timestamp', input: { digest: await digest() } } }]),
          configuration: { taskPushNotificationConfig: { url: 'http://[::1]:9/hook' } },
        },
      });
      const body = (await raw.json()) as {
        error: { code: number; data: Array<{ metadata: { code: string } }> };
      };
      expect(body.error).toMatchObject({
        code: -32602,
        data: [{ metadata: { code: 'target_not_allowed' } }],
      });
      expect(await count('jobs')).toBe(jobs);
      const task = await send(
        client,
        dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
      );
      await expect(
        client.createTaskPushNotificationConfig(
          {
            tenant: '',
            id: '',
            taskId: task.id,
            url: 'http://10.0.0.1/hook',
            token: '',
            authentication: undefined,
          },
          opening(task),
        ),
      ).rejects.toThrow(/refused/);
      expect(await app.deps.db('job_webhooks').where({ job_id: task.id })).toHaveLength(0);
    } finally {
      env.LOGISTICS_ALLOW_PRIVATE_TARGETS = true;
    }
  });
});

describe("someone else's task", () => {
  it('is not found by another agent or by anyone without its credential: not read, cancelled or pushed', async () => {
    const owner = await registerAgent(app);
    const other = await registerAgent(app);
    const task = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
      undefined,
      owner.auth,
    );
    expect((await jobRow(task.id)).agent_id).toBe(owner.id);
    await expect(
      client.getTask({ tenant: '', id: task.id }, { serviceParameters: other.auth }),
    ).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    // Without any credential: 401 before the id is looked at.
    await expect(client.getTask({ tenant: '', id: task.id })).rejects.toThrow(/Status: 401/);
    await expect(
      client.cancelTask({ tenant: '', id: task.id, metadata: undefined }, { serviceParameters: other.auth }),
    ).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    await expect(client.cancelTask({ tenant: '', id: task.id, metadata: undefined })).rejects.toThrow(
      /Status: 401/,
    );
    await expect(
      client.createTaskPushNotificationConfig(
        {
          tenant: '',
          id: '',
          taskId: task.id,
          url: 'http://127.0.0.1:9/x',
          token: '',
          authentication: undefined,
        },
        { serviceParameters: other.auth },
      ),
    ).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    const restCancel = await fetch(`${base}/a2a/rest/tasks/${task.id}:cancel`, {
      method: 'POST',
      headers: { 'A2A-Version': '1.0', ...other.auth },
    });
    expect(restCancel.status).toBe(404);
    expect((await jobRow(task.id)).status).toBe('awaiting_payment');
    expect(await app.deps.db('job_webhooks').where({ job_id: task.id })).toHaveLength(0);
    // Its creator opens it with its key, or with the token the creating message answered.
    expect((await client.getTask({ tenant: '', id: task.id }, opening(task))).id).toBe(task.id);
    const cancelled = await client.cancelTask(
      { tenant: '', id: task.id, metadata: undefined },
      { serviceParameters: owner.auth },
    );
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it('answers a key that is not valid with 401, before anything runs', async () => {
    const res = await sendRpc(
      rawMessage([{ data: { service: 'attest.timestamp', input: { digest: await digest() } } }]),
    );
    expect(res.status).toBe(200);
    const jobs = await count('jobs');
    const bad = await rpc(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: rawMessage([{ data: { service: 'attest.timestamp', input: { digest: await digest() } } }]),
        },
      },
      { Authorization: 'Bearer ak_not_a_key' },
    );
    expect(bad.status).toBe(401);
    expect(bad.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const basic = await rpc(
      { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'job_x' } },
      { Authorization: 'Basic eDp5' },
    );
    expect(basic.status).toBe(401);
    expect(await count('jobs')).toBe(jobs);
  });
});

describe('bad input', () => {
  const unknownTask = 'job_01jd3x0v9m7k2q8w4e6r5t1y3z';

  async function expectRpcError(res: Response, code: number, pattern?: RegExp, metaCode?: string) {
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(text).not.toMatch(/\n\s+at |node_modules|Cannot read/);
    const body = JSON.parse(text);
    expect(body.error.code, text).toBe(code);
    if (pattern) expect(body.error.message).toMatch(pattern);
    if (metaCode) expect(body.error.data[0].metadata.code).toBe(metaCode);
    return body;
  }

  it('is the JSON-RPC invalid-params error, never an internal one, and writes nothing', async () => {
    const jobs = await count('jobs');
    const d = await digest();
    // Text alone is answered (tested below); text and a file, or JSON text that is no request, are not.
    await expectRpcError(
      await sendRpc(rawMessage([{ text: 'hello' }, { url: 'https://example.com/f.pdf' }])),
      -32602,
      /file/,
    );
    await expectRpcError(
      await sendRpc(rawMessage([{ text: '{"service": "no.such", "input": {}}' }])),
      -32602,
      /no service/,
      'unknown_service',
    );
    await expectRpcError(await sendRpc(rawMessage([])), -32602, /exactly one data part/);
    await expectRpcError(
      await sendRpc(
        rawMessage([
          { data: { service: 'attest.timestamp', input: {} } },
          { data: { service: 'attest.timestamp', input: {} } },
        ]),
      ),
      -32602,
      /exactly one data part/,
    );
    await expectRpcError(
      await sendRpc(rawMessage([{ data: { service: 'no.such', input: {} } }])),
      -32602,
      /no service/,
      'unknown_service',
    );
    await expectRpcError(
      await sendRpc(rawMessage([{ data: { service: 'attest.timestamp', input: { digest: 'nope' } } }])),
      -32602,
      /schema/,
      'validation_failed',
    );
    await expectRpcError(await sendRpc(rawMessage([{ data: { service: 'attest.timestamp' } }])), -32602);
    await expectRpcError(await sendRpc(rawMessage([{ data: 'text' }])), -32602);
    await expectRpcError(await sendRpc(rawMessage([{ url: 'https://example.com/f.pdf' }])), -32602, /file/);
    await expectRpcError(
      await sendRpc(rawMessage([{ data: { service: 'attest.timestamp', input: { digest: `${d}\u0000` } } }])),
      -32602,
      /request is not valid/,
    );
    await expectRpcError(await sendRpc(rawMessage([null])), -32602, /malformed/);
    await expectRpcError(await sendRpc({ messageId: 'x', parts: 'no' }), -32602, /malformed/);
    await expectRpcError(await sendRpc('not an object'), -32602);
    await expectRpcError(
      await rpc('{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {'),
      -32700,
    );
    await expectRpcError(await rpc({ jsonrpc: '2.0', id: 2, method: 'NoSuchMethod', params: {} }), -32601);
    const someToken = { Authorization: `Bearer jt_${'A'.repeat(43)}` };
    await expectRpcError(
      await rpc({ jsonrpc: '2.0', id: 3, method: 'GetTask', params: { id: unknownTask } }, someToken),
      -32001,
    );
    await expectRpcError(
      await rpc({ jsonrpc: '2.0', id: 4, method: 'GetTask', params: { id: 'x'.repeat(10_000) } }, someToken),
      -32001,
    );
    await expectRpcError(
      await rpc({ jsonrpc: '2.0', id: 5, method: 'CancelTask', params: { id: unknownTask } }, someToken),
      -32001,
    );
    await expectRpcError(
      await rpc({ jsonrpc: '2.0', id: 6, method: 'ListTasks', params: { pageSize: 0 } }, someToken),
      -32602,
      /pageSize/,
    );
    await expectRpcError(
      await sendRpc({
        ...rawMessage([{ data: { service: 'attest.timestamp', input: { digest: d } } }]),
        taskId: unknownTask,
      }),
      -32001,
    );
    await expectRpcError(await rpc({ jsonrpc: '2.0', id: 8, method: 'GetExtendedAgentCard' }), -32004);
    expect(await count('jobs')).toBe(jobs);
  });

  it('refuses a second message on a task: one message makes one task', async () => {
    const task = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
    );
    const jobs = await count('jobs');
    const again = dataMessage(
      { service: 'attest.batch', input: { digests: [await digest()] } },
      { taskId: task.id },
    );
    await expect(send(client, again, undefined, opening(task).serviceParameters)).rejects.toMatchObject({
      name: 'UnsupportedOperationError',
    });
    // Without the task's credential, the task named is not found (its state is not said either).
    await expect(send(client, { ...again, messageId: randomUUID() })).rejects.toMatchObject({
      name: 'TaskNotFoundError',
    });
    expect(await count('jobs')).toBe(jobs);
  });

  it('streams nothing for a bad message: the stream request gets the error', async () => {
    const res = await sendRpc(
      rawMessage([{ data: { service: 'no.such', input: {} } }]),
      'SendStreamingMessage',
    );
    expect(res.headers.get('content-type')).toMatch(/json/);
    await expectRpcError(res, -32602, /no service/);
  });

  it('over the body limit is 413, as everywhere on the API', async () => {
    const res = await sendRpc(
      rawMessage([
        { data: { service: 'attest.batch', input: { digests: Array(3000).fill(await digest()) } } },
      ]),
    );
    expect(res.status).toBe(413);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(((await res.json()) as { code: string }).code).toBe('payload_too_large');
  });

  it('over HTTP+JSON is a 400 INVALID_ARGUMENT body, and an unknown task 404', async () => {
    const post = (path: string, body: string) =>
      fetch(`${base}/a2a/rest${path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
        body,
      });
    for (const body of [
      JSON.stringify({ message: rawMessage([{ text: '{"service": "attest.timestamp"}' }]) }),
      JSON.stringify({
        message: rawMessage([{ data: { service: 'attest.timestamp', input: { digest: '\u0000' } } }]),
      }),
      JSON.stringify({ message: rawMessage([null]) }),
      '{"message": ',
    ]) {
      const res = await post('/message:send', body);
      const text = await res.text();
      expect(res.status, text).toBe(400);
      expect(JSON.parse(text).error.status).toBe('INVALID_ARGUMENT');
      expect(text).not.toMatch(/\n\s+at |node_modules/);
    }
    const missing = await fetch(`${base}/a2a/rest/tasks/${unknownTask}`, {
      headers: { 'A2A-Version': '1.0', Authorization: `Bearer jt_${'A'.repeat(43)}` },
    });
    expect(missing.status).toBe(404);
    // Without a credential, no task is even looked for.
    const bare = await fetch(`${base}/a2a/rest/tasks/${unknownTask}`, { headers: { 'A2A-Version': '1.0' } });
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('keeps private inputs out of the logs, the SDK console included', async () => {
    const d = await digest();
    const logs = captureLogs(logger);
    const consoleLines: string[] = [];
    const spies = (['error', 'warn', 'log', 'info'] as const).map((m) =>
      vi
        .spyOn(console, m)
        .mockImplementation(
          (...args: unknown[]) =>
            void consoleLines.push(
              args.map((a) => (a instanceof Error ? `${a.message}\n${a.stack}` : String(a))).join(' '),
            ),
        ),
    );
    try {
      await send(client, dataMessage({ service: 'attest.batch', input: { digests: [d] } }));
      await sendRpc(rawMessage([{ data: { service: 'attest.timestamp', input: { digest: `${d}x` } } }]));
      await sendRpc(
        rawMessage([{ data: { service: 'attest.timestamp', input: { digest: d, extra: d } } }]),
        'SendStreamingMessage',
      );
      await sendRpc(rawMessage([{ data: { service: 'attest.timestamp', input: { digest: `${d}\u0000` } } }]));
    } finally {
      logs.stop();
      for (const s of spies) s.mockRestore();
    }
    expect([...logs.lines, ...consoleLines].join('\n')).not.toContain(d);
  });
});

const textMessage = (text: string, extra: Partial<Message> = {}): Message => ({
  ...dataMessage(null, extra),
  parts: [
    { content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined },
  ],
});
const listRequest = (extra: Partial<ListTasksRequest> = {}): ListTasksRequest => ({
  tenant: '',
  contextId: '',
  status: TaskState.TASK_STATE_UNSPECIFIED,
  pageToken: '',
  statusTimestampAfter: undefined,
  ...extra,
});

describe('a message of text alone', () => {
  it('is answered, through the SDK client, with the skills and the data part each takes; no task is made', async () => {
    const jobs = await count('jobs');
    const reply = await client.sendMessage({
      tenant: '',
      message: textMessage('hello, what can you do?'),
      configuration: undefined,
      metadata: undefined,
    });
    expect('messageId' in reply, 'a message, not a task').toBe(true);
    const message = reply as Message;
    expect(message.role).toBe(Role.ROLE_AGENT);
    const [text, data] = message.parts.map((p) => p.content);
    expect(text?.$case).toBe('text');
    expect(data?.$case).toBe('data');
    const skills = (data?.value as { skills: Array<{ skill: string; send: unknown }> }).skills;
    expect(skills.map((s) => s.skill)).toEqual(listServices().map((s) => s.id));
    for (const s of listServices()) expect(String(text?.value)).toContain(s.id);
    // Each data part it shows is one the exchange takes.
    for (const { send: part } of skills) {
      const { service, input } = part as { service: string; input: unknown };
      expect(() => validateServiceInput(serviceOrThrow(service), input)).not.toThrow();
    }
    expect(await count('jobs')).toBe(jobs);

    // Streamed, the same reply is the stream's one event.
    const events: StreamResponse[] = [];
    for await (const e of client.sendMessageStream({
      tenant: '',
      message: textMessage('hello'),
      configuration: undefined,
      metadata: undefined,
    }))
      events.push(e as StreamResponse);
    expect(events.map((e) => e.payload?.$case)).toEqual(['message']);
    expect(await count('jobs')).toBe(jobs);
  });

  it('is a request when the text is the JSON of one: the task runs', async () => {
    const d = await digest();
    const task = await send(
      client,
      textMessage(JSON.stringify({ service: 'attest.timestamp', input: { digest: d } })),
    );
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(JSON.stringify(task.artifacts[0]!.parts[0]!.content?.value)).toContain(d);
  });
});

describe('a conversation: text alone from a caller with a key', () => {
  const talk = (t: Task) => app.deps.db('a2a_conversations').where({ id: t.id }).first();
  const textOf = (m: Message | undefined) => String(m?.parts[0]?.content?.value ?? '');

  it('is a task waiting for a request, continued with text, then with a request that makes its job', async () => {
    const me = await registerAgent(app);
    const asMe = { serviceParameters: me.auth };
    const jobs = await count('jobs');
    const first = await send(client, textMessage('hello, what can you do?'), undefined, me.auth);
    // Waiting for input: the agent's reply (the skills, each with a data part it takes) is the status.
    expect(first.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(first.status?.message?.role).toBe(Role.ROLE_AGENT);
    for (const s of listServices()) expect(textOf(first.status?.message)).toContain(s.id);
    expect(first.history.map((m) => [m.role, textOf(m).slice(0, 23)])).toEqual([
      [Role.ROLE_USER, 'hello, what can you do?'],
      [Role.ROLE_AGENT, textOf(first.status?.message).slice(0, 23)],
    ]);
    expect(first.history.every((m) => m.taskId === first.id && m.contextId === first.contextId)).toBe(true);
    expect(first.id).toMatch(/^job_/);
    expect(await count('jobs')).toBe(jobs);
    expect((await talk(first)).agent_id).toBe(me.id);

    // More text: kept with the reply; history as long as asked (the latest messages).
    const again = await send(
      client,
      textMessage('and the prices?', { taskId: first.id }),
      undefined,
      me.auth,
    );
    expect([again.id, again.contextId, again.status?.state]).toEqual([
      first.id,
      first.contextId,
      TaskState.TASK_STATE_INPUT_REQUIRED,
    ]);
    const got = await client.getTask({ tenant: '', id: first.id, historyLength: 2 }, asMe);
    expect(got.history.map((m) => m.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);
    expect(textOf(got.history[0])).toBe('and the prices?');
    expect(
      (await client.getTask({ tenant: '', id: first.id, historyLength: undefined }, asMe)).history,
    ).toHaveLength(4);
    expect((await client.getTask({ tenant: '', id: first.id, historyLength: 0 }, asMe)).history).toEqual([]);
    const listed = await client.listTasks(listRequest({ status: TaskState.TASK_STATE_INPUT_REQUIRED }), asMe);
    expect(listed.tasks.map((t) => t.id)).toEqual([first.id]);
    // It has no events to follow nor a job to push for yet: refused, saying why.
    await expect(
      (async () => {
        for await (const _ of client.resubscribeTask({ tenant: '', id: first.id }, asMe)) void _;
      })(),
    ).rejects.toThrow(/has no job yet/);
    await expect(
      client.createTaskPushNotificationConfig(
        {
          tenant: '',
          id: '',
          taskId: first.id,
          url: 'http://127.0.0.1:9/x',
          token: '',
          authentication: undefined,
        },
        asMe,
      ),
    ).rejects.toThrow(/has no job yet/);
    // A refused request leaves it waiting, unchanged, and makes no job.
    const unchanged = await talk(first);
    await expect(
      send(client, dataMessage({ service: 'no.such', input: {} }, { taskId: first.id }), undefined, me.auth),
    ).rejects.toThrow(/no service/);
    expect(await talk(first)).toEqual(unchanged);
    expect(await jobRow(first.id)).toBeUndefined();

    // A request sent to it makes the job, with the task's id and context: it runs to completed.
    const d = await digest();
    const done = await send(
      client,
      dataMessage({ service: 'attest.timestamp', input: { digest: d } }, { taskId: first.id }),
      undefined,
      me.auth,
    );
    expect([done.id, done.contextId, done.status?.state]).toEqual([
      first.id,
      first.contextId,
      TaskState.TASK_STATE_COMPLETED,
    ]);
    expect(JSON.stringify(done.artifacts[0]!.parts[0]!.content?.value)).toContain(d);
    const job = await jobRow(first.id);
    expect([job.agent_id, job.status]).toEqual([me.id, 'succeeded']);
    expect((await talk(first)).state).toBe('started');
    // The task is the job now: read as one, with the conversation's history; listed once.
    const read = await client.getTask({ tenant: '', id: first.id, historyLength: undefined }, asMe);
    expect([read.status?.state, read.history.length]).toEqual([TaskState.TASK_STATE_COMPLETED, 4]);
    const all = await client.listTasks(listRequest(), asMe);
    expect(all.tasks.map((t) => t.id)).toEqual([first.id]);
    expect(all.totalSize).toBe(1);
    // It takes no more messages, as any job's task.
    await expect(
      send(client, textMessage('thanks', { taskId: first.id }), undefined, me.auth),
    ).rejects.toThrow(/has ended/);
  });

  it('is streamed as its one event, and holds 40 messages: then only a request is taken', async () => {
    const me = await registerAgent(app);
    const events: StreamResponse[] = [];
    for await (const e of client.sendMessageStream(
      { tenant: '', message: textMessage('hello'), configuration: undefined, metadata: undefined },
      { serviceParameters: me.auth },
    ))
      events.push(e as StreamResponse);
    expect(events.map((e) => e.payload?.$case)).toEqual(['task']);
    const task = events[0]!.payload!.value as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    for (let i = 0; i < 19; i++)
      await send(client, textMessage(`more ${i}`, { taskId: task.id }), undefined, me.auth);
    expect((await talk(task)).history).toHaveLength(40);
    await expect(
      send(client, textMessage('one more', { taskId: task.id }), undefined, me.auth),
    ).rejects.toThrow(/holds its 40 messages/);
    expect((await talk(task)).history).toHaveLength(40);
    const done = await send(
      client,
      dataMessage({ service: 'attest.timestamp', input: { digest: await digest() } }, { taskId: task.id }),
      undefined,
      me.auth,
    );
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('is cancelled while it waits, then takes no more messages', async () => {
    const me = await registerAgent(app);
    const asMe = { serviceParameters: me.auth };
    const task = await send(client, textMessage('Task for cancel test'), undefined, me.auth);
    const cancel = () => client.cancelTask({ tenant: '', id: task.id, metadata: undefined }, asMe);
    expect((await cancel()).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await cancel()).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await talk(task)).state).toBe('canceled');
    const jobs = await count('jobs');
    await expect(
      send(
        client,
        dataMessage({ service: 'attest.timestamp', input: { digest: await digest() } }, { taskId: task.id }),
        undefined,
        me.auth,
      ),
    ).rejects.toThrow(/was cancelled/);
    expect(await count('jobs')).toBe(jobs);
    const listed = await client.listTasks(listRequest({ status: TaskState.TASK_STATE_CANCELED }), asMe);
    expect(listed.tasks.map((t) => t.id)).toEqual([task.id]);
  });

  it("is someone else's to no one: not read, listed, continued, started or cancelled by another", async () => {
    const owner = await registerAgent(app);
    const other = await registerAgent(app);
    const asOther = { serviceParameters: other.auth };
    const task = await send(client, textMessage('hello'), undefined, owner.auth);
    const before = await talk(task);
    await expect(client.getTask({ tenant: '', id: task.id }, asOther)).rejects.toMatchObject({
      name: 'TaskNotFoundError',
    });
    await expect(
      client.cancelTask({ tenant: '', id: task.id, metadata: undefined }, asOther),
    ).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    await expect(
      send(client, textMessage('mine now', { taskId: task.id }), undefined, other.auth),
    ).rejects.toMatchObject({
      name: 'TaskNotFoundError',
    });
    await expect(
      send(
        client,
        dataMessage({ service: 'attest.timestamp', input: { digest: await digest() } }, { taskId: task.id }),
        undefined,
        other.auth,
      ),
    ).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    expect((await client.listTasks(listRequest(), asOther)).tasks).toEqual([]);
    // The operator token and no credential at all open no conversation either.
    await expect(
      client.getTask(
        { tenant: '', id: task.id },
        { serviceParameters: { Authorization: 'Bearer op_test_token_0123456789' } },
      ),
    ).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    await expect(client.getTask({ tenant: '', id: task.id })).rejects.toThrow(/Status: 401/);
    // Nor does a job's access token.
    const job = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
    );
    await expect(client.getTask({ tenant: '', id: task.id }, opening(job))).rejects.toMatchObject({
      name: 'TaskNotFoundError',
    });
    // Nothing changed: no job, the same messages, still waiting.
    expect(await jobRow(task.id)).toBeUndefined();
    expect(await talk(task)).toEqual(before);
  });

  it('is listed by its last update, as every task: the most recently updated first, page after page', async () => {
    const me = await registerAgent(app);
    const asMe = { serviceParameters: me.auth };
    const a = await send(client, textMessage('first'), undefined, me.auth);
    const b = await send(client, textMessage('second'), undefined, me.auth);
    const job = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
      config({ returnImmediately: true }),
      me.auth,
    );
    const ids = async (pageSize: number) => {
      const out: string[] = [];
      let pageToken = '';
      do {
        const page = await client.listTasks(listRequest({ pageSize, pageToken }), asMe);
        out.push(...page.tasks.map((t) => t.id));
        pageToken = page.nextPageToken;
      } while (pageToken);
      return out;
    };
    expect(await ids(50)).toEqual([job.id, b.id, a.id]);
    // The first conversation answered again is the most recently updated now.
    await send(client, textMessage('more', { taskId: a.id }), undefined, me.auth);
    expect(await ids(50)).toEqual([a.id, job.id, b.id]);
    expect(await ids(1)).toEqual([a.id, job.id, b.id]);
  });

  it('refuses an id sent again with another text, and answers the same text with the task it made', async () => {
    const me = await registerAgent(app);
    const message = textMessage('hello');
    const first = await send(client, message, undefined, me.auth);
    expect((await send(client, message, undefined, me.auth)).id).toBe(first.id);
    await expect(
      send(client, { ...textMessage('other'), messageId: message.messageId }, undefined, me.auth),
    ).rejects.toThrow(/already sent with another message/);
    expect(await app.deps.db('a2a_conversations').where({ agent_id: me.id })).toHaveLength(1);
  });
});

describe('ListTasks', () => {
  it("lists, through the SDK client, the caller's own tasks newest first in cursor pages, and no one else's", async () => {
    const me = await registerAgent(app);
    const other = await registerAgent(app);
    const mine: string[] = [];
    const context = randomUUID();
    for (let i = 0; i < 5; i++) {
      const message = dataMessage(
        { service: 'attest.batch', input: { digests: [await digest()] } },
        i < 2 ? { contextId: context } : {},
      );
      mine.push((await send(client, message, config({ returnImmediately: true }), me.auth)).id);
    }
    const theirs = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
      undefined,
      other.auth,
    );
    const anonymous = await send(
      client,
      dataMessage({ service: 'attest.batch', input: { digests: [await digest()] } }),
    );
    const asMe = { serviceParameters: me.auth };

    // One page of all, newest first (ids are time-ordered): the order is stable from page to page.
    const all = await client.listTasks(listRequest(), asMe);
    const newestFirst = [...mine].sort().reverse();
    expect(all.tasks.map((t) => t.id)).toEqual(newestFirst);
    expect([all.totalSize, all.pageSize, all.nextPageToken]).toEqual([5, 5, '']);
    expect(all.tasks.every((t) => t.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED)).toBe(true);
    // Pages of 2 walk the same list, without a repeat or a gap, and the last says there is no more.
    const walked: string[] = [];
    let token = '';
    let pages = 0;
    do {
      const page = await client.listTasks(listRequest({ pageSize: 2, pageToken: token }), asMe);
      expect(page.totalSize).toBe(5);
      walked.push(...page.tasks.map((t) => t.id));
      token = page.nextPageToken;
      pages++;
    } while (token);
    expect([walked, pages]).toEqual([newestFirst, 3]);
    // Filters: the context, the state, the time of the last change.
    const inContext = await client.listTasks(listRequest({ contextId: context }), asMe);
    expect(inContext.tasks.map((t) => t.id).sort()).toEqual(mine.slice(0, 2).sort());
    expect(inContext.tasks.every((t) => t.contextId === context)).toBe(true);
    const done = await client.listTasks(listRequest({ status: TaskState.TASK_STATE_COMPLETED }), asMe);
    expect(done.tasks).toEqual([]);
    const later = await client.listTasks(
      listRequest({ statusTimestampAfter: new Date(Date.now() + 60_000).toISOString() }),
      asMe,
    );
    expect(later.totalSize).toBe(0);

    // Another agent sees only its own; a task's token, the operator and no one list anything else.
    const theirList = await client.listTasks(listRequest(), { serviceParameters: other.auth });
    expect(theirList.tasks.map((t) => t.id)).toEqual([theirs.id]);
    const byToken = await client.listTasks(listRequest(), opening(anonymous));
    expect(byToken.tasks).toEqual([]);
    const byOperator = await client.listTasks(listRequest(), {
      serviceParameters: { Authorization: 'Bearer op_test_token_0123456789' },
    });
    expect([byOperator.tasks, byOperator.totalSize]).toEqual([[], 0]);
    await expect(client.listTasks(listRequest())).rejects.toThrow(/\b401\b/);
    // No task's token leaks into a list.
    expect(JSON.stringify(all)).not.toMatch(/jt_/);
  });

  it('refuses a page size out of range, a state that is none, a bad timestamp and a token it did not issue', async () => {
    const me = await registerAgent(app);
    const asMe = { serviceParameters: me.auth };
    for (const bad of [
      { pageSize: 0 },
      { pageSize: -1 },
      { pageSize: 101 },
      { historyLength: -1 },
      { statusTimestampAfter: 'yesterday' },
      { pageToken: 'not-a-token' },
      // A token of another list (an organization's own jobs) names no page of this one.
      { pageToken: Buffer.from(JSON.stringify({ l: 'jobs', id: 'job_x' })).toString('base64url') },
    ]) {
      await expect(client.listTasks(listRequest(bad), asMe), JSON.stringify(bad)).rejects.toMatchObject({
        name: 'RequestMalformedError',
      });
    }
    const res = await rpc(
      { jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { status: 'TASK_STATE_BOGUS' } },
      me.auth,
    );
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32602);
  });
});

describe('the JSON-RPC envelope', () => {
  it('answers an invalid request -32600 (with its id when valid), a notification nothing, and runs neither', async () => {
    const jobs = await count('jobs');
    const params = {
      message: rawMessage([{ data: { service: 'attest.timestamp', input: { digest: await digest() } } }]),
    };
    const cases: Array<[unknown, unknown]> = [
      [{ jsonrpc: '1.0', id: 'a', method: 'SendMessage', params }, 'a'],
      [{ jsonrpc: '2.0', id: 2, params }, 2],
      [{ jsonrpc: '2.0', id: { bad: 1 }, method: 'SendMessage', params }, null],
      [{ jsonrpc: '2.0', id: 3, method: 'SendMessage', params: 'no' }, 3],
      [{ jsonrpc: 'aaa', method: 'SendMessage', params }, null],
      [[{ jsonrpc: '2.0', id: 4, method: 'SendMessage', params }], null],
      [7, null],
    ];
    for (const [body, id] of cases) {
      const res = await rpc(body);
      expect(res.status).toBe(200);
      const reply = (await res.json()) as { id: unknown; error: { code: number } };
      expect([reply.id, reply.error.code], JSON.stringify(body)).toEqual([id, -32600]);
    }
    // A notification (no id): no reply at all, and the message is not run.
    const note = await rpc({ jsonrpc: '2.0', method: 'SendMessage', params });
    expect([note.status, await note.text()]).toEqual([204, '']);
    // A method that does not exist: -32601 with the request's id.
    const unknown = (await (
      await rpc({ jsonrpc: '2.0', id: 9, method: 'tasks/nope', params: {} })
    ).json()) as {
      id: number;
      error: { code: number };
    };
    expect([unknown.id, unknown.error.code]).toEqual([9, -32601]);
    expect(await count('jobs')).toBe(jobs);
  });
});
