// A task's push notification config: what a caller may send (a target and what it wants back, sent as
// headers), and how it is kept, as a job webhook of the `a2a` format, one per task.
import { randomUUID } from 'node:crypto';
import type { TaskPushNotificationConfig } from '@a2a-js/sdk';
import type { Knex } from 'knex';
import { z } from 'zod';
import type { Db } from '../platform/db/knex';
import { conflict, validationFailed } from '../platform/errors';
import { sealSubscriptionSecrets } from '../deliveries/secrets';
import { lastEventId } from '../jobs/follow';
import type { JobRow } from '../jobs/jobs';
import { terminalStatuses } from '../jobs/jobs';

type Conn = Db | Knex.Transaction;

export interface PushConfig {
  id: string;
  url: string;
  token: string;
  authentication?: { scheme: string; credentials: string } | undefined;
}

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

/** The config a caller sent, checked; `400 validation_failed` names the fields under `path`. */
export function pushConfigFrom(
  raw: Pick<TaskPushNotificationConfig, 'id' | 'url' | 'token' | 'authentication'>,
  path: string,
): PushConfig {
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

interface PushRow {
  job_id: string;
  url: string;
  config_id: string | null;
  auth_scheme: string | null;
  format: string;
}

/**
 * Subscribes a job to A2A pushes: one config per job (a second is `409 push_config_exists`). Made with
 * the job, it starts at the job's first event; added later, at its next one. The config's id is
 * assigned when the caller left it empty. The token and credentials are sealed to the row (only the
 * deliveries worker opens them); A2A deliveries are HMAC-keyed with the token (docs/exchange.md).
 */
export async function registerPushConfig(
  trx: Knex.Transaction,
  job: Pick<JobRow, 'id' | 'agent_id' | 'status'>,
  config: PushConfig,
  jobUrl: string,
  opts: { fromStart: boolean },
): Promise<PushConfig> {
  const id = config.id || randomUUID();
  const last = opts.fromStart ? 0 : await lastEventId(trx, job.id);
  const inserted = await trx('job_webhooks')
    .insert({
      job_id: job.id,
      url: config.url,
      job_url: jobUrl,
      agent_id: job.agent_id ?? null,
      last_event_id: last,
      // An expired job is still watched for a late payment; the relay retires it when that ends.
      active: !terminalStatuses.has(job.status) || job.status === 'expired',
      format: 'a2a',
      config_id: id,
      auth_scheme: config.authentication?.scheme || null,
      ...sealSubscriptionSecrets(job.id, {
        token: config.token,
        credentials: config.authentication?.credentials,
      }),
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
  const row = (await db('job_webhooks')
    .where({ job_id: jobId, format: 'a2a' })
    .first('job_id', 'url', 'config_id', 'auth_scheme', 'format')) as PushRow | undefined;
  if (!row) return undefined;
  return {
    id: row.config_id ?? '',
    url: row.url,
    token: '',
    authentication: row.auth_scheme ? { scheme: row.auth_scheme, credentials: '' } : undefined,
  };
}

/**
 * Deletes the config and fails its pushes not yet sent: they were made for this receiver, and a config
 * added later (another URL, other credentials) must not send its credentials with them.
 */
export async function deletePushConfig(db: Db, jobId: string, configId: string): Promise<boolean> {
  return db.transaction(async (trx) => {
    const n = await trx('job_webhooks').where({ job_id: jobId, format: 'a2a', config_id: configId }).delete();
    if (n === 0) return false;
    await trx('logistics_requests')
      .where({ job_id: jobId, method: 'a2a_push' })
      .whereIn('status', ['queued', 'delivering'])
      .update({
        status: 'failed',
        last_error: 'The push notification config was deleted.',
        updated_at: trx.fn.now(),
      });
    return true;
  });
}
