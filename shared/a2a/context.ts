// What a task's view needs beside its job (./tasks.ts turns both into the task): its context id, and
// for a priced job its payment part, x402 requirements while it waits and receipts once paid.
import type { Db } from '../platform/db/knex';
import type { JobRow } from '../jobs/jobs';
import { jobPayment } from '../payments/job-payment';
import type { JobPaymentView } from '../payments/views';
import { contextIdOf } from './store';
import type { TaskContext, TaskPayment } from './tasks';

/** What a priced job's status says about its payment: the x402 requirements, or the confirmed payments. */
export async function taskPayment(
  db: Db,
  row: JobRow,
  base: string,
  known?: JobPaymentView,
): Promise<TaskPayment | undefined> {
  if (row.price_usd_cents === 0) return undefined;
  const view = known ?? (await jobPayment(db, row, base));
  if (!view) return undefined; // paid from a license's credit: no quotes, no on-chain payment
  const receipts = view.payments
    .filter((p) => p.status === 'confirmed')
    .map((p) => ({ success: true as const, transaction: p.txRef, network: p.network, payer: p.payer }));
  return { ...(view.x402 ? { required: view.x402 } : {}), ...(receipts.length ? { receipts } : {}) };
}

/**
 * The task's context, `base` being the exchange's public address; what the caller already holds (the
 * context id of the message that made it, the payment view its job was created with) is not read again.
 */
export async function taskContext(
  db: Db,
  row: JobRow,
  base: string,
  known: { contextId?: string | undefined; payment?: JobPaymentView | undefined } = {},
): Promise<TaskContext> {
  return {
    contextId: known.contextId ?? (await contextIdOf(db, row.id)),
    base,
    payment: await taskPayment(db, row, base, known.payment),
  };
}
