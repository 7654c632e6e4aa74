// Ending unpaid jobs whose quotes expired, and releasing the unique amounts they held.
import { jobChanged } from '../jobs/notify';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { releaseExpiredAmounts } from './amount-holds';
import type { PaymentSettings } from './rows';

/**
 * Ends unpaid jobs whose quotes expired (the sweeper calls this each tick). A job with a payment still
 * being verified waits: that payment may yet be confirmed as paid_late.
 */
export async function expireUnpaidJobs(
  db: Db,
  settings: Pick<PaymentSettings, 'QUOTE_TTL_SECONDS'> = env,
): Promise<number> {
  const { rows } = await db.raw(
    `with u as (
       update jobs set status = 'expired', finished_at = now(), updated_at = now(), error = ?::jsonb
       where status = 'awaiting_payment'
         and coalesce(expires_at, created_at + make_interval(secs => ?)) < now()
         and not exists (select 1 from payments p where p.job_id = jobs.id and p.status in ('pending', 'verifying'))
       returning id
     ), e as (
       insert into job_events (job_id, type, data) select id, 'expired', ?::jsonb from u
     )
     select id from u`,
    [
      JSON.stringify({ code: 'quote_expired', message: 'The quote expired before a payment was confirmed.' }),
      settings.QUOTE_TTL_SECONDS,
      JSON.stringify({ code: 'quote_expired' }),
    ],
  );
  for (const { id } of rows as Array<{ id: string }>) jobChanged(id);
  await releaseExpiredAmounts(db);
  return rows.length;
}
