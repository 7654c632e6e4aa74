// Jobs: creation, state changes and reads. Every change is one conditional statement that also
// appends to job_events, so a row never moves out of order and every move wakes its waiters.
import type { Knex } from 'knex';
import type { Db } from '../platform/db/knex';
import { AppError, notFound, validationFailed } from '../platform/errors';
import { newCapability } from '../platform/capabilities';
import { newId } from '../platform/ids';
import { logger } from '../platform/log';
import { MicroBatch, batchPer } from '../platform/batch';
import { jobChanged } from './notify';
import type { Queues } from '../platform/queues';
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
  /** The license whose key created the job. */
  license_id: string | null;
  /** The organization key (rk_…) that created it, when one did: its capability dies with that key. */
  organization_key_id: string | null;
  /** sha256 of the job's capability (shared/jobs/access.ts); never shown. */
  access_hash: string | null;
  /** sha256 of the capability given to the request that settled an x402 payment of the job. */
  payer_access_hash: string | null;
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
  /** The license whose key creates the job. */
  licenseId?: string | undefined;
  /** The organization key (rk_…) that creates it, when one does. */
  organizationKeyId?: string | null | undefined;
  /** What may pay a priced job as it is made (a license's prepaid credit), in its transaction. */
  prepayment?: Prepayment | undefined;
  /** The id, minted ahead (an A2A conversation's task id becomes its job's); a new one when absent. */
  id?: string | undefined;
}

/**
 * A payer that settles a priced job as it is made, inside the transaction that stores it: `take` the
 * price (false: it cannot, and the job waits for payment like anyone's), then `record` what paid once
 * the job row exists.
 */
export interface Prepayment {
  take(trx: Knex.Transaction, usdCents: number): Promise<boolean>;
  record(trx: Knex.Transaction, jobId: string, usdCents: number): Promise<void>;
}

/** A job just stored, and its capability: shown to its creator once, never stored (only its hash). */
export interface CreatedJob {
  row: JobRow;
  accessToken: string;
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
 * Stores a job with a new capability; free jobs (and priced ones a license's prepaid credit pays) are
 * queued at once, priced ones wait for payment. `within` runs in the same transaction, so what belongs
 * to the job (its quotes, its referral, its credit debit) is written with it or not at all. The
 * enqueue happens after commit.
 */
export async function createJob(
  db: Db,
  queues: Queues,
  req: CreateJobInput,
  within?: (trx: Knex.Transaction, row: JobRow) => Promise<void>,
): Promise<CreatedJob> {
  const service = serviceOrThrow(req.service);
  const input = validateServiceInput(service, req.input);
  const free = service.priceUsdCents === 0;
  const id = req.id ?? newId('job');
  const access = newCapability('job');
  const values: NewJobValues = {
    id,
    serviceId: service.id,
    status: free ? 'queued' : 'awaiting_payment',
    input: JSON.stringify(input),
    priceUsdCents: service.priceUsdCents,
    agentId: req.agentId ?? null,
    licenseId: req.licenseId ?? null,
    organizationKeyId: req.organizationKeyId ?? null,
    accessHash: access.hash,
  };
  const prepaid = free ? undefined : req.prepayment;
  // The common case (nothing else to write) joins other creates in one statement and one addBulk.
  if (!within && !prepaid) {
    return { row: await creationBatch(queues, db).add(values), accessToken: access.token };
  }
  const row = await db.transaction(async (trx) => {
    const paid = !!prepaid && (await prepaid.take(trx, service.priceUsdCents));
    if (paid) values.status = 'queued';
    const [r] = await insertJobs(trx, [values]);
    if (paid) await prepaid.record(trx, id, service.priceUsdCents);
    await within?.(trx, r!);
    return r!;
  });
  jobChanged(id);
  if (row.status === 'queued') await enqueueJob(queues, id, row.service_id);
  return { row, accessToken: access.token };
}

interface NewJobValues {
  id: string;
  serviceId: string;
  status: JobStatus;
  input: string;
  priceUsdCents: number;
  agentId: string | null;
  licenseId: string | null;
  organizationKeyId: string | null;
  accessHash: string;
}

/** Inserts jobs and their first event in one statement; rows come back in the order given. */
async function insertJobs(conn: Db | Knex.Transaction, jobs: NewJobValues[]): Promise<JobRow[]> {
  const tuples = jobs
    .map(() => `(?, ?, ?, ?::jsonb, ?, ?, ?, ?, ?, case when ? = 'queued' then now() end)`)
    .join(', ');
  const { rows } = await conn.raw(
    `with j as (
       insert into jobs (id, service_id, status, input, price_usd_cents, agent_id, license_id,
         organization_key_id, access_hash, queued_at)
       values ${tuples}
       returning *
     ), e as (
       insert into job_events (job_id, type, data) select id, status, '{}'::jsonb from j
     )
     select * from j`,
    jobs.flatMap((j) => [
      j.id,
      j.serviceId,
      j.status,
      j.input,
      j.priceUsdCents,
      j.agentId,
      j.licenseId,
      j.organizationKeyId,
      j.accessHash,
      j.status,
    ]),
  );
  const byId = new Map((rows as JobRow[]).map((r) => [r.id, r]));
  return jobs.map((j) => byId.get(j.id)!);
}

/**
 * Creates that arrive in the same turn of the event loop share one INSERT (one commit) and one Redis
 * addBulk. Each caller still gets its own row once its job is in Postgres and, when queued, offered
 * to Redis (a Redis failure is left to the sweeper), exactly as a lone create.
 */
const creationBatch = batchPer(
  (queues: Queues, db: Db) =>
    new MicroBatch<NewJobValues, JobRow>(async (jobs) => {
      const rows = await insertJobs(db, jobs);
      for (const r of rows) jobChanged(r.id);
      const queued = rows
        .filter((r) => r.status === 'queued')
        .map((r) => ({ jobId: r.id, service: r.service_id }));
      try {
        await queues.enqueueMany('jobs', queued);
      } catch (err) {
        logger.warn(
          { jobs: queued.length, err: (err as Error).message },
          'enqueue failed; the sweeper will retry from Postgres',
        );
      }
      return rows;
    }),
);

/** Enqueues a queued job; a Redis failure is logged, not thrown: the sweeper re-enqueues from Postgres. */
export async function enqueueJob(queues: Queues, jobId: string, service: string): Promise<boolean> {
  try {
    await queues.enqueue('jobs', { jobId, service });
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

/**
 * Claims a job for running. Undefined when it already ended (a duplicate delivery): nothing to do.
 * Claims made in the same turn of the event loop share one statement.
 */
export function claimJob(db: Db, jobId: string): Promise<JobRow | undefined> {
  return batchFor(claimBatches, db, (ids) => claimJobs(db, ids)).add(jobId);
}

/** Completes a running job with its result; undefined when another delivery completed it first. */
export function completeJob(db: Db, jobId: string, result: unknown): Promise<JobRow | undefined> {
  return batchFor(completeBatches, db, (items) => completeJobs(db, items)).add({ id: jobId, result });
}

async function claimJobs(db: Db, ids: string[]): Promise<Array<JobRow | undefined>> {
  const { rows } = await db.raw(
    `with c as (
       update jobs set status = 'running', attempts = attempts + 1, started_at = coalesce(started_at, now()),
         progress_stage = 'running', updated_at = now()
       where id = any(?::text[]) and status in ('queued', 'running') returning *
     ), e as (
       insert into job_events (job_id, type, data) select id, 'running', '{}'::jsonb from c
     )
     select * from c`,
    [ids],
  );
  return byIds(ids, rows as JobRow[]);
}

async function completeJobs(
  db: Db,
  items: Array<{ id: string; result: unknown }>,
): Promise<Array<JobRow | undefined>> {
  const { rows } = await db.raw(
    `with v as (
       select * from unnest(?::text[], ?::jsonb[]) as v(id, result)
     ), u as (
       update jobs j set status = 'succeeded', result = v.result, error = null, progress = 100,
         progress_stage = 'done', finished_at = now(), updated_at = now()
       from v where j.id = v.id and j.status = 'running' returning j.*
     ), e as (
       insert into job_events (job_id, type, data) select id, 'succeeded', '{}'::jsonb from u
     )
     select * from u`,
    [items.map((i) => i.id), items.map((i) => JSON.stringify(i.result ?? null))],
  );
  return byIds(
    items.map((i) => i.id),
    rows as JobRow[],
  );
}

function byIds(ids: string[], rows: JobRow[]): Array<JobRow | undefined> {
  const map = new Map(rows.map((r) => [r.id, r]));
  for (const r of rows) jobChanged(r.id);
  // A job listed twice in one batch is changed once; the first caller gets the row.
  return ids.map((id) => {
    const row = map.get(id);
    map.delete(id);
    return row;
  });
}

const claimBatches = new WeakMap<Db, MicroBatch<string, JobRow | undefined>>();
const completeBatches = new WeakMap<Db, MicroBatch<{ id: string; result: unknown }, JobRow | undefined>>();

function batchFor<I, R>(
  cache: WeakMap<Db, MicroBatch<I, R>>,
  db: Db,
  run: (items: I[]) => Promise<R[]>,
): MicroBatch<I, R> {
  let batch = cache.get(db);
  if (!batch) cache.set(db, (batch = new MicroBatch(run)));
  return batch;
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
