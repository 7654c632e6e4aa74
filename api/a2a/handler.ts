// The A2A request handler: every protocol operation on jobs. A message with one data part
// {service, input} creates a job through createJob's own path (createJobFor), and the task is the job:
// get and cancel read and cancel it, streams and resubscriptions follow its events, and a push
// notification config is a job webhook. The SDK's transports (JSON-RPC, HTTP+JSON) call this; nothing
// here is kept in process memory, so any web process answers for any task.
import { randomUUID } from 'node:crypto';
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
  TaskState,
} from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext, User } from '@a2a-js/sdk/server';
import type { Request } from 'express';
import { z } from 'zod';
import {
  contextIdOf,
  deletePushConfig,
  isUniqueViolation,
  pushConfigOf,
  recordTask,
  registerPushConfig,
  taskByMessage,
} from '../../shared/a2a/store';
import type { A2ATaskRow, PushConfig } from '../../shared/a2a/store';
import {
  eventUpdates,
  isSettledState,
  isTerminalState,
  taskFromJob,
  taskRequestOf,
  taskStateOf,
  taskStatusOf,
} from '../../shared/a2a/tasks';
import type { TaskContext, TaskPayment } from '../../shared/a2a/tasks';
import { canonicalJson } from '../../shared/canonical';
import { sha256Hex } from '../../shared/crypto';
import { forbidden, validationFailed } from '../../shared/errors';
import { cancelJob } from '../../shared/jobs/cancel';
import { getJob, jobEvents, jobIdSchema } from '../../shared/jobs/jobs';
import type { JobRow } from '../../shared/jobs/jobs';
import type { JobPaymentView } from '../../shared/payments/payments';
import { jobPayment } from '../../shared/payments/payments';
import { checkWebhookTarget } from '../../shared/payments/webhooks';
import type { AppDeps } from '../deps';
import { principalKey } from '../http/auth';
import type { Principal } from '../http/auth';
import { origin } from '../http/links';
import { createJobFor } from '../routes/jobs-create';
import { agentCard } from './card';
import { a2a, toA2AError } from './errors';

/** The caller of one A2A request: its principal, its HTTP request (for links) and its lifetime. */
export class A2ACaller implements User {
  constructor(
    readonly principal: Principal,
    readonly req: Request,
    /** Aborts when the client goes away: waits and streams stop there. */
    readonly signal: AbortSignal,
  ) {}
  get isAuthenticated(): boolean {
    return this.principal.kind !== 'anonymous';
  }
  /** Whose message ids are whose: the principal, else the client's address. */
  get userName(): string {
    return this.principal.kind === 'anonymous'
      ? `addr:${this.req.ip ?? 'unknown'}`
      : principalKey(this.principal);
  }
  get agentId(): string | null {
    return this.principal.kind === 'agent' ? this.principal.agentId : null;
  }
}

function callerOf(context: ServerCallContext): A2ACaller {
  if (!(context.user instanceof A2ACaller)) throw new Error('A2A call without a caller');
  return context.user;
}

/** The push notification config a caller sends: a target and what it wants back, sent as headers. */
const headerValue = z
  .string()
  .max(4096)
  .regex(/^[\x20-\x7e]*$/, 'printable ASCII only (it is sent as a header)');
const pushConfigSchema = z.object({
  id: z.string().max(200),
  url: z.url({ protocol: /^https?$/ }).max(2000),
  token: headerValue,
  authentication: z
    .object({
      scheme: z.string().regex(/^[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,63}$/, 'an HTTP authentication scheme'),
      credentials: headerValue,
    })
    .optional(),
});

function pushConfigFrom(raw: TaskPushNotificationConfig, path: string): PushConfig {
  const parsed = pushConfigSchema.safeParse({
    id: raw.id,
    url: raw.url,
    token: raw.token,
    authentication: raw.authentication,
  });
  if (!parsed.success) {
    throw validationFailed(
      parsed.error.issues.map((i) => ({ path: [path, ...i.path].join('.'), message: i.message })),
      'The push notification config is not valid.',
    );
  }
  return parsed.data;
}

const configView = (taskId: string, c: PushConfig): TaskPushNotificationConfig => ({
  tenant: '',
  id: c.id,
  taskId,
  url: c.url,
  token: '',
  authentication: c.authentication ? { scheme: c.authentication.scheme, credentials: '' } : undefined,
});

/** The A2A task id of a job, or not found: no other id can name a task here. */
function jobIdOf(id: string): string {
  if (!id || !id.trim()) throw new RequestMalformedError('A task id is required.');
  if (!jobIdSchema.safeParse(id).success) throw new TaskNotFoundError(`Task not found: ${id.slice(0, 64)}`);
  return id;
}

/** Events after which a priced job's payment part is read again (requirements, then receipts). */
const paymentEvents = new Set(['awaiting_payment', 'expired', 'queued', 'succeeded']);

export class JobTaskHandler implements A2ARequestHandler {
  constructor(private readonly deps: AppDeps) {}

  /** The card the transports check protocol versions against (served per request by the card route). */
  async getAgentCard(): Promise<AgentCard> {
    return agentCard(this.deps.urls.base?.replace(/\/+$/, '') ?? '');
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new UnsupportedOperationError('This agent has no extended card: the public card is all there is.');
  }

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    return a2a(async () => {
      const caller = callerOf(context);
      const started = await this.start(params, caller);
      let row = started.row;
      // Blocking (the default): answer once the task ended or waits for the caller (a payment).
      while (
        !params.configuration?.returnImmediately &&
        !isSettledState(taskStateOf(row)) &&
        !caller.signal.aborted
      ) {
        await this.deps.notifier.next(row.id, 15_000, caller.signal);
        row = await getJob(this.deps.db, row.id);
      }
      return this.taskOf(row, caller, started.contextId, row === started.row ? started.payment : undefined);
    });
  }

  async *sendMessageStream(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    try {
      const caller = callerOf(context);
      const started = await this.start(params, caller);
      // A new task streams from its first event; a resent message from now (the cursor before the row,
      // so an event in between shows twice rather than not at all).
      const cursor = started.fresh
        ? await this.firstEventId(started.row.id)
        : await this.lastEventId(started.row.id);
      const row = started.fresh ? started.row : await getJob(this.deps.db, started.row.id);
      const ctx = await this.contextFor(row, caller, started.contextId, started.payment);
      yield { payload: { $case: 'task', value: taskFromJob(row, ctx) } };
      if (isSettledState(taskStateOf(row))) return;
      // A streamed send ends, as a blocking one returns, when the task ends or waits for a payment.
      yield* this.follow(row, ctx, cursor, caller, isSettledState);
    } catch (err) {
      throw toA2AError(err);
    }
  }

  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    return a2a(async () => {
      const row = await getJob(this.deps.db, jobIdOf(params.id));
      return this.taskOf(row, callerOf(context));
    });
  }

  async listTasks(): Promise<ListTasksResponse> {
    throw new UnsupportedOperationError(
      'Listing tasks is not offered: keep the ids of the tasks you create (GetTask reads any of them).',
    );
  }

  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    return a2a(async () => {
      const caller = callerOf(context);
      const { row } = await cancelJob(this.deps.db, jobIdOf(params.id), caller.agentId);
      return this.taskOf(row, caller);
    });
  }

  async *resubscribe(
    params: SubscribeToTaskRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    try {
      const caller = callerOf(context);
      const id = jobIdOf(params.id);
      // The cursor before the row: an event in between shows twice rather than not at all.
      const cursor = await this.lastEventId(id);
      const row = await getJob(this.deps.db, id);
      if (isTerminalState(taskStateOf(row))) {
        throw new UnsupportedOperationError(`Task ${id} has ended (${row.status}); read it with GetTask.`);
      }
      const ctx = await this.contextFor(row, caller);
      yield { payload: { $case: 'task', value: taskFromJob(row, ctx) } };
      // A subscription follows the task to its end, through a payment.
      yield* this.follow(row, ctx, cursor, caller, isTerminalState);
    } catch (err) {
      throw toA2AError(err);
    }
  }

  async createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    return a2a(async () => {
      const caller = callerOf(context);
      const row = await this.ownJob(params.taskId, caller);
      const config = pushConfigFrom(params, 'params');
      await checkWebhookTarget(config.url);
      const saved = await this.deps.db.transaction((trx) =>
        registerPushConfig(trx, row, config, this.jobUrl(row.id, caller), { fromStart: false }),
      );
      return configView(row.id, saved);
    });
  }

  async getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    return a2a(async () => {
      const row = await this.ownJob(params.taskId, callerOf(context));
      const config = await pushConfigOf(this.deps.db, row.id);
      if (!config || config.id !== params.id) {
        throw new TaskNotFoundError(
          `Task ${row.id} has no push notification config ${params.id.slice(0, 200)}.`,
        );
      }
      return configView(row.id, config);
    });
  }

  async listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsRequest,
    context: ServerCallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    return a2a(async () => {
      const row = await this.ownJob(params.taskId, callerOf(context));
      const config = await pushConfigOf(this.deps.db, row.id);
      return { configs: config ? [configView(row.id, config)] : [], nextPageToken: '' };
    });
  }

  async deleteTaskPushNotificationConfig(
    params: DeleteTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<void> {
    return a2a(async () => {
      const row = await this.ownJob(params.taskId, callerOf(context));
      if (!(await deletePushConfig(this.deps.db, row.id, params.id))) {
        throw new TaskNotFoundError(
          `Task ${row.id} has no push notification config ${params.id.slice(0, 200)}.`,
        );
      }
    });
  }

  // -------------------------------------------------------------------------------------------------

  /**
   * The job a message asks for: created (with its push config) through createJob's own path, or — when
   * the caller sends the same message id again — the one that id made before.
   */
  private async start(
    params: SendMessageRequest,
    caller: A2ACaller,
  ): Promise<{ row: JobRow; contextId: string; fresh: boolean; payment?: JobPaymentView | undefined }> {
    const message = params.message;
    if (!message) throw new RequestMalformedError('The request carries no message.');
    if (!message.messageId) throw new RequestMalformedError('The message has no messageId.');
    if (message.messageId.length > 200 || message.contextId.length > 200) {
      throw new RequestMalformedError('A messageId or contextId is at most 200 characters.');
    }
    if (message.taskId) await this.refuseFollowUp(message.taskId);
    const request = taskRequestOf(message);
    const raw = params.configuration?.taskPushNotificationConfig;
    const push = raw ? pushConfigFrom(raw, 'configuration.taskPushNotificationConfig') : undefined;
    const hash = sha256Hex(canonicalJson({ ...request, push: push?.url ?? null }));
    const before = await taskByMessage(this.deps.db, caller.userName, message.messageId);
    if (before) return this.replay(before, hash);
    if (push) await checkWebhookTarget(push.url);
    const contextId = message.contextId || randomUUID();
    try {
      const created = await createJobFor(
        caller.req,
        this.deps,
        caller.principal,
        { ...request, referralCode: caller.req.header('x-referral-code') },
        async (trx, job) => {
          await recordTask(trx, {
            job_id: job.id,
            context_id: contextId,
            caller_key: caller.userName,
            message_id: message.messageId,
            request_hash: hash,
          });
          if (push)
            await registerPushConfig(trx, job, push, this.jobUrl(job.id, caller), { fromStart: true });
        },
      );
      return { row: created.row, contextId, fresh: true, payment: created.payment };
    } catch (err) {
      // The same message id raced in twice: the first one made the task.
      if (isUniqueViolation(err)) {
        const first = await taskByMessage(this.deps.db, caller.userName, message.messageId);
        if (first) return this.replay(first, hash);
      }
      throw err;
    }
  }

  private async replay(task: A2ATaskRow, hash: string) {
    if (task.request_hash !== hash) {
      throw new RequestMalformedError({
        message: 'This messageId was already sent with another message; a new message needs a new id.',
        metadata: { code: 'message_id_reused' },
      });
    }
    return { row: await getJob(this.deps.db, task.job_id), contextId: task.context_id, fresh: false };
  }

  private async refuseFollowUp(taskId: string): Promise<never> {
    const row = await getJob(this.deps.db, jobIdOf(taskId));
    if (isTerminalState(taskStateOf(row))) {
      throw new UnsupportedOperationError(
        `Task ${row.id} has ended (${row.status}) and takes no more messages.`,
      );
    }
    throw new UnsupportedOperationError(
      `One message makes one task; task ${row.id} takes no more messages. Pay an input-required task on chain and POST the transaction to the payment link in its status; follow it with GetTask or SubscribeToTask.`,
    );
  }

  /** The caller's own job: one made with an agent key answers only that key (as logistics does). */
  private async ownJob(taskId: string, caller: A2ACaller): Promise<JobRow> {
    const row = await getJob(this.deps.db, jobIdOf(taskId));
    if (row.agent_id && row.agent_id !== caller.agentId) {
      throw forbidden(
        'This task belongs to another agent; only its API key can see or change its push notifications.',
      );
    }
    return row;
  }

  private jobUrl(jobId: string, caller: A2ACaller): string {
    return `${origin(caller.req, this.deps, 'base')}/api/jobs/${jobId}`;
  }

  /** What a priced job's status says about its payment: the x402 requirements, or the confirmed payments. */
  private async paymentOf(
    row: JobRow,
    base: string,
    known?: JobPaymentView,
  ): Promise<TaskPayment | undefined> {
    if (row.price_usd_cents === 0) return undefined;
    const view = known ?? (await jobPayment(this.deps.db, row, base));
    if (!view) return undefined; // paid from a license's credit: no quotes, no on-chain payment
    const receipts = view.payments
      .filter((p) => p.status === 'confirmed')
      .map((p) => ({ success: true as const, transaction: p.txRef, network: p.network, payer: p.payer }));
    return { ...(view.x402 ? { required: view.x402 } : {}), ...(receipts.length ? { receipts } : {}) };
  }

  private async contextFor(
    row: JobRow,
    caller: A2ACaller,
    contextId?: string,
    payment?: JobPaymentView,
  ): Promise<TaskContext> {
    const base = origin(caller.req, this.deps, 'base');
    return {
      contextId: contextId ?? (await contextIdOf(this.deps.db, row.id)),
      base,
      payment: await this.paymentOf(row, base, payment),
    };
  }

  private async taskOf(
    row: JobRow,
    caller: A2ACaller,
    contextId?: string,
    payment?: JobPaymentView,
  ): Promise<Task> {
    return taskFromJob(row, await this.contextFor(row, caller, contextId, payment));
  }

  private async firstEventId(jobId: string): Promise<number> {
    const r = (await this.deps.db('job_events').where({ job_id: jobId }).min({ id: 'id' }).first()) as {
      id: string | null;
    };
    return Number(r.id ?? 0);
  }

  private async lastEventId(jobId: string): Promise<number> {
    const r = (await this.deps.db('job_events').where({ job_id: jobId }).max({ id: 'id' }).first()) as {
      id: string | null;
    };
    return Number(r.id ?? 0);
  }

  /**
   * The job's events after `cursor` as A2A updates, until one reaches a state `stop` accepts or the
   * client goes away. A quote whose watch ends with no event is noticed on the next re-read.
   */
  private async *follow(
    start: JobRow,
    ctx: TaskContext,
    cursor: number,
    caller: A2ACaller,
    stop: (s: TaskState) => boolean,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    let row = start;
    while (!caller.signal.aborted) {
      const events = await jobEvents(this.deps.db, row.id, cursor);
      // Read after its events: a job whose final event is here is final in the row too.
      row = await getJob(this.deps.db, row.id);
      for (const event of events) {
        cursor = Number(event.id);
        if (paymentEvents.has(event.type)) ctx.payment = await this.paymentOf(row, ctx.base);
        for (const update of eventUpdates(event, row, ctx)) {
          yield update;
          if (update.payload?.$case === 'statusUpdate' && stop(update.payload.value.status!.state)) return;
        }
      }
      const now = taskStateOf(row);
      if (events.length === 0 && isTerminalState(now)) {
        // The job may have ended between reading its events and its row: then its final event is
        // there now, and the next pass streams it (with its artifact).
        if ((await jobEvents(this.deps.db, row.id, cursor)).length > 0) continue;
        // Ended without an event of its own (a watched quote running out): say so and stop.
        yield {
          payload: {
            $case: 'statusUpdate',
            value: { taskId: row.id, contextId: ctx.contextId, status: taskStatusOf(row, ctx), metadata: {} },
          },
        };
        return;
      }
      await this.deps.notifier.next(row.id, 15_000, caller.signal);
    }
  }
}
