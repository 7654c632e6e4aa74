// Starting a task: a message with one data part {service, input} creates a job through createJob's own
// path (orderJob), its task row and push config in the job's transaction; the same message id sent
// again answers the task it made before, to a caller who may open it. Sent to the caller's conversation
// (./conversation.ts), the job takes the conversation's task id and context.
import { randomUUID } from 'node:crypto';
import type { SendMessageRequest } from '@a2a-js/sdk';
import type { Knex } from 'knex';
import { RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { ConversationRow } from '../../shared/a2a/conversations';
import { pushConfigFrom, registerPushConfig } from '../../shared/a2a/push-configs';
import { isUniqueViolation, recordTask, taskByMessage } from '../../shared/a2a/store';
import type { A2ATaskRow } from '../../shared/a2a/store';
import { isTerminalState, taskRequestOf, taskStateOf } from '../../shared/a2a/tasks';
import { checkWebhookTarget } from '../../shared/deliveries/webhooks';
import { orderJob } from '../../shared/exchange/order';
import { mayAccessJob } from '../../shared/jobs/access';
import { getJob } from '../../shared/jobs/jobs';
import type { JobRow } from '../../shared/jobs/jobs';
import type { JobPaymentView } from '../../shared/payments/views';
import { canonicalJson } from '../../shared/platform/canonical';
import { sha256Hex } from '../../shared/platform/crypto';
import { conflict } from '../../shared/platform/errors';
import type { AppDeps } from '../deps';
import { orderingCaller } from '../http/callers';
import type { A2ACaller } from './caller';
import { jobUrlOf, ownJob } from './caller';

export interface StartedTask {
  row: JobRow;
  contextId: string;
  /** Made by this message; false when it was sent before. */
  fresh: boolean;
  payment?: JobPaymentView | undefined;
  /** The new task's capability; a resent message (fresh: false) carries none. */
  accessToken?: string;
}

/**
 * The job a message asks for: created (with its push config) through createJob's own path, or — when
 * the caller sends the same message id again — the one that id made before.
 */
export async function startTask(
  deps: AppDeps,
  params: SendMessageRequest,
  caller: A2ACaller,
  /** The caller's conversation the message was sent to: the job takes its id and context. */
  conversation?: ConversationRow,
): Promise<StartedTask> {
  const message = params.message;
  if (!message) throw new RequestMalformedError('The request carries no message.');
  if (!message.messageId) throw new RequestMalformedError('The message has no messageId.');
  if (message.messageId.length > 200 || message.contextId.length > 200) {
    throw new RequestMalformedError('A messageId or contextId is at most 200 characters.');
  }
  if (message.taskId && !conversation) await refuseFollowUp(deps, message.taskId, caller);
  const request = taskRequestOf(message);
  const raw = params.configuration?.taskPushNotificationConfig;
  const push = raw ? pushConfigFrom(raw, 'configuration.taskPushNotificationConfig') : undefined;
  const hash = sha256Hex(canonicalJson({ ...request, push: push?.url ?? null }));
  const before = await taskByMessage(deps.db, caller.userName, message.messageId);
  if (before) return replay(deps, before, hash, caller);
  if (push) await checkWebhookTarget(push.url);
  const contextId = conversation?.context_id ?? (message.contextId || randomUUID());
  try {
    const created = await orderJob(
      deps.db,
      deps.queues,
      orderingCaller(caller.principal, caller.req, deps),
      { ...request, referralCode: caller.req.header('x-referral-code'), id: conversation?.id },
      async (trx, job) => {
        if (conversation) await startConversation(trx, conversation);
        await recordTask(trx, {
          job_id: job.id,
          context_id: contextId,
          caller_key: caller.userName,
          message_id: message.messageId,
          request_hash: hash,
        });
        if (push)
          await registerPushConfig(trx, job, push, jobUrlOf(deps, job.id, caller), { fromStart: true });
      },
    );
    return {
      row: created.row,
      contextId,
      fresh: true,
      payment: created.payment,
      accessToken: created.accessToken,
    };
  } catch (err) {
    // The conversation's job was made by another message in between.
    if (conversation && isUniqueViolation(err)) {
      throw new UnsupportedOperationError(`Task ${conversation.id} has started; it takes no more messages.`);
    }
    // The same message id raced in twice: the first one made the task.
    if (isUniqueViolation(err)) {
      const first = await taskByMessage(deps.db, caller.userName, message.messageId);
      if (first) return replay(deps, first, hash, caller);
    }
    throw err;
  }
}

/**
 * A message sent again answers the task it made, to a caller who may open that task: its creating
 * key, or its access token. An anonymous sender is only an address (a NAT or proxy shares it), so
 * without the token it is told which task the message made, never the task itself.
 */
async function replay(
  deps: AppDeps,
  task: A2ATaskRow,
  hash: string,
  caller: A2ACaller,
): Promise<StartedTask> {
  if (task.request_hash !== hash) {
    throw new RequestMalformedError({
      message: 'This messageId was already sent with another message; a new message needs a new id.',
      metadata: { code: 'message_id_reused' },
    });
  }
  const row = await getJob(deps.db, task.job_id);
  if (!mayAccessJob(row, caller.access)) {
    throw conflict(
      'message_reply_withheld',
      `This message already made task ${row.id}; its reply carried the task's access token, shown once. Send that token (Authorization: Bearer jt_…) to read the task, or a new messageId for a new task.`,
      { taskId: row.id },
    );
  }
  return { row, contextId: task.context_id, fresh: false };
}

/** In the job's transaction: the conversation is the job from now on, unless it changed in between. */
async function startConversation(trx: Knex.Transaction, conversation: ConversationRow): Promise<void> {
  const changed = await trx('a2a_conversations')
    .where({ id: conversation.id, state: 'input_required' })
    .update({ state: 'started', updated_at: trx.fn.now() });
  if (changed !== 1) {
    throw new UnsupportedOperationError(`Task ${conversation.id} takes no more messages.`);
  }
}

async function refuseFollowUp(deps: AppDeps, taskId: string, caller: A2ACaller): Promise<never> {
  const row = await ownJob(deps, taskId, caller);
  if (isTerminalState(taskStateOf(row))) {
    throw new UnsupportedOperationError(
      `Task ${row.id} has ended (${row.status}) and takes no more messages.`,
    );
  }
  throw new UnsupportedOperationError(
    `One message makes one task; task ${row.id} takes no more messages. Pay an input-required task on chain and POST the transaction to the payment link in its status; follow it with GetTask or SubscribeToTask.`,
  );
}
