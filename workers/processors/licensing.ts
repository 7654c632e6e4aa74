// The `checkouts` queue: one check of one checkout's transfer; the license is issued when it settles
// confirmed. A transfer the chain has not settled yet goes back to the delayed set without an attempt.
import { DelayedError, UnrecoverableError } from 'bullmq';
import type { Processor } from 'bullmq';
import { failCheckout, processCheckout } from '../../shared/licensing/verify';
import type { CheckoutProcessOptions } from '../../shared/licensing/verify';
import type { Db } from '../../shared/platform/db/knex';
import { jobDuration, jobsProcessed } from '../../shared/platform/metrics';
import { queueCatalog } from '../../shared/platform/queues';
import type { SweepTarget } from '../sweeper';

/** The rows of this queue the sweeper keeps in the queue. */
export const checkoutsSweepTarget: SweepTarget<'checkouts'> = {
  queue: 'checkouts',
  table: 'checkouts',
  statuses: ['pending', 'verifying'],
  payload: (row) => ({ checkoutId: row.id }),
  markFailed: (db, id, reason) => failCheckout(db, id, reason),
};

export function checkoutsProcessor(db: Db, opts: CheckoutProcessOptions = {}): Processor {
  return async (job, token) => {
    const parsed = queueCatalog.checkouts.payload.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError('malformed checkouts payload');
    const end = jobDuration.startTimer({ queue: 'checkouts' });
    let result;
    try {
      result = await processCheckout(db, parsed.data.checkoutId, opts);
    } catch (err) {
      // The row stays pending/verifying; BullMQ retries with backoff and the sweeper has the rest.
      end({ outcome: 'error' });
      jobsProcessed.inc({ queue: 'checkouts', outcome: 'error' });
      throw err;
    }
    end({ outcome: result.outcome });
    jobsProcessed.inc({ queue: 'checkouts', outcome: result.outcome });
    if (result.outcome === 'recheck') {
      await job.moveToDelayed(Date.now() + result.delayMs, token);
      throw new DelayedError();
    }
    return result;
  };
}
