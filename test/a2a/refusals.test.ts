// The A2A callers who must be refused, each in the transport's own error form, none internal: someone
// else's task, bad input of every kind, and a JSON-RPC envelope that is not one.
// test/security/job-access.test.ts plays every caller without the task's credential against every
// operation on a task.
import { randomUUID } from 'node:crypto';
import { TaskState } from '@a2a-js/sdk';
import { describe, expect, it, vi } from 'vitest';
import {
  app,
  base,
  client,
  count,
  dataMessage,
  digest,
  jobRow,
  opening,
  rawMessage,
  rpc,
  send,
  sendRpc,
  useA2AStack,
} from './fixtures';

const { registerAgent } = await import('../exchange/fixtures');
const { captureLogs } = await import('../logs');
const { logger } = await import('../../shared/platform/log');

useA2AStack();

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
    // A file part is well formed, of a kind this agent does not take: ContentTypeNotSupported.
    await expectRpcError(
      await sendRpc(rawMessage([{ text: 'hello' }, { url: 'https://example.com/f.pdf' }])),
      -32005,
      /file/,
      'content_type_not_supported',
    );
    // A message says who sent it (A2A 1.0 §3.2.2).
    const { role: _role, ...roleless } = rawMessage([{ data: { service: 'attest.timestamp', input: {} } }]);
    await expectRpcError(await sendRpc(roleless), -32602, /role/);
    await expectRpcError(
      await sendRpc(rawMessage([{ text: '{"service": "no.such", "input": {}}' }])),
      -32602,
      /no service/,
      'unknown_service',
    );
    await expectRpcError(await sendRpc(rawMessage([])), -32602, /exactly one data part/);
    // A message in A2A 0.3's shape is told the 1.0 shape, by name.
    const legacy = await expectRpcError(
      await sendRpc({
        kind: 'message',
        messageId: 'm-0.3',
        role: 'user',
        parts: [{ kind: 'data', data: { service: 'attest.timestamp', input: { digest: d } } }],
      }),
      -32602,
      /A2A 0\.3 message; this agent speaks A2A 1\.0: a part is \{"text": …\}, \{"data": \{…\}\}/,
      'validation_failed',
    );
    expect(JSON.stringify(legacy.error)).toContain('parts.0.kind');
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
    await expectRpcError(await sendRpc(rawMessage([{ url: 'https://example.com/f.pdf' }])), -32005, /file/);
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
    // As ListTasks refuses it: a history length is 0 or more.
    await expectRpcError(
      await rpc(
        { jsonrpc: '2.0', id: 7, method: 'GetTask', params: { id: unknownTask, historyLength: -1 } },
        someToken,
      ),
      -32602,
      /historyLength/,
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
