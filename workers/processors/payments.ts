// The `payments` queue: one check of one payment against its chain, made together with the other
// payments this worker takes up in the same tick (shared/payments/check.ts); a payment the chain has
// not settled yet goes back to the delayed set with backoff, without spending an attempt.
import { DelayedError, UnrecoverableError } from 'bullmq';
import type { Processor } from 'bullmq';
import type { Db } from '../../shared/platform/db/knex';
import { jobDuration, jobsProcessed } from '../../shared/platform/metrics';
import { paymentChecker } from '../../shared/payments/check';
import { failPayment } from '../../shared/payments/submit';
import type { ProcessOptions } from '../../shared/payments/check';
import { Queues, queueCatalog } from '../../shared/platform/queues';
import { createRedis } from '../../shared/platform/redis';
import type { SweepTarget } from '../sweeper';

/** The rows of this queue the sweeper keeps in the queue. */
export const paymentsSweepTarget: SweepTarget<'payments'> = {
  queue: 'payments',
  table: 'payments',
  statuses: ['pending', 'verifying'],
  payload: (row) => ({ paymentId: row.id }),
  markFailed: (db, id, reason) => failPayment(db, id, reason),
};

/** `queues` enqueues the paid job; default: a connection of its own. */
export function paymentsProcessor(
  db: Db,
  queues?: Queues,
  opts: ProcessOptions & { maxBatch?: number } = {},
): Processor {
  let own: Queues | undefined;
  const jobQueues = () => queues ?? (own ??= new Queues(createRedis('api')));
  const checker = paymentChecker(db, jobQueues, opts);
  return async (job, token) => {
    const parsed = queueCatalog.payments.payload.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError('malformed payments payload');
    const end = jobDuration.startTimer({ queue: 'payments' });
    let result;
    try {
      result = await checker.check(parsed.data.paymentId);
    } catch (err) {
      // The row stays pending/verifying; BullMQ retries with backoff and the sweeper has the rest.
      end({ outcome: 'error' });
      jobsProcessed.inc({ queue: 'payments', outcome: 'error' });
      throw err;
    }
    end({ outcome: result.outcome });
    jobsProcessed.inc({ queue: 'payments', outcome: result.outcome });
    if (result.outcome === 'recheck') {
      await job.moveToDelayed(Date.now() + result.delayMs, token);
      throw new DelayedError();
    }
    return result;
  };
}
