// Crypto payments for priced jobs: quotes locked per job, payment submission, verification against the
// chain (with the one-transfer-pays-once claim), receipts, and the job's move to queued once paid.
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import type { Knex } from 'knex';
import { getAddress } from 'viem';
import { adapterFor, endpointNetwork } from '../chains';
import type { VerifyRequest, VerifyResult } from '../chains';
import type { Db } from '../db/knex';
import { env } from '../env';
import { AppError, conflict, notFound, unprocessable, validationFailed } from '../errors';
import { newId } from '../ids';
import { findService } from '../jobs/catalog';
import type { JobRow } from '../jobs/jobs';
import { logger } from '../log';
import type { Queues } from '../queues';
import { AssetConfigError, assetStatus, findAsset } from './assets';
import type { Asset, AssetId, AssetStatus, ChainFamily } from './assets';
import { QuoteError, createQuote, formatUnits, rateSourceFromEnv } from './quote';
import { jobChanged } from '../jobs/notify';
import {
  BindingUnavailable,
  assetSnapshot,
  bindQuote,
  bindingOf,
  paymentInstructions,
  prepareBinding,
  releaseExpiredAmounts,
} from './binding';
import type { BindingKind, PreBinding } from './binding';
import { lateWindowMs } from './verdict';
import type { Quote, RateSource } from './quote';
import type { Receipt } from './receipts';
import { emitWebhookEvent, enqueueWebhooks } from './webhooks';
import { networkSupported, x402Networks } from './x402-settle';

export const paymentStatuses = [
  'pending',
  'verifying',
  'confirmed',
  'rejected',
  'underpaid',
  'expired',
] as const;
export type PaymentStatus = (typeof paymentStatuses)[number];
export const settlements = ['exact', 'overpaid', 'paid_late'] as const;
export type Settlement = (typeof settlements)[number];
const openStatuses: PaymentStatus[] = ['pending', 'verifying'];

export interface QuoteRow {
  id: string;
  job_id: string;
  asset: AssetId;
  network: string;
  amount: string;
  decimals: number;
  contract: string | null;
  token_program: string | null;
  /** The treasury's address, or the quote's own (a BIP84 address, a Monero subaddress). */
  pay_to: string;
  usd_cents: number;
  rate: Quote['rate'] | null;
  /** reference | amount | address; null for quotes made before bindings. */
  binding: BindingKind | null;
  reference_key: string | null;
  address_index: number | null;
  /** The price before the unique offset. */
  base_amount: string | null;
  created_at: Date;
  expires_at: Date;
}

export interface PaymentRow {
  id: string;
  job_id: string;
  quote_id: string;
  asset: AssetId;
  chain: string;
  tx_ref: string;
  payer: string | null;
  tx_key: string | null;
  status: PaymentStatus;
  settlement: Settlement | null;
  reason: string | null;
  detail: string | null;
  amount_received: string | null;
  output: string | null;
  confirmations: number | null;
  checks: number;
  /** When the chain says the transfer was made. */
  block_time: Date | null;
  created_at: Date;
  updated_at: Date;
  next_check_at: Date | null;
  settled_at: Date | null;
}

export type PaymentSettings = Pick<
  typeof env,
  'QUOTE_LATE_WINDOW_SECONDS' | 'QUOTE_TTL_SECONDS' | 'PAYMENT_RECHECK_MS' | 'PAYMENT_RECHECK_MAX_MS'
>;

const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);

// ---------------------------------------------------------------------------------------------------
// Quotes

let rateSource: RateSource | undefined;
const rates = () => (rateSource ??= rateSourceFromEnv());

export interface UnavailableAsset {
  asset: AssetId;
  reason: string;
  detail: string;
}

/** A quote priced for a job not stored yet, with the part of its binding made outside a transaction. */
export type PreparedQuote = Quote & { pre: PreBinding };

export interface PreparedQuotes {
  serviceId: string;
  usdCents: number;
  quotes: PreparedQuote[];
  unavailable: UnavailableAsset[];
}

function assetConfigProblem(err: unknown): never {
  if (err instanceof AssetConfigError) {
    throw new AppError(503, 'asset_config_invalid', 'The payment asset configuration is invalid.');
  }
  throw err;
}

/**
 * The payable assets with whether each can be paid in now and why not (pricing, checkout, the gate):
 * configured, and, where the family's endpoint has said which network it serves, that network. An
 * endpoint on another network (a devnet RPC for mainnet assets) turns its assets off with the reason;
 * one that has not answered yet leaves them on (their payments wait for it, they never settle blind).
 */
export async function assetAvailability(): Promise<AssetStatus[]> {
  let statuses: AssetStatus[];
  try {
    statuses = assetStatus();
  } catch (err) {
    return assetConfigProblem(err);
  }
  const families = [...new Set(statuses.filter((s) => s.enabled).map((s) => s.asset.family))];
  const served = new Map(
    await Promise.all(families.map(async (f) => [f, await endpointNetwork(f)] as const)),
  );
  return statuses.map((s): AssetStatus => {
    const actual = served.get(s.asset.family);
    if (!s.enabled || actual === undefined || actual === s.asset.network) return s;
    return {
      asset: s.asset,
      enabled: false,
      reason: 'wrong_network',
      detail: `The ${s.asset.family} endpoint serves ${actual}, not ${s.asset.network}; ${s.asset.id} is not offered until it does.`,
    };
  });
}

/**
 * Prices a priced service in every enabled asset, before the job is stored, so a job that could not
 * be paid is never written. Each quote gets the first half of its binding here (a Solana Pay reference
 * key, a Monero subaddress); the rest is fixed with the job (attachQuotes). Undefined for free
 * services and unknown services (createJob reports those). A license never waives the price: its
 * prepaid credit, if any, pays in createJob.
 */
export async function prepareQuotes(
  serviceId: string,
  opts: { now?: Date; rates?: RateSource } = {},
): Promise<PreparedQuotes | undefined> {
  const service = findService(serviceId);
  if (!service || service.priceUsdCents === 0) return undefined;
  const now = opts.now ?? new Date();
  const quotes: PreparedQuote[] = [];
  const unavailable: UnavailableAsset[] = [];
  for (const status of await assetAvailability()) {
    if (!status.enabled) {
      unavailable.push({ asset: status.asset.id, reason: status.reason, detail: status.detail });
      continue;
    }
    const source = opts.rates ?? rates();
    try {
      const quote = await createQuote({
        asset: status.asset,
        usdCents: service.priceUsdCents,
        now,
        ...(source ? { rates: source } : {}),
      });
      quotes.push({ ...quote, pre: await prepareBinding(status.asset, quote.reference) });
    } catch (err) {
      if (!(err instanceof QuoteError) && !(err instanceof BindingUnavailable)) throw err;
      unavailable.push({ asset: status.asset.id, reason: err.code, detail: err.message });
    }
  }
  if (quotes.length === 0) throw noAssetQuoted(unavailable);
  return { serviceId, usdCents: service.priceUsdCents, quotes, unavailable };
}

const noAssetQuoted = (unavailable: UnavailableAsset[]) =>
  new AppError(503, 'payments_unavailable', 'No payment asset can be quoted now; the job was not created.', {
    extra: { unavailable },
  });

/**
 * Stores the quotes of a new awaiting_payment job, inside the job's transaction, finishing each
 * binding (a unique amount reserved, a BIP84 address derived), and sets the job's expiry to theirs.
 * A quote whose binding cannot be made now moves to `prepared.unavailable`; with none left the whole
 * job is refused (503) and nothing is written.
 */
export async function attachQuotes(
  trx: Knex.Transaction,
  job: JobRow,
  prepared: PreparedQuotes,
  settings: Pick<PaymentSettings, 'QUOTE_LATE_WINDOW_SECONDS'> = env,
): Promise<QuoteRow[]> {
  const rows: Record<string, unknown>[] = [];
  for (const q of prepared.quotes) {
    const asset = findAsset(q.asset)!;
    const expiresAt = new Date(q.expiresAt);
    try {
      const bound = await bindQuote(trx, {
        owner: q.reference,
        quote: q,
        asset,
        pre: q.pre,
        openUntil: new Date(expiresAt.getTime() + lateWindowMs(settings)),
        now: new Date(q.createdAt),
      });
      rows.push({
        id: q.reference,
        job_id: job.id,
        asset: q.asset,
        network: q.network,
        decimals: q.decimals,
        contract: q.contract ?? null,
        usd_cents: Number(q.usdCents),
        rate: q.rate ? JSON.stringify(q.rate) : null,
        base_amount: q.amount,
        ...bound,
        created_at: new Date(q.createdAt),
        expires_at: expiresAt,
      });
    } catch (err) {
      if (!(err instanceof BindingUnavailable)) throw err;
      prepared.unavailable.push({ asset: q.asset, reason: err.code, detail: err.message });
    }
  }
  if (rows.length === 0) throw noAssetQuoted(prepared.unavailable);
  const stored = (await trx('quotes').insert(rows).returning('*')) as QuoteRow[];
  const expiresAt = stored.reduce(
    (min, q) => (q.expires_at < min ? q.expires_at : min),
    stored[0]!.expires_at,
  );
  await trx('jobs').where({ id: job.id, status: 'awaiting_payment' }).update({ expires_at: expiresAt });
  job.expires_at = expiresAt;
  return stored;
}

export async function jobQuotes(db: Db | Knex.Transaction, jobId: string): Promise<QuoteRow[]> {
  return (await db('quotes').where({ job_id: jobId }).orderBy('id')) as QuoteRow[];
}

/**
 * One quote's terms exactly as stored, the single reading every consumer shares (views, x402
 * requirements, verification): the asset as it was configured then, base units to pay, where to, from
 * when to when, and what ties a transfer to it.
 */
export function quoteTerms(q: QuoteRow, settings: Pick<PaymentSettings, 'QUOTE_LATE_WINDOW_SECONDS'> = env) {
  const expiresAt = new Date(q.expires_at);
  const binding = bindingOf(q);
  return {
    reference: q.id,
    jobId: q.job_id,
    asset: assetSnapshot(q),
    /** Base units, an integer string. */
    amount: String(q.amount),
    payTo: q.pay_to,
    createdAt: new Date(q.created_at),
    expiresAt,
    /** A transfer made until then still pays (paid_late after expiresAt). */
    watchUntil: new Date(expiresAt.getTime() + lateWindowMs(settings)),
    ...(binding ? { binding } : {}),
  };
}
export type QuoteTerms = ReturnType<typeof quoteTerms>;

function quoteView(q: QuoteRow, jobLabel: string) {
  return {
    reference: q.id,
    asset: q.asset,
    network: q.network,
    amount: String(q.amount),
    amountDisplay: formatUnits(BigInt(q.amount), q.decimals),
    decimals: q.decimals,
    ...(q.contract ? { contract: q.contract } : {}),
    payTo: q.pay_to,
    usdCents: q.usd_cents,
    ...(q.rate ? { rate: q.rate } : {}),
    ...(q.binding ? { binding: q.binding } : {}),
    createdAt: iso(q.created_at)!,
    expiresAt: iso(q.expires_at)!,
    paymentInstructions: paymentInstructions(q, {
      reference: q.id,
      label: 'proof-exchange',
      message: jobLabel,
    }),
  };
}

/**
 * The x402 `exact` requirement of one quote, or undefined where `exact` cannot pay it: only an EVM
 * token with EIP-3009 (its EIP-712 domain configured for the quote's contract) on a network the
 * settler takes, for a quote bound by its unique amount and not yet expired. Native coins and other
 * chains stay quoted for submitPayment only.
 */
export function x402RequirementFor(
  q: QuoteRow,
  networks: ReadonlySet<string>,
  now = new Date(),
): PaymentRequirements | undefined {
  const terms = quoteTerms(q);
  const { asset } = terms;
  if (asset.family !== 'evm' || !asset.contract || terms.binding?.kind !== 'amount') return undefined;
  if (!networkSupported(networks, asset.network)) return undefined;
  // The domain belongs to the contract: one configured for another contract says nothing of this one.
  const configured = findAsset(q.asset);
  const domain =
    configured?.contract?.toLowerCase() === asset.contract.toLowerCase() ? configured.eip712 : undefined;
  if (!domain) return undefined;
  const maxTimeoutSeconds = Math.floor((terms.expiresAt.getTime() - now.getTime()) / 1000);
  if (maxTimeoutSeconds <= 0) return undefined;
  return {
    scheme: 'exact',
    network: asset.network as PaymentRequirements['network'],
    amount: terms.amount,
    asset: getAddress(asset.contract),
    payTo: getAddress(terms.payTo),
    maxTimeoutSeconds,
    extra: {
      name: domain.name,
      version: domain.version,
      reference: q.id,
      assetId: q.asset,
      symbol: asset.symbol,
      decimals: asset.decimals,
    },
  };
}

/** x402 (v2) PAYMENT-REQUIRED for an unpaid job: its quotes that `exact` can pay, one requirement each. */
export function x402Requirements(
  jobUrl: string,
  serviceName: string,
  quotes: QuoteRow[],
  networks: ReadonlySet<string>,
  now = new Date(),
): PaymentRequired {
  return {
    x402Version: 2,
    error: 'Payment required',
    resource: { url: jobUrl, description: serviceName, mimeType: 'application/json' },
    accepts: quotes
      .map((q) => x402RequirementFor(q, networks, now))
      .filter((r): r is PaymentRequirements => r !== undefined),
  };
}

// ---------------------------------------------------------------------------------------------------
// Views

export function paymentView(p: PaymentRow, base: string, receiptId?: string | null) {
  return {
    id: p.id,
    jobId: p.job_id,
    asset: p.asset,
    network: p.chain,
    txRef: p.tx_ref,
    payer: p.payer,
    status: p.status,
    settlement: p.settlement,
    reason: p.reason,
    detail: p.detail,
    amountReceived: p.amount_received === null ? null : String(p.amount_received),
    confirmations: p.confirmations,
    blockTime: iso(p.block_time ?? null),
    createdAt: iso(p.created_at)!,
    updatedAt: iso(p.updated_at)!,
    settledAt: iso(p.settled_at),
    nextCheckAt: iso(p.next_check_at),
    links: {
      job: `${base}/api/jobs/${p.job_id}`,
      ...(receiptId ? { receipt: `${base}/api/receipts/${receiptId}` } : {}),
    },
  };
}
export type PaymentView = ReturnType<typeof paymentView>;

/**
 * A priced job's payment side: its quotes, x402 requirements, the payments submitted and the receipt.
 * Undefined for jobs that never needed paying.
 */
export async function jobPayment(
  db: Db,
  job: Pick<JobRow, 'id' | 'service_id' | 'status' | 'expires_at'>,
  base: string,
  extra: { unavailable?: UnavailableAsset[] } = {},
) {
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
  const receiptOf = new Map(receipts.map((r) => [r.payment_id, r.id]));
  const expiresAt = quotes.reduce((m, q) => (q.expires_at < m ? q.expires_at : m), quotes[0]!.expires_at);
  const jobUrl = `${base}/api/jobs/${job.id}`;
  const first = receipts[0];
  const awaiting = job.status === 'awaiting_payment';
  return {
    required: awaiting,
    usdCents: quotes[0]!.usd_cents,
    expiresAt: iso(expiresAt)!,
    watchUntil: iso(new Date(new Date(expiresAt).getTime() + lateWindowMs(env)))!,
    quotes: quotes.map((q) =>
      quoteView(q, `${findService(job.service_id)?.name ?? job.service_id} job ${job.id}`),
    ),
    ...(extra.unavailable ? { unavailable: extra.unavailable } : {}),
    ...(awaiting
      ? {
          x402: x402Requirements(
            jobUrl,
            findService(job.service_id)?.name ?? job.service_id,
            quotes,
            await x402Networks(),
          ),
        }
      : {}),
    payments: payments.map((p) => paymentView(p, base, receiptOf.get(p.id))),
    links: {
      submit: `${jobUrl}/payment`,
      ...(first ? { receipt: `${base}/api/receipts/${first.id}` } : {}),
    },
  };
}
export type JobPaymentView = NonNullable<Awaited<ReturnType<typeof jobPayment>>>;

// ---------------------------------------------------------------------------------------------------
// Submission

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
 */
export async function submitPayment(
  db: Db,
  queues: Queues,
  jobId: string,
  input: SubmitPaymentInput,
  now = new Date(),
): Promise<{ payment: PaymentRow; created: boolean }> {
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
    const job = (await trx('jobs').where({ id: jobId }).forUpdate().first()) as JobRow | undefined;
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

// ---------------------------------------------------------------------------------------------------
// Verification (the `payments` processor)

export type ProcessOutcome =
  | { outcome: 'skipped' }
  | {
      outcome: 'settled';
      status: PaymentStatus;
      settlement?: Settlement;
      jobQueued: boolean;
      receiptId?: string;
    }
  | { outcome: 'recheck'; delayMs: number; reason: string };

export interface ProcessOptions {
  now?: () => Date;
  settings?: PaymentSettings;
}

/** Asks the family's adapter; without one the payment waits (it is never settled blind). */
export async function verifyWithAdapter(req: VerifyRequest): Promise<VerifyResult> {
  const lookup = adapterFor(req.asset.family);
  if (!lookup.configured) return { status: 'pending', detail: lookup.detail, reason: 'rpc_unreachable' };
  return lookup.adapter.verifyTransfer(req);
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

// ---------------------------------------------------------------------------------------------------
// Receipts and expiry

export async function getReceipt(db: Db, receiptId: string): Promise<Receipt> {
  const row = (await db('receipts').where({ id: receiptId }).first()) as { document: Receipt } | undefined;
  if (!row) throw notFound(`Receipt ${receiptId}`);
  return row.document;
}

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
