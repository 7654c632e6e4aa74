// Reading a job's payment side (its quotes, the payments submitted, its receipts, and while it awaits
// payment the networks the x402 settler takes) to shape it with ./views.ts; and a stored receipt.
import type { JobRow } from '../jobs/jobs';
import type { Db } from '../platform/db/knex';
import { notFound } from '../platform/errors';
import { jobQuotes } from './quotes';
import type { UnavailableAsset } from './quotes';
import type { Receipt } from './receipts';
import type { PaymentRow } from './rows';
import { jobPaymentView } from './views';
import type { JobPaymentView } from './views';
import { x402Networks } from './x402/settle';

/**
 * A priced job's payment side: its quotes, x402 requirements, the payments submitted and the receipt.
 * Undefined for jobs that never needed paying.
 */
export async function jobPayment(
  db: Db,
  job: Pick<JobRow, 'id' | 'service_id' | 'status' | 'expires_at'>,
  base: string,
  extra: { unavailable?: UnavailableAsset[] } = {},
): Promise<JobPaymentView | undefined> {
  const quotes = await jobQuotes(db, job.id);
  if (quotes.length === 0) return undefined;
  const payments = (await db('payments')
    .where({ job_id: job.id })
    .orderBy('created_at', 'desc')
    .limit(20)) as PaymentRow[];
  const receipts = (await db('receipts').where({ job_id: job.id }).select('id', 'payment_id')) as Array<{
    id: string;
    payment_id: string;
  }>;
  const networks = job.status === 'awaiting_payment' ? await x402Networks() : undefined;
  return jobPaymentView(job, { quotes, payments, receipts, x402Networks: networks }, base, extra);
}

export async function getReceipt(db: Db, receiptId: string): Promise<Receipt> {
  const row = (await db('receipts').where({ id: receiptId }).first()) as { document: Receipt } | undefined;
  if (!row) throw notFound(`Receipt ${receiptId}`);
  return row.document;
}
