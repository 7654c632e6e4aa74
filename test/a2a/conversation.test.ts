// An A2A conversation: text alone from a caller with a key, as an unmodified `@a2a-js/sdk` client with
// default options sees it.
import { Role, TaskState } from '@a2a-js/sdk';
import type { Message, Task, StreamResponse } from '@a2a-js/sdk';
import { PushNotificationNotSupportedError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { describe, expect, it } from 'vitest';
import {
  app,
  client,
  config,
  count,
  dataMessage,
  digest,
  jobRow,
  listRequest,
  opening,
  send,
  textMessage,
  useA2AStack,
} from './fixtures';

const { registerAgent } = await import('../exchange/fixtures');
const { listServices } = await import('../../shared/jobs/catalog');

useA2AStack();

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
    ).rejects.toThrow(PushNotificationNotSupportedError);
    // It holds none, and has none to get or delete.
    expect(
      (
        await client.listTaskPushNotificationConfig(
          { tenant: '', taskId: first.id, pageSize: 0, pageToken: '' },
          asMe,
        )
      ).configs,
    ).toEqual([]);
    await expect(
      client.getTaskPushNotificationConfig({ tenant: '', taskId: first.id, id: 'cfg_x' }, asMe),
    ).rejects.toThrow(TaskNotFoundError);
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
