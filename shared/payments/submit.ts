// Submitting a transfer for a priced job (its checks, the one-claim lock, the job's webhook, the
// queued check), and ending a payment whose checks ran out.
import type { Knex } from 'knex';
import { findAsset } from '../chains/assets';
import type { Asset, AssetId, ChainFamily } from '../chains/assets';
import { emitWebhookEvent, enqueueWebhooks } from '../deliveries/webhooks';
import type { JobWebhookRow } from '../deliveries/webhooks';
import { accessArgs } from '../jobs/access';
import type { JobAccess } from '../jobs/access';
import { MicroBatch } from '../platform/batch';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { conflict, notFound, unprocessable, validationFailed } from '../platform/errors';
import { newId } from '../platform/ids';
import { logger } from '../platform/log';
import type { Queues } from '../platform/queues';
import type { PaymentRow, PaymentStatus, QuoteRow } from './rows';
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

  const args = {
    p_job_id: jobId,
    p_asset: asset.id,
    p_tx_ref: txRef,
    p_reference: input.reference ?? null,
    p_now: now,
    p_late_ms: lateWindowMs(env),
    ...accessArgs(opts.access),
    p_id: newId('pay'),
    p_payer: input.payer ?? null,
    p_tx_key: input.txKey ?? null,
  };
  // One statement, committed as it ends; a job with a webhook (the function says so before writing)
  // takes a transaction instead, so that its delivery is written with the payment.
  let answer = await callSubmit(db, { ...args, p_with_deliveries: false });
  let webhooks: string[] = [];
  if (answer.verdict === 'subscribed') {
    ({ answer, webhooks } = await db.transaction(async (trx) => {
      const a = await callSubmit(trx, { ...args, p_with_deliveries: true });
      const ids =
        a.verdict === 'created' ? await paymentWebhook(trx, a.payment!, undefined, a.subscriptions) : [];
      return { answer: a, webhooks: ids };
    }));
  }
  if (answer.verdict === 'created' || answer.verdict === 'recorded') {
    const created = answer.verdict === 'created';
    await enqueueWebhooks(queues, webhooks);
    if (created) await enqueuePayment(queues, answer.payment!.id);
    return { payment: answer.payment!, created };
  }
  throw refusal(answer, jobId, asset, input.reference);
}

/** What submitPayment reads of a quote: which quote it is, its network, and when it expired. */
type PayableQuote = Pick<QuoteRow, 'id' | 'asset' | 'network' | 'expires_at'>;

/** The function's answers (migrations/20261206000100_submit_payment_function.ts). */
type Verdict =
  | 'created'
  | 'recorded'
  | 'subscribed'
  | 'not_found'
  | 'payment_not_required'
  | 'job_not_awaiting_payment'
  | 'asset_not_quoted'
  | 'unknown_reference'
  | 'quote_expired'
  | 'payment_already_claimed';

interface SubmitAnswer {
  verdict: Verdict;
  /** The job's status and quotes, for a refusal's words (not when not found). */
  status: string | null;
  quotes: PayableQuote[];
  /** The job's subscriptions, read only when the function wrote a payment inside a transaction. */
  subscriptions: JobWebhookRow[] | undefined;
  payment: PaymentRow | undefined;
}

type SubmitRow = PaymentRow & {
  verdict: Verdict;
  job_status: string | null;
  job_quotes: Array<Omit<PayableQuote, 'expires_at'> & { expires_at: string }> | null;
  job_subscriptions: JobWebhookRow[] | null;
};

/**
 * The database function `submit_payment`, in one statement: it locks the job, checks who asks, takes
 * the lock that serialises submissions of one transfer (keyed on the network of the job's quote in the
 * asset, and the transaction), and then, in statements whose snapshots follow both locks, answers the
 * job's payment of this transaction if it has one, the refusal if the job takes no such payment now or
 * the transfer is claimed, or records the payment. The payment's columns come as a plain read of the
 * row gives them (its `payment` column expanded).
 */
async function callSubmit(q: Db | Knex.Transaction, args: Record<string, unknown>): Promise<SubmitAnswer> {
  const names = Object.keys(args);
  const { rows } = await q.raw<{ rows: SubmitRow[] }>(
    `select r.verdict, r.job_status, r.job_quotes, r.job_subscriptions, (r.payment).*
       from submit_payment(${names.map((n) => `${n} => :${n}`).join(', ')}) r`,
    args as Record<string, Knex.Value>,
  );
  const { verdict, job_status, job_quotes, job_subscriptions, ...payment } = rows[0]!;
  return {
    verdict,
    status: job_status,
    // json carries a timestamp as its ISO text; the quote's expiry is a Date, as a plain read gives it.
    quotes: (job_quotes ?? []).map((x) => ({ ...x, expires_at: new Date(x.expires_at) })),
    subscriptions: job_subscriptions ?? undefined,
    payment: payment.id ? payment : undefined,
  };
}

/**
 * The refusal a verdict stands for, in the function's order: a job that is not found (or not the
 * caller's to act on), one that takes no payment, one not awaiting payment, an asset not quoted, a
 * reference that is not that quote's, a quote past its watch window, a transfer that paid already.
 */
function refusal(answer: SubmitAnswer, jobId: string, asset: Asset, reference: string | undefined): Error {
  const quote = answer.quotes.find((q) => q.asset === asset.id);
  switch (answer.verdict) {
    case 'not_found':
      return notFound(`Job ${jobId}`);
    case 'payment_not_required':
      return conflict('payment_not_required', 'This job does not take payment.');
    case 'job_not_awaiting_payment':
      return conflict('job_not_awaiting_payment', `The job is ${answer.status}; it takes no payment now.`);
    case 'asset_not_quoted':
      return unprocessable('asset_not_quoted', `This job has no quote in ${asset.id}.`, {
        quoted: answer.quotes.map((q) => q.asset),
      });
    case 'unknown_reference':
      return unprocessable(
        'unknown_reference',
        `${reference} is not this job's ${asset.id} quote; its reference is ${quote?.id}.`,
      );
    case 'quote_expired':
      return conflict(
        'quote_expired',
        `The ${asset.id} quote expired at ${iso(quote?.expires_at ?? null)} and is no longer watched; create a new job.`,
      );
    case 'payment_already_claimed':
      return conflict('payment_already_claimed', 'This transaction has already paid for another job.');
    default:
      return new Error(`submit_payment answered ${answer.verdict}`);
  }
}

/**
 * The job's webhook (if it has one) hears of the payment's new state, in the same transaction. `subs`:
 * the job's subscriptions, when already read.
 */
function paymentWebhook(
  trx: Knex.Transaction,
  payment: PaymentRow,
  receiptId?: string,
  subs?: readonly JobWebhookRow[],
): Promise<string[]> {
  return emitWebhookEvent(
    trx,
    payment.job_id,
    ({ base }) => ({
      event: `payment.${payment.status}`,
      occurredAt: iso(payment.settled_at ?? payment.updated_at)!,
      payment: paymentView(payment, base, receiptId),
    }),
    subs,
  );
}

/** Each Queues' batch of payment checks (shared/platform/batch.ts). */
const paymentChecks = new WeakMap<Queues, MicroBatch<string, void>>();

/**
 * Enqueues a payment check; a Redis failure is logged, the sweeper enqueues it from Postgres later.
 * Checks enqueued in the same turn of the event loop go to Redis in one addBulk, as job creations do.
 */
export async function enqueuePayment(queues: Queues, paymentId: string): Promise<void> {
  let batch = paymentChecks.get(queues);
  if (!batch) {
    batch = new MicroBatch(async (ids: string[]) => {
      try {
        await queues.enqueueMany(
          'payments',
          ids.map((id) => ({ paymentId: id })),
        );
      } catch (err) {
        logger.warn({ payments: ids, err: (err as Error).message }, 'enqueue failed; the sweeper will retry');
      }
      return ids.map(() => undefined);
    });
    paymentChecks.set(queues, batch);
  }
  await batch.add(paymentId);
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
