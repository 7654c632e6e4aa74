// A2A tasks, as an unmodified `@a2a-js/sdk` client with default options sees them: a message that
// becomes a job (its access token in the task's metadata), its stream, get and cancel with that token,
// resubscription; and a priced task, refused without payment.
import { randomUUID } from 'node:crypto';
import { StreamResponse, TaskState } from '@a2a-js/sdk';
import type { Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import {
  app,
  base,
  client,
  count,
  dataMessage,
  digest,
  jobRow,
  opening,
  send,
  tokenOf,
  useA2AStack,
} from './fixtures';

const { eventually, grantLicense } = await import('../helpers');
const { registerAgent } = await import('../exchange/fixtures');
const { env } = await import('../../shared/platform/env');

useA2AStack();

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
