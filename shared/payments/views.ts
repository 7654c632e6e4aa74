// What the API shows of a job's payment side: its quotes with payment instructions, the x402
// requirements of an unpaid job, the payments submitted, and the stored receipts.
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { getAddress } from 'viem';
import { findAsset } from '../chains/assets';
import { findService } from '../jobs/catalog';
import type { JobRow } from '../jobs/jobs';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { notFound } from '../platform/errors';
import { paymentInstructions } from './instructions';
import { formatUnits } from './pricing';
import { jobQuotes, quoteTerms } from './quotes';
import type { UnavailableAsset } from './quotes';
import type { Receipt } from './receipts';
import type { PaymentRow, QuoteRow } from './rows';
import { lateWindowMs } from './verdict';
import { networkSupported, x402Networks } from './x402/settle';

const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);

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

/**
 * The x402 requirements of an unpaid job, where there is one to offer: never an empty `accepts` (no
 * settler, or no quote `exact` can pay), which is not x402 at all; those quotes are paid with
 * submitPayment alone.
 */
async function offeredX402(
  jobUrl: string,
  serviceName: string,
  quotes: QuoteRow[],
): Promise<{ x402?: PaymentRequired }> {
  const x402 = x402Requirements(jobUrl, serviceName, quotes, await x402Networks());
  return x402.accepts.length ? { x402 } : {};
}

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
      ? await offeredX402(jobUrl, findService(job.service_id)?.name ?? job.service_id, quotes)
      : {}),
    payments: payments.map((p) => paymentView(p, base, receiptOf.get(p.id))),
    links: {
      submit: `${jobUrl}/payment`,
      ...(first ? { receipt: `${base}/api/receipts/${first.id}` } : {}),
    },
  };
}
export type JobPaymentView = NonNullable<Awaited<ReturnType<typeof jobPayment>>>;

export async function getReceipt(db: Db, receiptId: string): Promise<Receipt> {
  const row = (await db('receipts').where({ id: receiptId }).first()) as { document: Receipt } | undefined;
  if (!row) throw notFound(`Receipt ${receiptId}`);
  return row.document;
}
