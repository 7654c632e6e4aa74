// What the A2A protocol adds to a job, in Postgres: the task's context id and the message that made
// it (a2a_tasks), and its push notification config, kept as a job webhook of the `a2a` format.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../db/knex';
import { conflict } from '../errors';
import type { JobRow } from '../jobs/jobs';
import { terminalStatuses } from '../jobs/jobs';

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

export interface PushConfig {
  id: string;
  url: string;
  token: string;
  authentication?: { scheme: string; credentials: string } | undefined;
}

interface PushRow {
  job_id: string;
  url: string;
  config_id: string | null;
  token: string | null;
  auth_scheme: string | null;
  auth_credentials: string | null;
  format: string;
}

/**
 * Subscribes a job to A2A pushes: one config per job (a second is `409 push_config_exists`). Made with
 * the job, it starts at the job's first event; added later, at its next one. The config's id is
 * assigned when the caller left it empty. The webhook secret column gets a random value nobody sees:
 * A2A deliveries are keyed with the config's own token instead (see docs/agent-exchange.md).
 */
export async function registerPushConfig(
  trx: Knex.Transaction,
  job: Pick<JobRow, 'id' | 'agent_id' | 'status'>,
  config: PushConfig,
  jobUrl: string,
  opts: { fromStart: boolean },
): Promise<PushConfig> {
  const id = config.id || randomUUID();
  const last = opts.fromStart
    ? 0
    : ((
        (await trx('job_events').where({ job_id: job.id }).max({ id: 'id' }).first()) as { id: string | null }
      ).id ?? 0);
  const inserted = await trx('job_webhooks')
    .insert({
      job_id: job.id,
      url: config.url,
      secret: `whsec_${randomBytes(32).toString('base64url')}`,
      job_url: jobUrl,
      agent_id: job.agent_id ?? null,
      last_event_id: last,
      // An expired job is still watched for a late payment; the relay retires it when that ends.
      active: !terminalStatuses.has(job.status) || job.status === 'expired',
      format: 'a2a',
      config_id: id,
      token: config.token || null,
      auth_scheme: config.authentication?.scheme || null,
      auth_credentials: config.authentication?.credentials || null,
    })
    .onConflict('job_id')
    .ignore()
    .returning('job_id');
  if (inserted.length === 0) {
    throw conflict(
      'push_config_exists',
      'This task already has a push notification config or webhook (one per task); delete the config first.',
    );
  }
  return { ...config, id };
}

/**
 * The task's A2A push config as a read shows it: the token and credentials are write-only (a task id
 * is all it takes to read a task made anonymously, and they are the receiver's secrets).
 */
export async function pushConfigOf(db: Conn, jobId: string): Promise<PushConfig | undefined> {
  const row = (await db('job_webhooks').where({ job_id: jobId, format: 'a2a' }).first()) as
    PushRow | undefined;
  if (!row) return undefined;
  return {
    id: row.config_id ?? '',
    url: row.url,
    token: '',
    authentication: row.auth_scheme ? { scheme: row.auth_scheme, credentials: '' } : undefined,
  };
}

/** What an A2A push sends back to its receiver, for the delivery worker. */
export async function pushCredentialsOf(
  db: Conn,
  jobId: string,
): Promise<{ token: string | null; authorization: string | null } | undefined> {
  const row = (await db('job_webhooks').where({ job_id: jobId, format: 'a2a' }).first()) as
    PushRow | undefined;
  if (!row) return undefined;
  return {
    token: row.token,
    authorization: row.auth_scheme ? `${row.auth_scheme} ${row.auth_credentials ?? ''}`.trim() : null,
  };
}

export async function deletePushConfig(db: Conn, jobId: string, configId: string): Promise<boolean> {
  const n = await db('job_webhooks').where({ job_id: jobId, format: 'a2a', config_id: configId }).delete();
  return n > 0;
}
