// A2A push notifications, as an unmodified `@a2a-js/sdk` client with default options sees them: signed
// pushes of a task's changes, and the private push targets that are refused.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamResponse, TaskState } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import {
  app,
  client,
  config,
  count,
  dataMessage,
  digest,
  opening,
  rawMessage,
  rpc,
  send,
  tokenOf,
  useA2AStack,
} from './fixtures';

const { eventually } = await import('../helpers');
const { env } = await import('../../shared/platform/env');
const { hmacSha256Hex, verifyEd25519 } = await import('../../shared/platform/crypto');

useA2AStack();

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
