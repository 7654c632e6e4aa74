// A2A conversations (a2a_conversations): the task a message of text alone makes for a caller with a key.
// It waits for input (TASK_STATE_INPUT_REQUIRED): the agent answered with its skills and needs a
// request. Each text the caller sends to it is kept with the agent's reply; a request sent to it makes
// the job, with the task's own id, and the task is that job from then on. Only its owner (the agent or
// license key that made it) ever sees it: to anyone else it does not exist.
import type { Message } from '@a2a-js/sdk';
import type { Knex } from 'knex';
import type { JobCaller } from '../jobs/access';
import type { Db } from '../platform/db/knex';

/** A conversation keeps at most this many messages (the caller's and the agent's): then it is full. */
export const MAX_CONVERSATION_MESSAGES = 40;

export type ConversationState = 'input_required' | 'canceled' | 'started';

export interface ConversationRow {
  id: string;
  context_id: string;
  caller_key: string;
  agent_id: string | null;
  license_id: string | null;
  message_id: string;
  state: ConversationState;
  history: Message[];
  created_at: Date;
  updated_at: Date;
}

type Conn = Db | Knex.Transaction;

/** Whose a conversation is: an agent or a license key. Anyone else has none. */
export function ownerOf(
  caller: JobCaller,
): { agent_id: string | null; license_id: string | null } | undefined {
  if (caller.kind === 'agent') return { agent_id: caller.agentId, license_id: null };
  if (caller.kind === 'license') return { agent_id: null, license_id: caller.licenseId };
  return undefined;
}

const owned = (q: Knex.QueryBuilder, caller: JobCaller) => {
  const owner = ownerOf(caller);
  if (!owner) return q.whereRaw('false');
  return owner.agent_id ? q.where('agent_id', owner.agent_id) : q.where('license_id', owner.license_id);
};

/** A conversation of this caller's, by task id; undefined for anyone else's or none. */
export async function conversationFor(
  db: Conn,
  id: string,
  caller: JobCaller,
  opts: { forUpdate?: boolean } = {},
): Promise<ConversationRow | undefined> {
  const q = db('a2a_conversations').where({ id });
  owned(q, caller);
  if (opts.forUpdate) void q.forUpdate();
  return (await q.first()) as ConversationRow | undefined;
}

/** The conversation a caller's message id made, if any. */
export async function conversationByMessage(db: Conn, callerKey: string, messageId: string) {
  return (await db('a2a_conversations').where({ caller_key: callerKey, message_id: messageId }).first()) as
    ConversationRow | undefined;
}

/** A new conversation of a key holder's, with its first messages. A unique violation: the id raced in twice. */
export async function openConversation(
  db: Conn,
  caller: JobCaller,
  values: { id: string; contextId: string; callerKey: string; messageId: string; history: Message[] },
): Promise<ConversationRow> {
  const owner = ownerOf(caller);
  if (!owner) throw new Error('a conversation needs an owner');
  const [row] = (await db('a2a_conversations')
    .insert({
      id: values.id,
      context_id: values.contextId,
      caller_key: values.callerKey,
      ...owner,
      message_id: values.messageId,
      history: JSON.stringify(values.history),
    })
    .returning('*')) as ConversationRow[];
  return row as ConversationRow;
}

/** Appends messages (in the caller's transaction, the row locked) and sets the state. */
export async function updateConversation(
  trx: Knex.Transaction,
  row: ConversationRow,
  change: { append?: Message[]; state?: ConversationState },
): Promise<ConversationRow> {
  const [updated] = (await trx('a2a_conversations')
    .where({ id: row.id })
    .update({
      history: JSON.stringify([...row.history, ...(change.append ?? [])]),
      state: change.state ?? row.state,
      updated_at: trx.fn.now(),
    })
    .returning('*')) as ConversationRow[];
  return updated as ConversationRow;
}

/** The history of a conversation that became a job (its messages before the request), else none. */
export async function historyOf(db: Conn, jobId: string): Promise<Message[]> {
  const row = (await db('a2a_conversations').where({ id: jobId }).first('history')) as
    { history: Message[] } | undefined;
  return row?.history ?? [];
}

export { owned as ownedConversations };

/** Cancels a conversation still waiting (a cancelled one is answered as it is); one started is its job's. */
export async function cancelConversation(
  db: Db,
  row: ConversationRow,
  caller: JobCaller,
): Promise<ConversationRow> {
  return db.transaction(async (trx) => {
    const locked = await conversationFor(trx, row.id, caller, { forUpdate: true });
    if (!locked || locked.state !== 'input_required') return locked ?? row;
    return updateConversation(trx, locked, { state: 'canceled' });
  });
}
