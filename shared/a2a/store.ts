// What the A2A protocol adds to a job, in Postgres: the task's context id and the message that made
// it (a2a_tasks). Its push notification config is kept apart (./push-configs.ts).
import type { Knex } from 'knex';
import type { Db } from '../platform/db/knex';

export interface A2ATaskRow {
  job_id: string;
  context_id: string;
  caller_key: string;
  message_id: string;
  request_hash: string;
  created_at: Date;
}

type Conn = Db | Knex.Transaction;

/** The task a caller's message id made, if any (a resent message answers it instead of making another). */
export async function taskByMessage(db: Conn, callerKey: string, messageId: string) {
  return (await db('a2a_tasks').where({ caller_key: callerKey, message_id: messageId }).first()) as
    A2ATaskRow | undefined;
}

/** In the job's transaction. A unique violation means the same message id raced in twice. */
export async function recordTask(trx: Knex.Transaction, row: Omit<A2ATaskRow, 'created_at'>): Promise<void> {
  await trx('a2a_tasks').insert(row);
}

/** A job's A2A context id; a job made by createJob is its own context. */
export async function contextIdOf(db: Conn, jobId: string): Promise<string> {
  const row = (await db('a2a_tasks').where({ job_id: jobId }).first('context_id')) as
    { context_id: string } | undefined;
  return row?.context_id ?? jobId;
}

export const isUniqueViolation = (err: unknown): boolean => (err as { code?: string })?.code === '23505';
