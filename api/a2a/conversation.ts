// A message of text alone that is not a request. From a caller with a key (agent or license) it makes a
// task that waits for input (a conversation, shared/a2a/conversations.ts): the agent's reply names the
// skills and the data part each takes, and both messages are the task's history. Text sent to that task
// is answered the same way; a request sent to it (a data part, or text that is its JSON) makes the job,
// with the task's id (./start.ts). An anonymous caller, whom no task could be kept for, is answered with
// the reply alone (a Message, no task, nothing written).
import { randomUUID } from 'node:crypto';
import { Role } from '@a2a-js/sdk';
import type { Message, SendMessageRequest, Task } from '@a2a-js/sdk';
import { RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import {
  MAX_CONVERSATION_MESSAGES,
  conversationByMessage,
  conversationFor,
  openConversation,
  ownerOf,
  updateConversation,
} from '../../shared/a2a/conversations';
import type { ConversationRow } from '../../shared/a2a/conversations';
import { isUniqueViolation } from '../../shared/a2a/store';
import { requestInText, taskFromConversation, textOnly, textPart } from '../../shared/a2a/tasks';
import { jobIdSchema } from '../../shared/jobs/jobs';
import { newId } from '../../shared/platform/ids';
import type { AppDeps } from '../deps';
import type { A2ACaller } from './caller';
import { baseOf } from './caller';
import { guidanceFor } from './guide';

/** What a message means before any job: answered here, a conversation to start a job in, or neither. */
export type TextAnswer =
  { reply: Message | Task; start?: undefined } | { start: ConversationRow; reply?: undefined } | undefined;

/** The caller's conversation a task id names (started or not); undefined for anyone else's or none. */
export async function ownConversation(
  deps: AppDeps,
  taskId: string,
  caller: A2ACaller,
): Promise<ConversationRow | undefined> {
  if (!jobIdSchema.safeParse(taskId).success) return undefined;
  return conversationFor(deps.db, taskId, caller.access.caller);
}

function userMessage(message: Message, text: string, taskId: string, contextId: string): Message {
  return {
    messageId: message.messageId,
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function replyIn(base: string, taskId: string, contextId: string): Message {
  return { ...guidanceFor({ contextId }, base), taskId };
}

export async function answerText(
  deps: AppDeps,
  params: SendMessageRequest,
  caller: A2ACaller,
): Promise<TextAnswer> {
  const message = params.message;
  if (!message?.messageId) return undefined;
  if (message.messageId.length > 200 || message.contextId.length > 200) {
    throw new RequestMalformedError('A messageId or contextId is at most 200 characters.');
  }
  const text = textOnly(message);
  const isText = text !== undefined && !requestInText(text);
  const base = baseOf(deps, caller);
  if (message.taskId) {
    const row = await ownConversation(deps, message.taskId, caller);
    if (!row || row.state === 'started') return undefined; // a job's task: ./start.ts answers
    if (row.state === 'canceled') {
      throw new UnsupportedOperationError(`Task ${row.id} was cancelled and takes no more messages.`);
    }
    if (!isText) return { start: row };
    const updated = await deps.db.transaction(async (trx) => {
      const locked = await conversationFor(trx, row.id, caller.access.caller, { forUpdate: true });
      if (!locked || locked.state !== 'input_required') {
        throw new UnsupportedOperationError(`Task ${row.id} takes no more messages.`);
      }
      if (locked.history.length + 2 > MAX_CONVERSATION_MESSAGES) {
        throw new UnsupportedOperationError({
          message: `Task ${row.id} holds its ${MAX_CONVERSATION_MESSAGES} messages; send a request {"service", "input"} to it, or start a new task.`,
          metadata: { code: 'conversation_full' },
        });
      }
      return updateConversation(trx, locked, {
        append: [userMessage(message, text, row.id, row.context_id), replyIn(base, row.id, row.context_id)],
      });
    });
    return { reply: taskFromConversation(updated, base) };
  }
  if (!isText) return undefined;
  if (!ownerOf(caller.access.caller)) return { reply: guidanceFor(message, base) };
  const before = await conversationByMessage(deps.db, caller.userName, message.messageId);
  if (before) return { reply: resent(before, text, base) };
  const contextId = message.contextId || randomUUID();
  // The task's id is the job id its request will make (minted now, as any job id).
  const taskId = newId('job');
  try {
    const row = await openConversation(deps.db, caller.access.caller, {
      id: taskId,
      contextId,
      callerKey: caller.userName,
      messageId: message.messageId,
      history: [userMessage(message, text, taskId, contextId), replyIn(base, taskId, contextId)],
    });
    return { reply: taskFromConversation(row, base) };
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const first = await conversationByMessage(deps.db, caller.userName, message.messageId);
    if (!first) throw err;
    return { reply: resent(first, text, base) };
  }
}

/** A message id sent again: the task it made, when it carries the same text. */
function resent(row: ConversationRow, text: string, base: string): Task {
  const first = row.history[0]?.parts[0]?.content;
  if (first?.$case !== 'text' || first.value !== text) {
    throw new RequestMalformedError({
      message: 'This messageId was already sent with another message; a new message needs a new id.',
      metadata: { code: 'message_id_reused' },
    });
  }
  return taskFromConversation(row, base);
}
