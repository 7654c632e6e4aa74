// Jobs: creation, state changes and reads. Every change is one conditional statement that also
// appends to job_events, so a row never moves out of order and every move wakes its waiters.
import type { Knex } from 'knex';
import type { Db } from '../db/knex';
import { AppError, notFound, validationFailed } from '../errors';
import { newId } from '../ids';
import { logger } from '../log';
import { jobChanged } from './notify';
import type { Queues } from '../queues';
import { findService } from './catalog';
import type { RunContext, ServiceDefinition } from './catalog';
import { z } from 'zod';

export const jobStatuses = [
  'awaiting_payment',
  'queued',
  'running',
  'succeeded',
  'failed',
  'expired',
  'cancelled',
] as const;
export type JobStatus = (typeof jobStatuses)[number];
export const terminalStatuses: ReadonlySet<JobStatus> = new Set([
  'succeeded',
  'failed',
  'expired',
  'cancelled',
]);

export interface JobRow {
  id: string;
  service_id: string;
  status: JobStatus;
  input: unknown;
  result: unknown;
  error: { code: string; message: string } | null;
  progress: number;
  progress_stage: string | null;
  price_usd_cents: number;
  agent_id: string | null;
  attempts: number;
  created_at: Date;
  updated_at: Date;
  queued_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
  expires_at: Date | null;
}

export interface CreateJobInput {
  service: string;
  input: unknown;
  agentId?: string | null;
  /** Whether the caller holds a license that waives payment. */
  licensed?: boolean;
}

export function serviceOrThrow(id: string): ServiceDefinition {
  const service = findService(id);
  if (!service) {
    throw new AppError(422, 'unknown_service', `There is no service '${id}'. GET /api/services lists them.`, {
      errors: [{ path: 'service', message: 'unknown service' }],
    });
  }
  return service;
}

export function validateServiceInput(service: ServiceDefinition, input: unknown): unknown {
  const parsed = service.input.safeParse(input);
  if (!parsed.success) {
    throw validationFailed(
      parsed.error.issues.map((i) => ({ path: ['input', ...i.path].join('.'), message: i.message })),
      `The input does not match the schema of '${service.id}'.`,
    );
  }
  return parsed.data;
}

/**
 * Stores a job; free (or licensed) jobs are queued at once, priced ones wait for payment. `within`
 * runs in the same transaction, so what belongs to the job (its quotes, its referral) is written with
 * it or not at all. The enqueue happens after commit.
 */
export async function createJob(
  db: Db,
  queues: Queues,
  req: CreateJobInput,
  within?: (trx: Knex.Transaction, row: JobRow) => Promise<void>,
): Promise<JobRow> {
  const service = serviceOrThrow(req.service);
  const input = validateServiceInput(service, req.input);
  const free = service.priceUsdCents === 0 || req.licensed === true;
  const id = newId('job');
  const status: JobStatus = free ? 'queued' : 'awaiting_payment';
  const insert = async (conn: Db | Knex.Transaction) =>
    (
      await conn.raw(
        `with j as (
           insert into jobs (id, service_id, status, input, price_usd_cents, agent_id, queued_at)
           values (?, ?, ?, ?, ?, ?, ${free ? 'now()' : 'null'})
           returning *
         ), e as (
           insert into job_events (job_id, type, data) select id, status, '{}'::jsonb from j
         )
         select * from j`,
        [
          id,
          service.id,
          status,
          JSON.stringify(input),
          free ? 0 : service.priceUsdCents,
          req.agentId ?? null,
        ],
      )
    ).rows[0] as JobRow;
  // The common case (nothing else to write) stays a single statement.
  const row = within
    ? await db.transaction(async (trx) => {
        const r = await insert(trx);
        await within(trx, r);
        return r;
      })
    : await insert(db);
  jobChanged(id);
  if (free) await enqueueJob(queues, id);
  return row;
}

/** Enqueues a queued job; a Redis failure is logged, not thrown: the sweeper re-enqueues from Postgres. */
export async function enqueueJob(queues: Queues, jobId: string): Promise<boolean> {
  try {
    await queues.enqueue('jobs', { jobId });
    return true;
  } catch (err) {
    logger.warn(
      { jobId, err: (err as Error).message },
      'enqueue failed; the sweeper will retry from Postgres',
    );
    return false;
  }
}

export async function getJob(db: Db, id: string): Promise<JobRow> {
  const row = (await db('jobs').where({ id }).first()) as JobRow | undefined;
  if (!row) throw notFound(`Job ${id}`);
  return row;
}

export interface JobEventRow {
  id: string;
  job_id: string;
  type: string;
  data: Record<string, unknown>;
  at: Date;
}

export async function jobEvents(db: Db, jobId: string, afterId = 0): Promise<JobEventRow[]> {
  return (await db('job_events')
    .where('job_id', jobId)
    .andWhere('id', '>', afterId)
    .orderBy('id')) as JobEventRow[];
}

async function transition(
  db: Db,
  jobId: string,
  from: readonly JobStatus[],
  set: string,
  bindings: unknown[],
  event: string,
  eventData: Record<string, unknown> = {},
): Promise<JobRow | undefined> {
  const { rows } = await db.raw(
    `with u as (
       update jobs set ${set}, updated_at = now()
       where id = ? and status = any(?) returning *
     ), e as (
       insert into job_events (job_id, type, data) select id, ?, ?::jsonb from u
     )
     select * from u`,
    [...bindings, jobId, [...from], event, JSON.stringify(eventData)] as Knex.RawBinding[],
  );
  const row = rows[0] as JobRow | undefined;
  if (row) jobChanged(jobId);
  return row;
}

/** Claims a job for running. Undefined when it already ended (a duplicate delivery): nothing to do. */
export function claimJob(db: Db, jobId: string): Promise<JobRow | undefined> {
  return transition(
    db,
    jobId,
    ['queued', 'running'],
    `status = 'running', attempts = attempts + 1, started_at = coalesce(started_at, now()), progress_stage = 'running'`,
    [],
    'running',
  );
}

export function completeJob(db: Db, jobId: string, result: unknown): Promise<JobRow | undefined> {
  return transition(
    db,
    jobId,
    ['running'],
    `status = 'succeeded', result = ?::jsonb, error = null, progress = 100, progress_stage = 'done', finished_at = now()`,
    [JSON.stringify(result ?? null)],
    'succeeded',
  );
}

export function failJob(db: Db, jobId: string, code: string, message: string): Promise<JobRow | undefined> {
  const error = { code, message };
  return transition(
    db,
    jobId,
    ['queued', 'running', 'awaiting_payment'],
    `status = 'failed', error = ?::jsonb, finished_at = now()`,
    [JSON.stringify(error)],
    'failed',
    error,
  );
}

/** A failed attempt that will be retried: the row goes back to queued with the last error kept. */
export function scheduleRetry(
  db: Db,
  jobId: string,
  message: string,
  delayMs: number,
): Promise<JobRow | undefined> {
  return transition(
    db,
    jobId,
    ['running'],
    `status = 'queued', error = ?::jsonb, progress_stage = 'retry_scheduled'`,
    [JSON.stringify({ code: 'attempt_failed', message })],
    'retry_scheduled',
    { message, delayMs },
  );
}

export async function recordProgress(db: Db, jobId: string, percent: number, stage?: string): Promise<void> {
  const p = Math.max(0, Math.min(100, Math.round(percent)));
  await transition(
    db,
    jobId,
    ['running'],
    `progress = ?, progress_stage = coalesce(?, progress_stage)`,
    [p, stage ?? null],
    'progress',
    { percent: p, ...(stage ? { stage } : {}) },
  );
}

/** An error that no retry can fix (bad stored input, a service removed): fail at once. */
export class PermanentJobError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Runs one job to its end state. Idempotent: a job that already ended is skipped, and only one
 * completion is ever written. Throws on a retryable failure (the caller's queue retries it).
 */
export async function runJob(
  db: Db,
  jobId: string,
  opts: { attempt: number; onProgress?: (percent: number, stage?: string) => Promise<void> },
): Promise<{ outcome: 'succeeded' | 'skipped' | 'failed'; row?: JobRow }> {
  const row = await claimJob(db, jobId);
  if (!row) return { outcome: 'skipped' };
  const service = findService(row.service_id);
  if (!service) {
    const failed = await failJob(
      db,
      jobId,
      'unknown_service',
      `Service ${row.service_id} is no longer offered.`,
    );
    return { outcome: 'failed', ...(failed ? { row: failed } : {}) };
  }
  const parsed = service.input.safeParse(row.input);
  if (!parsed.success) {
    const failed = await failJob(
      db,
      jobId,
      'invalid_input',
      'The stored input no longer matches the service schema.',
    );
    return { outcome: 'failed', ...(failed ? { row: failed } : {}) };
  }
  let lastWrite = 0;
  const ctx: RunContext = {
    jobId,
    attempt: opts.attempt,
    progress: async (percent, stage) => {
      await opts.onProgress?.(percent, stage);
      const now = Date.now();
      if (now - lastWrite < 250 && percent < 100) return; // Postgres sees at most 4 progress writes a second
      lastWrite = now;
      await recordProgress(db, jobId, percent, stage);
    },
  };
  const result = await service.run(parsed.data, ctx);
  const done = await completeJob(db, jobId, result);
  return done ? { outcome: 'succeeded', row: done } : { outcome: 'skipped' };
}

export const jobIdSchema = z.string().regex(/^job_[0-9a-z]{26}$/, 'a job id (job_…)');
