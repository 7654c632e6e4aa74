// Submitting a transfer for a priced job (its checks, the one-claim lock, the job's webhook, the
// queued check), and ending a payment whose checks ran out.
import type { Knex } from 'knex';
import { findAsset } from '../chains/assets';
import type { Asset, AssetId, ChainFamily } from '../chains/assets';
import { emitWebhookEvent, enqueueWebhooks } from '../deliveries/webhooks';
import { authorizeJob } from '../jobs/access';
import type { JobAccess } from '../jobs/access';
import type { JobRow } from '../jobs/jobs';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { conflict, notFound, unprocessable, validationFailed } from '../platform/errors';
import { newId } from '../platform/ids';
import { logger } from '../platform/log';
import type { Queues } from '../platform/queues';
import { jobQuotes } from './quotes';
import type { PaymentRow, PaymentStatus } from './rows';
import { lateWindowMs } from './verdict';
import { paymentView } from './views';

const openStatuses: PaymentStatus[] = ['pending', 'verifying'];
const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);

export interface SubmitPaymentInput {
  asset: AssetId;
  txRef: string;
  /** The quote reference being paid, as a check: it must be the job's quote in `asset`. */
  reference?: string | undefined;
  payer?: string | undefined;
  txKey?: string | undefined;
}

const addressFormats: Record<ChainFamily, RegExp> = {
  evm: /^0x[0-9a-fA-F]{40}$/,
  solana: /^[1-9A-HJ-NP-Za-km-z]{32,44}$/,
  bitcoin:
    /^(?:[13mn2][1-9A-HJ-NP-Za-km-z]{25,34}|(?:bc|tb|bcrt)1[02-9ac-hj-np-z]{11,71}|(?:BC|TB|BCRT)1[02-9AC-HJ-NP-Z]{11,71})$/,
  monero: /^[4589AB7][1-9A-HJ-NP-Za-km-z]{94}(?:[1-9A-HJ-NP-Za-km-z]{11})?$/,
};

/** A payer address is recorded only in the format of the asset's chain; anything else is bad input. */
export function checkPayerAddress(asset: Asset, payer: string | undefined, path = 'body.payer'): void {
  if (payer !== undefined && !addressFormats[asset.family].test(payer.trim())) {
    throw validationFailed([{ path, message: `not a ${asset.family} address` }]);
  }
}

const txRefFormats: Record<ChainFamily, { re: RegExp; what: string; lower: boolean }> = {
  evm: { re: /^0x[0-9a-fA-F]{64}$/, what: 'a 0x-prefixed 32-byte transaction hash', lower: true },
  bitcoin: { re: /^[0-9a-fA-F]{64}$/, what: 'a 64-hex-character txid', lower: true },
  monero: { re: /^[0-9a-fA-F]{64}$/, what: 'a 64-hex-character transaction id', lower: true },
  solana: { re: /^[1-9A-HJ-NP-Za-km-z]{64,90}$/, what: 'a base58 transaction signature', lower: false },
};

/** The one spelling of a transaction reference the claim is keyed on. */
export function normalizeTxRef(asset: Asset, txRef: string): string {
  const f = txRefFormats[asset.family];
  const t = txRef.trim();
  if (!f.re.test(t)) throw validationFailed([{ path: 'body.txRef', message: `${asset.id}: ${f.what}` }]);
  return f.lower ? t.toLowerCase() : t;
}

/**
 * Records a payment for a job and returns it (created: false when this job already has a payment for
 * the same transaction). Refused with 409 payment_already_claimed when the transaction is already
 * credited. A transaction being verified for another job is accepted: the binding decides which quote
 * it pays, so submitting someone else's transaction first can no longer lock its payer out.
 * With `access`, the job is found only for a caller who may act on it (shared/jobs/access.ts): anyone
 * else is told it was not found, and nothing is written.
 */
export async function submitPayment(
  db: Db,
  queues: Queues,
  jobId: string,
  input: SubmitPaymentInput,
  opts: { access?: JobAccess; now?: Date } = {},
): Promise<{ payment: PaymentRow; created: boolean }> {
  const now = opts.now ?? new Date();
  const asset = findAsset(input.asset);
  if (!asset) throw validationFailed([{ path: 'body.asset', message: 'unknown asset' }]);
  const txRef = normalizeTxRef(asset, input.txRef);
  checkPayerAddress(asset, input.payer);
  if (asset.family === 'monero') {
    if (!input.txKey || !/^[0-9a-fA-F]{64}$/.test(input.txKey))
      throw validationFailed([
        { path: 'body.txKey', message: 'XMR payments need the 64-hex transaction key' },
      ]);
  } else if (input.txKey !== undefined) {
    throw validationFailed([{ path: 'body.txKey', message: 'only XMR payments take a transaction key' }]);
  }

  const result = await db.transaction(async (trx) => {
    const found = (await trx('jobs').where({ id: jobId }).forUpdate().first()) as JobRow | undefined;
    const job = opts.access ? authorizeJob(found, jobId, opts.access) : found;
    if (!job) throw notFound(`Job ${jobId}`);
    // The same transaction submitted again for the same job answers the payment already recorded.
    const ours = (await trx('payments')
      .where({ job_id: jobId, asset: asset.id, tx_ref: txRef })
      .orderBy('created_at', 'desc')
      .first()) as PaymentRow | undefined;
    if (ours) return { payment: ours, created: false, webhooks: [] as string[] };
    const quotes = await jobQuotes(trx, jobId);
    if (quotes.length === 0) throw conflict('payment_not_required', 'This job does not take payment.');
    if (!['awaiting_payment', 'expired'].includes(job.status)) {
      throw conflict('job_not_awaiting_payment', `The job is ${job.status}; it takes no payment now.`);
    }
    const quote = quotes.find((q) => q.asset === asset.id);
    if (!quote) {
      throw unprocessable('asset_not_quoted', `This job has no quote in ${asset.id}.`, {
        quoted: quotes.map((q) => q.asset),
      });
    }
    if (input.reference !== undefined && input.reference !== quote.id) {
      throw unprocessable(
        'unknown_reference',
        `${input.reference} is not this job's ${asset.id} quote; its reference is ${quote.id}.`,
      );
    }
    if (now.getTime() > new Date(quote.expires_at).getTime() + lateWindowMs(env)) {
      throw conflict(
        'quote_expired',
        `The ${asset.id} quote expired at ${iso(quote.expires_at)} and is no longer watched; create a new job.`,
      );
    }
    // Submissions of one transaction are serialised, so two racing for different jobs cannot both pass.
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`${quote.network}|${txRef}`]);
    const claim = await trx('payment_claims').where({ chain: quote.network, tx_ref: txRef }).first();
    if (claim) {
      throw conflict('payment_already_claimed', 'This transaction has already paid for another job.');
    }
    const [payment] = (await trx('payments')
      .insert({
        id: newId('pay'),
        job_id: jobId,
        quote_id: quote.id,
        asset: asset.id,
        chain: quote.network,
        tx_ref: txRef,
        payer: input.payer ?? null,
        tx_key: input.txKey ?? null,
        status: 'pending',
        created_at: now,
        updated_at: now,
      })
      .returning('*')) as PaymentRow[];
    const webhooks = await paymentWebhook(trx, payment!);
    return { payment: payment!, created: true, webhooks };
  });
  await enqueueWebhooks(queues, result.webhooks);
  if (result.created) await enqueuePayment(queues, result.payment.id);
  return { payment: result.payment, created: result.created };
}

/** The job's webhook (if it has one) hears of the payment's new state, in the same transaction. */
function paymentWebhook(trx: Knex.Transaction, payment: PaymentRow, receiptId?: string): Promise<string[]> {
  return emitWebhookEvent(trx, payment.job_id, ({ base }) => ({
    event: `payment.${payment.status}`,
    occurredAt: iso(payment.settled_at ?? payment.updated_at)!,
    payment: paymentView(payment, base, receiptId),
  }));
}

/** Enqueues a payment check; a Redis failure is logged, the sweeper enqueues it from Postgres later. */
export async function enqueuePayment(queues: Queues, paymentId: string): Promise<void> {
  try {
    await queues.enqueue('payments', { paymentId });
  } catch (err) {
    logger.warn({ paymentId, err: (err as Error).message }, 'enqueue failed; the sweeper will retry');
  }
}

/** For the sweeper: a payment whose queue job ran out of attempts is ended with the reason. */
export async function failPayment(
  db: Db,
  paymentId: string,
  reason: string,
  queues?: Queues,
): Promise<number> {
  const rows = await db.transaction(async (trx) => {
    const failed = (await trx('payments')
      .where({ id: paymentId })
      .whereIn('status', openStatuses)
      .update({
        status: 'rejected',
        reason: 'verification_failed',
        detail: reason.slice(0, 500),
        settled_at: trx.fn.now(),
        updated_at: trx.fn.now(),
      })
      .returning('*')) as PaymentRow[];
    return { failed, webhooks: failed[0] ? await paymentWebhook(trx, failed[0]) : [] };
  });
  // Without a queue handle (the sweeper's call) the deliveries are enqueued by the sweeper's next round.
  if (queues) await enqueueWebhooks(queues, rows.webhooks);
  return rows.failed.length;
}
