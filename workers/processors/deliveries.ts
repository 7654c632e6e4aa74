// The `deliveries` queue: one step of one logistics request. Waiting for the job to end goes back to
// the delayed set without spending an attempt; a failed POST is retried with backoff, then marked failed.
import { DelayedError, UnrecoverableError } from 'bullmq';
import type { Processor } from 'bullmq';
import type { Db } from '../../shared/platform/db/knex';
import { isOutageOfOurs } from '../../shared/platform/errors';
import { failDelivery, processDelivery } from '../../shared/deliveries/deliveries';
import { jobDuration, jobsProcessed } from '../../shared/platform/metrics';
import { queueCatalog } from '../../shared/platform/queues';
import type { SweepTarget } from '../sweeper';
import { isFinalAttempt } from '../attempts';

/** The rows of this queue the sweeper keeps in the queue. */
export const deliveriesSweepTarget: SweepTarget<'deliveries'> = {
  queue: 'deliveries',
  table: 'logistics_requests',
  statuses: ['queued', 'delivering'],
  payload: (row) => ({ requestId: row.id }),
  markFailed: (db, id, reason) => failDelivery(db, id, reason),
};

export function deliveriesProcessor(db: Db): Processor {
  return async (job, token) => {
    const parsed = queueCatalog.deliveries.payload.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError('malformed deliveries payload');
    const { requestId } = parsed.data;
    const end = jobDuration.startTimer({ queue: 'deliveries' });
    try {
      const result = await processDelivery(db, requestId, job.attemptsMade + 1);
      end({ outcome: result.outcome });
      jobsProcessed.inc({ queue: 'deliveries', outcome: result.outcome });
      if (result.outcome === 'wait') {
        await job.moveToDelayed(Date.now() + result.delayMs, token);
        throw new DelayedError();
      }
      return result.outcome;
    } catch (err) {
      if (err instanceof DelayedError) throw err;
      end({ outcome: 'error' });
      jobsProcessed.inc({ queue: 'deliveries', outcome: 'error' });
      // Postgres or Redis down: no attempt spent; the pool holds the job back (pool.ts).
      if (isOutageOfOurs(err)) throw err;
      if (isFinalAttempt(job, err)) {
        // Postgres gone in the meantime: the sweeper marks the row from BullMQ's failed job later.
        await failDelivery(db, requestId, (err as Error).message).catch(() => undefined);
        throw new UnrecoverableError((err as Error).message);
      }
      throw err;
    }
  };
}
