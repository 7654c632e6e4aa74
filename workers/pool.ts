// BullMQ worker construction shared by the worker and prover processes: one place for locks, stalls,
// outages and metrics.
import { hostname } from 'node:os';
import { DelayedError, UnrecoverableError, Worker } from 'bullmq';
import type { Processor } from 'bullmq';
import { env } from '../shared/platform/env';
import { isOutageOfOurs } from '../shared/platform/errors';
import { logger } from '../shared/platform/log';
import { jobWait, jobsFailed, jobsStalled } from '../shared/platform/metrics';
import { queueTelemetry } from '../shared/platform/tracing';
import type { QueueName } from '../shared/platform/queues';
import type { RedisClient } from '../shared/platform/redis';

/**
 * How long a job that met an outage of Postgres or Redis waits before it runs again: the wait grows
 * with how long this worker has seen the outage (from `minMs` up to `maxMs`), and each wait is drawn
 * between half and all of it, so the jobs held back do not all come back in the same instant.
 */
export class OutageBackoff {
  private since: number | undefined;

  constructor(
    readonly minMs: number,
    readonly maxMs: number,
  ) {}

  /** The outage goes on: the wait before the job that met it runs again. */
  next(now = Date.now()): number {
    this.since ??= now;
    const ceiling = Math.min(this.maxMs, Math.max(this.minMs, now - this.since));
    return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
  }

  /** A job ran to an answer of its own: the dependencies answer again. */
  clear(): void {
    this.since = undefined;
  }

  get inOutage(): boolean {
    return this.since !== undefined;
  }
}

/**
 * The rule for outages: when our own infrastructure (Postgres, Redis) is unreachable, the job goes back
 * to the delayed set without spending an attempt (moveToDelayed does not touch attemptsMade) and runs
 * again after an OutageBackoff wait, for as long as the outage lasts. Only the job's own failures count
 * as attempts. When Redis is down too, the move fails: the job is left to its lock, which lapses, and
 * BullMQ's stalled check hands it to a worker again (maxStalledCount), still without an attempt.
 */
export function outageTolerant(queue: QueueName, processor: Processor, backoff: OutageBackoff): Processor {
  return async (job, token, signal) => {
    try {
      const out: unknown = await processor(job, token, signal);
      backoff.clear();
      return out;
    } catch (err) {
      if (err instanceof DelayedError) {
        backoff.clear();
        throw err;
      }
      if (err instanceof UnrecoverableError || !isOutageOfOurs(err)) {
        backoff.clear();
        throw err;
      }
      const wait = backoff.next();
      try {
        await job.moveToDelayed(Date.now() + wait, token);
      } catch {
        // Redis is unreachable as well: the lock lapses and the stalled check runs the job again.
      }
      logger.debug({ queue, jobId: job.id, waitMs: wait }, 'job held back by an outage');
      throw new DelayedError();
    }
  };
}

export interface WorkerOptions {
  concurrency?: number;
  prefix?: string;
  lockDurationMs?: number;
  /** Default: WORKER_OUTAGE_RETRY_MIN_MS and WORKER_OUTAGE_RETRY_MAX_MS. */
  outage?: OutageBackoff;
}

/**
 * BullMQ's lock, its renewal and the stalled check, from one period `lockDurationMs`: a job whose worker
 * died (SIGKILL, lost host) runs again on another worker within that period. The lock lives half the
 * period and is renewed every quarter, so it lapses at most half a period after the death. The stalled
 * check moves a job to wait at the first check after its lock lapsed that comes after a check that saw
 * it active with no renewal since; the check is timed every sixth of the period, and as workers share
 * one check per interval (BullMQ's stalled-check key) a timer that fires early skips a turn, so checks
 * come at most a third of the period apart: at most 1/2 + 1/3 of the period after the death.
 * (test/platform/crash.test.ts holds it to the period; with a check every third of the period it took
 * 2.7 s or, one skipped turn later, 4.0 s for a 4 s period.)
 */
export function lockTimings(lockDurationMs: number): {
  lockDuration: number;
  lockRenewTime: number;
  stalledInterval: number;
} {
  const lockDuration = Math.max(2, Math.floor(lockDurationMs / 2));
  return {
    lockDuration,
    lockRenewTime: Math.max(1, Math.floor(lockDurationMs / 4)),
    stalledInterval: Math.max(1, Math.floor(lockDurationMs / 6)),
  };
}

/**
 * The time a job waited for its first worker: from when it was added, or when the delay it was added
 * with ran out, to when a worker took it up. Later runs (retries, rechecks, stalls) wait for reasons of
 * their own and are not counted.
 */
export function observeWait(queue: QueueName, processor: Processor): Processor {
  return (job, token, signal) => {
    if (job.attemptsStarted <= 1 && job.processedOn !== undefined) {
      const ready = job.timestamp + (job.opts.delay ?? 0);
      jobWait.observe({ queue }, Math.max(0, job.processedOn - ready) / 1000);
    }
    return processor(job, token, signal);
  };
}

export function startWorker(
  queue: QueueName,
  processor: Processor,
  connection: RedisClient,
  opts: WorkerOptions = {},
): Worker {
  const outage =
    opts.outage ?? new OutageBackoff(env.WORKER_OUTAGE_RETRY_MIN_MS, env.WORKER_OUTAGE_RETRY_MAX_MS);
  const telemetry = queueTelemetry();
  const worker = new Worker(queue, observeWait(queue, outageTolerant(queue, processor, outage)), {
    // Shown in Bull Board and kept on each job (processedBy): which process ran it, or held it when it died.
    name: `${hostname()}:${process.pid}`,
    connection,
    prefix: opts.prefix ?? env.QUEUE_PREFIX,
    concurrency: opts.concurrency ?? env.WORKER_CONCURRENCY,
    ...lockTimings(opts.lockDurationMs ?? env.WORKER_LOCK_DURATION_MS),
    // Each Redis outage can leave a job in flight stalled once (its lock lapses while nobody can reach
    // Redis); a job is failed for stalls only after this many, which an outage alone does not reach.
    maxStalledCount: env.WORKER_MAX_STALLED_COUNT,
    autorun: true,
    // With traces on, each job's processing is a span in the trace of the request that queued it.
    ...(telemetry ? { telemetry } : {}),
  });
  worker.on('failed', (job, err) => {
    const final = !job || err instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1);
    jobsFailed.inc({ queue, final: String(final) });
    logger.warn(
      { queue, jobId: job?.id, attempt: job?.attemptsMade, err: err.message },
      'job attempt failed',
    );
  });
  worker.on('stalled', () => jobsStalled.inc({ queue }));
  worker.on('error', (err) => logger.error({ queue, err: err.message }, 'worker error'));
  return worker;
}
