// A queue job's attempts as BullMQ counts them, for the processors of every queue and proof kind.
import { UnrecoverableError } from 'bullmq';
import type { Job } from 'bullmq';

/** Whether this run is the job's last: it failed for good, or no attempt is left after it. */
export function isFinalAttempt(job: Job, err: unknown): boolean {
  return err instanceof UnrecoverableError || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
}
