// What the API shows of a job's payment side, shaped from rows already read (./job-payment.ts reads
// them): its quotes with payment instructions, the x402 requirements of an unpaid job, the payments
// submitted, and the link to its receipt.
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { checksum } from 'ox/Address';
import { findAsset } from '../chains/assets';
import { findService } from '../jobs/catalog';
import type { JobRow } from '../jobs/jobs';
import { env } from '../platform/env';
import { paymentInstructions } from './instructions';
import { formatUnits } from './pricing';
import { quoteTerms } from './quotes';
import type { UnavailableAsset } from './quotes';
import type { PaymentRow, QuoteRow } from './rows';
import { lateWindowMs } from './verdict';
import { networkSupported } from './x402/settle';

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
    asset: checksum(asset.contract),
    payTo: checksum(terms.payTo),
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

/** What a job's payment side is shaped from, as `jobPayment` (./job-payment.ts) reads it. */
export interface JobPaymentParts {
  /** At least one: a job without quotes has no payment side. */
  quotes: QuoteRow[];
  /** The latest payments submitted, newest first. */
  payments: PaymentRow[];
  receipts: Array<{ id: string; payment_id: string }>;
  /** The networks the x402 settler takes, read only while the job awaits payment. */
  x402Networks?: ReadonlySet<string> | undefined;
}

/**
 * A priced job's payment side: its quotes, x402 requirements, the payments submitted and the receipt.
 * The x402 requirements only while the job awaits payment, and only where there is one to offer:
 * never an empty `accepts` (no settler, or no quote `exact` can pay), which is not x402 at all; those
 * quotes are paid with submitPayment alone.
 */
export function jobPaymentView(
  job: Pick<JobRow, 'id' | 'service_id' | 'status' | 'expires_at'>,
  parts: JobPaymentParts,
  base: string,
  extra: { unavailable?: UnavailableAsset[] } = {},
) {
  const { quotes, payments, receipts } = parts;
  const receiptOf = new Map(receipts.map((r) => [r.payment_id, r.id]));
  const expiresAt = quotes.reduce((m, q) => (q.expires_at < m ? q.expires_at : m), quotes[0]!.expires_at);
  const jobUrl = `${base}/api/jobs/${job.id}`;
  const first = receipts[0];
  const awaiting = job.status === 'awaiting_payment';
  const serviceName = findService(job.service_id)?.name ?? job.service_id;
  const x402 =
    awaiting && parts.x402Networks
      ? x402Requirements(jobUrl, serviceName, quotes, parts.x402Networks)
      : undefined;
  return {
    required: awaiting,
    usdCents: quotes[0]!.usd_cents,
    expiresAt: iso(expiresAt)!,
    watchUntil: iso(new Date(new Date(expiresAt).getTime() + lateWindowMs(env)))!,
    quotes: quotes.map((q) => quoteView(q, `${serviceName} job ${job.id}`)),
    ...(extra.unavailable ? { unavailable: extra.unavailable } : {}),
    ...(x402?.accepts.length ? { x402 } : {}),
    payments: payments.map((p) => paymentView(p, base, receiptOf.get(p.id))),
    links: {
      submit: `${jobUrl}/payment`,
      ...(first ? { receipt: `${base}/api/receipts/${first.id}` } : {}),
    },
  };
}
export type JobPaymentView = ReturnType<typeof jobPaymentView>;
