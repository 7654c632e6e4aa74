// The A2A request handler: every protocol operation on jobs. A message with one data part
// {service, input} creates a job through createJob's own path (./start.ts), and the task is the job:
// get and cancel read and cancel it, streams and resubscriptions follow its events
// (shared/a2a/follow.ts), and a push notification config is a job webhook (./push-configs.ts). A task
// opens, as its job does, only to the key that created it, the operator, or the bearer of its access
// token (returned once, in the metadata of the task the creating message answers): anyone else is told
// the task was not found. The SDK's transports (JSON-RPC, HTTP+JSON) call this; nothing here is kept in
// process memory, so any web process answers for any task.
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { Role } from '@a2a-js/sdk';
import { PushNotificationNotSupportedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { validationFailed } from '../../shared/platform/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { taskContext } from '../../shared/a2a/context';
import { listTasksOf } from '../../shared/a2a/list';
import { taskUpdates } from '../../shared/a2a/follow';
import {
  isSettledState,
  isTerminalState,
  taskFromConversation,
  taskFromJob,
  taskStateOf,
  withHistory,
} from '../../shared/a2a/tasks';
import { cancelConversation } from '../../shared/a2a/conversations';
import { cancelJob } from '../../shared/jobs/cancel';
import { firstEventId, lastEventId, waitForJob } from '../../shared/jobs/follow';
import { getJob } from '../../shared/jobs/jobs';
import type { JobRow } from '../../shared/jobs/jobs';
import type { JobPaymentView } from '../../shared/payments/views';
import type { AppDeps } from '../deps';
import type { A2ACaller } from './caller';
import { baseOf, callerOf, jobIdOf, ownJob } from './caller';
import { agentCard } from './card';
import { a2a, toA2AError } from './errors';
import { answerText, ownConversation } from './conversation';
import {
  createPushConfig,
  getPushConfig,
  listPushConfigs,
  noPushConfig,
  removePushConfig,
} from './push-configs';
import { startTask } from './start';

/**
 * The task a creating message answers, with its capability in the metadata (`accessToken`): the one
 * place it is shown. Resent messages, GetTask, streams and push notifications never carry it.
 */
function withAccessToken(task: Task, accessToken: string | undefined): Task {
  return accessToken ? { ...task, metadata: { ...task.metadata, accessToken } } : task;
}

/** A2A 1.0 §3.2.2: every message says who sent it; a message without a role is not a message. */
function requireRole(message: SendMessageRequest['message']): void {
  if (!message || message.role === Role.ROLE_UNSPECIFIED)
    throw validationFailed(
      [{ path: 'message.role', message: 'required: ROLE_USER for a message to this agent' }],
      'The message has no role; send "role": "ROLE_USER".',
    );
}

const PUSH_LATER =
  'takes a push notification config once a request made its job (send one in the request message)';

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
      requireRole(params.message);
      const caller = callerOf(context);
      const talk = await answerText(this.deps, params, caller);
      if (talk?.reply) return talk.reply;
      const started = await startTask(this.deps, params, caller, talk?.start);
      // Blocking (the default): answer once the task ended or waits for the caller (a payment).
      const row = params.configuration?.returnImmediately
        ? started.row
        : await waitForJob(this.deps, started.row, (r) => isSettledState(taskStateOf(r)), {
            signal: caller.signal,
          });
      const task = await this.taskOf(row, caller, {
        contextId: started.contextId,
        payment: row === started.row ? started.payment : undefined,
      });
      return withAccessToken(task, started.accessToken);
    });
  }

  async *sendMessageStream(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    try {
      requireRole(params.message);
      const caller = callerOf(context);
      const talk = await answerText(this.deps, params, caller);
      if (talk?.reply) {
        yield 'id' in talk.reply
          ? { payload: { $case: 'task', value: talk.reply } }
          : { payload: { $case: 'message', value: talk.reply } };
        return;
      }
      const started = await startTask(this.deps, params, caller, talk?.start);
      // A new task streams from its first event; a resent message from now (the cursor before the row,
      // so an event in between shows twice rather than not at all).
      const after = started.fresh
        ? await firstEventId(this.deps.db, started.row.id)
        : await lastEventId(this.deps.db, started.row.id);
      const row = started.fresh ? started.row : await getJob(this.deps.db, started.row.id);
      const ctx = await taskContext(this.deps.db, row, baseOf(this.deps, caller), {
        contextId: started.contextId,
        payment: started.payment,
      });
      yield {
        payload: { $case: 'task', value: withAccessToken(taskFromJob(row, ctx), started.accessToken) },
      };
      if (isSettledState(taskStateOf(row))) return;
      // A streamed send ends, as a blocking one returns, when the task ends or waits for a payment.
      yield* taskUpdates(this.deps, row.id, ctx, { after, signal: caller.signal, stop: isSettledState });
    } catch (err) {
      throw toA2AError(err);
    }
  }

  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    return a2a(async () => {
      // As ListTasks: a length is 0 or more (absent: the whole history).
      if (params.historyLength !== undefined && params.historyLength < 0)
        throw validationFailed(
          [{ path: 'historyLength', message: 'at least 0' }],
          'historyLength is 0 or more; leave it out for the whole history.',
        );
      const caller = callerOf(context);
      const talk = await ownConversation(this.deps, params.id, caller);
      if (talk && talk.state !== 'started') {
        return withHistory(
          taskFromConversation(talk, baseOf(this.deps, caller)),
          talk.history,
          params.historyLength,
        );
      }
      const row = await ownJob(this.deps, params.id, caller);
      return withHistory(await this.taskOf(row, caller), talk?.history ?? [], params.historyLength);
    });
  }

  async listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    return a2a(async () => {
      const caller = callerOf(context);
      const page = await listTasksOf(this.deps.db, caller.access.caller, params);
      const base = baseOf(this.deps, caller);
      // History only when asked for (historyLength > 0); artifacts only with includeArtifacts.
      const history = params.historyLength ?? 0;
      const tasks = await Promise.all(
        page.rows.map(async ({ job, conversation }) => {
          const task = conversation
            ? withHistory(taskFromConversation(conversation, base), conversation.history, history)
            : withHistory(
                taskFromJob(job, await taskContext(this.deps.db, job, base, { contextId: job.context_id })),
                job.history ?? [],
                history,
              );
          return params.includeArtifacts ? task : { ...task, artifacts: [] };
        }),
      );
      return { tasks, nextPageToken: page.nextPageToken, pageSize: tasks.length, totalSize: page.totalSize };
    });
  }

  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    return a2a(async () => {
      const caller = callerOf(context);
      const talk = await ownConversation(this.deps, params.id, caller);
      if (talk && talk.state !== 'started') {
        const row = await cancelConversation(this.deps.db, talk, caller.access.caller);
        // A request made its job in between: the job is what is cancelled (or not), below.
        if (row.state !== 'started') return taskFromConversation(row, baseOf(this.deps, caller));
      }
      const { row } = await cancelJob(this.deps.db, jobIdOf(params.id), caller.access);
      return this.taskOf(row, caller);
    });
  }

  async *resubscribe(
    params: SubscribeToTaskRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    try {
      const caller = callerOf(context);
      const talk = await this.conversationOnly(params.id, caller);
      if (talk)
        throw new UnsupportedOperationError(
          `Task ${talk.id} ${talk.state === 'canceled' ? 'was cancelled' : 'has no job yet'}; it has no events to follow: it waits for your next message.`,
        );
      const { id } = await ownJob(this.deps, params.id, caller);
      // The cursor before the row: an event in between shows twice rather than not at all.
      const after = await lastEventId(this.deps.db, id);
      const row = await getJob(this.deps.db, id);
      if (isTerminalState(taskStateOf(row))) {
        throw new UnsupportedOperationError(`Task ${id} has ended (${row.status}); read it with GetTask.`);
      }
      const ctx = await taskContext(this.deps.db, row, baseOf(this.deps, caller));
      yield { payload: { $case: 'task', value: taskFromJob(row, ctx) } };
      // A subscription follows the task to its end, through a payment.
      yield* taskUpdates(this.deps, id, ctx, { after, signal: caller.signal, stop: isTerminalState });
    } catch (err) {
      throw toA2AError(err);
    }
  }

  async createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    return a2a(async () => {
      // A conversation task has no job to push for yet: of the errors A2A allows here (§3.1.7), this
      // one, saying how to have it pushed.
      const talk = await this.conversationOnly(params.taskId, callerOf(context));
      if (talk)
        throw new PushNotificationNotSupportedError(
          `Task ${talk.id} ${talk.state === 'canceled' ? 'was cancelled' : 'has no job yet'}; it ${PUSH_LATER}.`,
        );
      return createPushConfig(this.deps, params, callerOf(context));
    });
  }

  async getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    return a2a(async () => {
      const talk = await this.conversationOnly(params.taskId, callerOf(context));
      if (talk) throw noPushConfig(talk.id, params.id);
      return getPushConfig(this.deps, params, callerOf(context));
    });
  }

  async listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsRequest,
    context: ServerCallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    return a2a(async () => {
      // A conversation task holds none.
      if (await this.conversationOnly(params.taskId, callerOf(context)))
        return { configs: [], nextPageToken: '' };
      return listPushConfigs(this.deps, params, callerOf(context));
    });
  }

  async deleteTaskPushNotificationConfig(
    params: DeleteTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<void> {
    return a2a(async () => {
      const talk = await this.conversationOnly(params.taskId, callerOf(context));
      if (talk) throw noPushConfig(talk.id, params.id);
      return removePushConfig(this.deps, params, callerOf(context));
    });
  }

  /** The caller's conversation task of this id that has no job (none yet, or cancelled before one). */
  private async conversationOnly(taskId: string, caller: A2ACaller) {
    const talk = await ownConversation(this.deps, taskId, caller);
    return talk && talk.state !== 'started' ? talk : undefined;
  }

  /** The job as a task, with what the caller already holds of its context. */
  private async taskOf(
    row: JobRow,
    caller: A2ACaller,
    known?: { contextId?: string; payment?: JobPaymentView | undefined },
  ): Promise<Task> {
    return taskFromJob(row, await taskContext(this.deps.db, row, baseOf(this.deps, caller), known));
  }
}
