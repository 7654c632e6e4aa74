// What the A2A tests share: the app served on a loopback port with the jobs and deliveries workers and
// the webhook relay (`useA2AStack`), an `@a2a-js/sdk` client of it with default options, and the
// messages and calls they send. Import it before anything of the service: it sets the environment the
// service is loaded with.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Role, TaskState } from '@a2a-js/sdk';
import type { ListTasksRequest, Message, SendMessageConfiguration, Task } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, expect } from 'vitest';
import type { TestApp, TestWorker } from '../helpers';

// One enabled asset (a stablecoin: no rate needed), so priced services can be quoted.
process.env.TREASURY_SOLANA = 'So11111111111111111111111111111111111111112';
// The push receivers are the tests' own loopback servers: they opt in to private targets.
process.env.LOGISTICS_ALLOW_PRIVATE_TARGETS = 'true';

const { sha256Of, testApp, testJobsWorker, testQueueWorker } = await import('../helpers');
const { createApp } = await import('../../api/app');
const { deliveriesProcessor } = await import('../../workers/processors/deliveries');
const { startWebhookRelay } = await import('../../shared/deliveries/webhooks');
const { a2aPushFormat } = await import('../../shared/a2a/pushes');

export let app: TestApp;
export let base: string;
export let client: Client;
let server: http.Server;
let jobsWorker: TestWorker;
let deliveries: TestWorker;
let relay: { stop(): Promise<void> };

/** Starts the stack before the file's tests and stops it after them. */
export function useA2AStack(): void {
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
}

export const digest = () => sha256Of(randomUUID());

export function dataMessage(data: unknown, extra: Partial<Message> = {}): Message {
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

export const config = (c: Partial<SendMessageConfiguration>): SendMessageConfiguration => ({
  acceptedOutputModes: [],
  taskPushNotificationConfig: undefined,
  returnImmediately: false,
  ...c,
});

export async function send(
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

export const jobRow = (id: string) => app.deps.db('jobs').where({ id }).first();
export const count = async (table: string) => Number((await app.deps.db(table).count({ n: '*' }))[0]!.n);
export const rpc = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
export const sendRpc = (message: unknown, method = 'SendMessage') =>
  rpc({ jsonrpc: '2.0', id: 7, method, params: { message } });
export const rawMessage = (parts: unknown[]) => ({ messageId: randomUUID(), role: 'ROLE_USER', parts });
/** The access token a task carries in the reply to the message that created it, and only there. */
export const tokenOf = (task: Task) => String((task.metadata as Record<string, unknown>).accessToken);
/** Call options that open a task: its access token as the Bearer credential. */
export const opening = (task: Task) => ({ serviceParameters: { Authorization: `Bearer ${tokenOf(task)}` } });
export const textMessage = (text: string, extra: Partial<Message> = {}): Message => ({
  ...dataMessage(null, extra),
  parts: [
    { content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined },
  ],
});
export const listRequest = (extra: Partial<ListTasksRequest> = {}): ListTasksRequest => ({
  tenant: '',
  contextId: '',
  status: TaskState.TASK_STATE_UNSPECIFIED,
  pageToken: '',
  statusTimestampAfter: undefined,
  ...extra,
});
