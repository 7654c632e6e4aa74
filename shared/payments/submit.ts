// Submitting a transfer for a priced job (its checks, the one-claim lock, the job's webhook, the
// queued check), and ending a payment whose checks ran out.
import type { Knex } from 'knex';
import { findAsset } from '../chains/assets';
import type { Asset, AssetId, ChainFamily } from '../chains/assets';
import { emitWebhookEvent, enqueueWebhooks, subscriptionsJson } from '../deliveries/webhooks';
import type { JobWebhookRow } from '../deliveries/webhooks';
import { authorizeJob } from '../jobs/access';
import type { JobAccess } from '../jobs/access';
import type { JobRow } from '../jobs/jobs';
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

  // Between BEGIN and COMMIT: lockJob's statement, recordPayment's, and the delivery's insert when the
  // job has a webhook. A refusal reads the job's payments once more (see below) and writes nothing.
  const result = await db.transaction(async (trx) => {
    const found = await lockJob(trx, jobId, asset.id, txRef);
    const job = opts.access ? authorizeJob(found?.job, jobId, opts.access) : found?.job;
    if (!found || !job) throw notFound(`Job ${jobId}`);
    let quote: PayableQuote;
    try {
      quote = payableQuote(job, found.quotes, asset, input.reference, now);
    } catch (refusal) {
      // The same transaction submitted again for the same job answers the payment already recorded,
      // before any refusal. It is looked for here, after the job's lock: the first statement's snapshot
      // may predate a payment recorded by the lock's previous holder.
      const ours = await recordedPayment(trx, jobId, asset.id, txRef);
      if (ours) return { payment: ours, created: false, webhooks: [] as string[] };
      throw refusal;
    }
    const recorded = await recordPayment(trx, {
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
    });
    if (!recorded) {
      throw conflict('payment_already_claimed', 'This transaction has already paid for another job.');
    }
    if (!recorded.created) return { payment: recorded.payment, created: false, webhooks: [] as string[] };
    const webhooks = await paymentWebhook(trx, recorded.payment, undefined, found.subscriptions);
    return { payment: recorded.payment, created: true, webhooks };
  });
  await enqueueWebhooks(queues, result.webhooks);
  if (result.created) await enqueuePayment(queues, result.payment.id);
  return { payment: result.payment, created: result.created };
}

/** What submitPayment reads of a quote: which quote it is, its network, and when it expired. */
type PayableQuote = Pick<QuoteRow, 'id' | 'asset' | 'network' | 'expires_at'>;

/** lockJob's row: the job's columns, and beside them its quotes and subscriptions as json. */
type LockedJobRow = JobRow & {
  job_quotes: Array<Omit<PayableQuote, 'expires_at'> & { expires_at: string }>;
  job_subscriptions: JobWebhookRow[];
  transfer_lock: unknown;
};

/**
 * submitPayment's first statement: locks the job's row and returns it with its quotes and its
 * webhook subscriptions, and takes the lock that serialises submissions of one transaction (keyed on
 * the network of the job's quote in `asset`, and the transaction), so two racing for different jobs
 * cannot both pass. It is taken after the job's (the order every holder of both takes them in), and
 * before the checks: a refused submission holds it until its rollback. Undefined when the job does
 * not exist.
 *
 * The statement's snapshot is taken before it waits for the job's lock, so it reads only what cannot
 * have changed meanwhile: quotes and an `event` subscription are written with the job and never after
 * (an A2A push config can be added later, but it hears no payment events). The job's payments and the
 * transfer's claims are read by later statements, whose snapshots follow both locks.
 */
async function lockJob(
  trx: Knex.Transaction,
  jobId: string,
  asset: AssetId,
  txRef: string,
): Promise<{ job: JobRow; quotes: PayableQuote[]; subscriptions: JobWebhookRow[] } | undefined> {
  // The row lock is taken in the CTE, whose rows the outer select list is computed over: the transfer's
  // lock is asked for once the job's is held.
  const { rows } = await trx.raw<{ rows: LockedJobRow[] }>(
    `with job as (select * from jobs where id = :jobId for update)
     select job.*,
       (select coalesce(
            json_agg(json_build_object('id', q.id, 'asset', q.asset, 'network', q.network,
                                       'expires_at', q.expires_at) order by q.id),
            '[]'::json)
          from quotes q where q.job_id = job.id) as job_quotes,
       :subscriptions as job_subscriptions,
       (select pg_advisory_xact_lock(hashtextextended(q.network || '|' || :txRef::text, 0))
          from quotes q where q.job_id = job.id and q.asset = :asset) as transfer_lock
     from job`,
    { jobId, subscriptions: subscriptionsJson(trx, 'job.id'), txRef, asset },
  );
  const row = rows[0];
  if (!row) return undefined;
  const { job_quotes, job_subscriptions, transfer_lock: _lock, ...job } = row;
  return {
    job,
    // json carries a timestamp as its ISO text; the quote's expiry is a Date, as a plain read gives it.
    quotes: job_quotes.map((q) => ({ ...q, expires_at: new Date(q.expires_at) })),
    subscriptions: job_subscriptions,
  };
}

/**
 * The job's quote in `asset` if the job takes this payment now; otherwise the refusal, in this order:
 * a job that takes no payment, a job not awaiting one, an asset not quoted, a reference that is not
 * that quote's, a quote past its watch window.
 */
function payableQuote(
  job: JobRow,
  quotes: readonly PayableQuote[],
  asset: Asset,
  reference: string | undefined,
  now: Date,
): PayableQuote {
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
  if (reference !== undefined && reference !== quote.id) {
    throw unprocessable(
      'unknown_reference',
      `${reference} is not this job's ${asset.id} quote; its reference is ${quote.id}.`,
    );
  }
  if (now.getTime() > new Date(quote.expires_at).getTime() + lateWindowMs(env)) {
    throw conflict(
      'quote_expired',
      `The ${asset.id} quote expired at ${iso(quote.expires_at)} and is no longer watched; create a new job.`,
    );
  }
  return quote;
}

/** The job's latest payment of this transaction in this asset, if it has one. */
async function recordedPayment(
  trx: Knex.Transaction,
  jobId: string,
  asset: AssetId,
  txRef: string,
): Promise<PaymentRow | undefined> {
  return (await trx('payments')
    .where({ job_id: jobId, asset, tx_ref: txRef })
    .orderBy('created_at', 'desc')
    .first()) as PaymentRow | undefined;
}

type NewPayment = Pick<
  PaymentRow,
  | 'id'
  | 'job_id'
  | 'quote_id'
  | 'asset'
  | 'chain'
  | 'tx_ref'
  | 'payer'
  | 'tx_key'
  | 'status'
  | 'created_at'
  | 'updated_at'
>;

/**
 * submitPayment's second statement, after lockJob took both locks: answers the job's payment of this
 * transaction if it has one (created: false); otherwise inserts `p` unless the transfer is claimed
 * (undefined: refused). Both are read here rather than in lockJob: a statement sees what was committed
 * before it started, and this one starts after the locks, so it sees a payment or a claim that the
 * locks' previous holders committed.
 */
async function recordPayment(
  trx: Knex.Transaction,
  p: NewPayment,
): Promise<{ payment: PaymentRow; created: boolean } | undefined> {
  const { rows } = await trx.raw<{ rows: Array<PaymentRow & { created: boolean }> }>(
    `with ours as (
       select * from payments where job_id = :job_id and asset = :asset and tx_ref = :tx_ref
       order by created_at desc limit 1
     ), inserted as (
       insert into payments (id, job_id, quote_id, asset, chain, tx_ref, payer, tx_key, status,
                             created_at, updated_at)
       select :id, :job_id, :quote_id, :asset, :chain, :tx_ref, :payer, :tx_key, :status,
              :created_at::timestamptz, :updated_at::timestamptz
       where not exists (select 1 from ours)
         and not exists (select 1 from payment_claims where chain = :chain and tx_ref = :tx_ref)
       returning *
     )
     select true as created, inserted.* from inserted
     union all
     select false, ours.* from ours`,
    p,
  );
  const row = rows[0];
  if (!row) return undefined;
  const { created, ...payment } = row;
  return { payment, created };
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
