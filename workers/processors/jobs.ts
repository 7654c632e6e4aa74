// The `jobs` queue: parse the payload, run the job through the jobs service, map failures to retries.
import { UnrecoverableError } from 'bullmq';
import type { Job, Processor } from 'bullmq';
import type { Db } from '../../shared/platform/db/knex';
import { isOutageOfOurs } from '../../shared/platform/errors';
import { failJob, runJob, scheduleRetry } from '../../shared/jobs/jobs';
import { isFinalAttempt } from '../attempts';
import type { SweepTarget } from '../sweeper';
import { jobDuration, jobsProcessed } from '../../shared/platform/metrics';
import { queueCatalog } from '../../shared/platform/queues';

/** The rows of this queue the sweeper keeps in the queue. */
export const jobsSweepTarget: SweepTarget<'jobs'> = {
  queue: 'jobs',
  table: 'jobs',
  statuses: ['queued', 'running'],
  payload: (row) => ({ jobId: row.id, service: String(row.service_id) }),
  markFailed: (db, id, reason) => failJob(db, id, 'job_failed', reason),
};

export function backoffDelay(job: Job): number {
  const b = job.opts.backoff;
  const base = typeof b === 'number' ? b : (b?.delay ?? 1000);
  return base * 2 ** job.attemptsMade;
}

export function jobsProcessor(db: Db): Processor {
  return async (job) => {
    const parsed = queueCatalog.jobs.payload.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError('malformed jobs payload');
    const { jobId } = parsed.data;
    const end = jobDuration.startTimer({ queue: 'jobs' });
    try {
      const { outcome } = await runJob(db, jobId, {
        attempt: job.attemptsMade + 1,
        onProgress: (percent) => job.updateProgress(percent),
      });
      end({ outcome });
      jobsProcessed.inc({ queue: 'jobs', outcome });
      // A job that reported progress ends at 100 in the queue (Bull Board), as its row does, not at
      // its last report (a small attest.batch stops reporting at 30). Jobs that never reported pay nothing.
      if (
        outcome === 'succeeded' &&
        typeof job.progress === 'number' &&
        job.progress > 0 &&
        job.progress < 100
      )
        await job.updateProgress(100);
      return outcome;
    } catch (err) {
      end({ outcome: 'error' });
      jobsProcessed.inc({ queue: 'jobs', outcome: 'error' });
      // Postgres or Redis down: no attempt spent, the row untouched; the pool holds the job back (pool.ts).
      if (isOutageOfOurs(err)) throw err;
      const message = err instanceof Error ? err.message : String(err);
      if (isFinalAttempt(job, err)) {
        await failJob(db, jobId, 'job_failed', message);
        throw new UnrecoverableError(message);
      }
      await scheduleRetry(db, jobId, message, backoffDelay(job));
      throw err;
    }
  };
}
