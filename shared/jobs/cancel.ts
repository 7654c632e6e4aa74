// Cancelling a job before its work starts. Only what nobody has paid for yet can be cancelled: a job
// awaiting payment (or whose quote expired but is still watched) with no payment being verified, or a
// free job still queued. A paid job runs, and a running job is not interrupted.
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { conflict } from '../platform/errors';
import { authorizeJob } from './access';
import type { JobAccess } from './access';
import { jobChanged } from './notify';
import type { JobRow } from './jobs';

/**
 * An expired job whose quote is still watched: a transfer made before then is still verified and
 * revives the job (paid_late), so it is not over yet.
 */
export function stillWatched(job: Pick<JobRow, 'status' | 'expires_at'>, now = Date.now()): boolean {
  return (
    job.status === 'expired' &&
    job.expires_at !== null &&
    new Date(job.expires_at).getTime() + env.QUOTE_LATE_WINDOW_SECONDS * 1000 > now
  );
}

/** When a watched expired quote stops being watched (undefined for any other job). */
export function watchEndsAt(job: Pick<JobRow, 'status' | 'expires_at'>): number | undefined {
  if (job.status !== 'expired' || job.expires_at === null) return undefined;
  return new Date(job.expires_at).getTime() + env.QUOTE_LATE_WINDOW_SECONDS * 1000;
}

export interface CancelOutcome {
  row: JobRow;
  /** False when the job was cancelled already (cancelling twice is not an error). */
  changed: boolean;
}

/**
 * Cancels a job for a caller who may act on it (shared/jobs/access.ts: the key that created it, its
 * capability, the operator); for anyone else the job is not found, as on its other routes. The row is
 * locked, so a payment submitted at the same moment either lands first (and the cancel is refused) or
 * finds the job cancelled.
 */
export async function cancelJob(db: Db, jobId: string, access: JobAccess): Promise<CancelOutcome> {
  const outcome = await db.transaction(async (trx): Promise<CancelOutcome> => {
    const found = (await trx('jobs').where({ id: jobId }).forUpdate().first()) as JobRow | undefined;
    const job = authorizeJob(found, jobId, access);
    if (job.status === 'cancelled') return { row: job, changed: false };
    const cancelable =
      job.status === 'awaiting_payment' ||
      stillWatched(job) ||
      (job.status === 'queued' && job.price_usd_cents === 0);
    if (!cancelable) {
      const why =
        job.status === 'queued'
          ? 'it is paid, and paid work runs'
          : job.status === 'running'
            ? 'it is running, and running work is not interrupted'
            : `it has ended (${job.status})`;
      throw conflict('job_not_cancelable', `The job cannot be cancelled: ${why}.`);
    }
    const verifying = await trx('payments')
      .where({ job_id: jobId })
      .whereIn('status', ['pending', 'verifying'])
      .first('id');
    if (verifying) {
      throw conflict(
        'job_not_cancelable',
        'The job cannot be cancelled: a payment for it is being verified, and it runs once confirmed.',
      );
    }
    const error = { code: 'cancelled', message: 'Cancelled by its creator.' };
    const { rows } = await trx.raw(
      `with u as (
         update jobs set status = 'cancelled', error = ?::jsonb, finished_at = now(), updated_at = now()
         where id = ? returning *
       ), e as (
         insert into job_events (job_id, type, data) select id, 'cancelled', '{}'::jsonb from u
       )
       select * from u`,
      [JSON.stringify(error), jobId],
    );
    return { row: (rows as JobRow[])[0]!, changed: true };
  });
  if (outcome.changed) jobChanged(jobId);
  return outcome;
}
