// A2A ListTasks, as an unmodified `@a2a-js/sdk` client with default options sees it: a caller's own
// tasks in cursor pages, its filters, and the requests it refuses.
import { randomUUID } from 'node:crypto';
import { TaskState } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import {
  app,
  client,
  config,
  dataMessage,
  digest,
  listRequest,
  opening,
  rpc,
  send,
  useA2AStack,
} from './fixtures';

const { registerAgent } = await import('../exchange/fixtures');

useA2AStack();

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
