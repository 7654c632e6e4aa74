// The payment side of the agent exchange's replies (a job's quotes, payments and x402 requirements, the
// assets it prices in), shared by the job, payment, checkout and gate routes: schemas, and replies
// shaped from what the route read.
import { z } from 'zod';
import { env } from '../../shared/platform/env';
import { assetIds } from '../../shared/chains/assets';
import { bindingKindFor, bindingKinds } from '../../shared/payments/binding-kinds';
import type { AssetStatus } from '../../shared/chains/assets';
import type { JobPaymentView } from '../../shared/payments/views';
import { paymentStatuses, settlements } from '../../shared/payments/rows';
import type { X402Paid } from '../../shared/payments/x402/pay';
import { paymentResponseHeader } from '../http/x402';

export const baseUnits = z.string().regex(/^\d+$/).describe('Integer base units of the asset');

/** The transfer a checkout or a gate request was paid with, as the payer names it. */
export const txRefSchema = z
  .string()
  .min(1)
  .max(200)
  .describe('Transaction id: EVM hash, Bitcoin/Monero txid, Solana signature');

export const bindingSchema = z
  .enum(bindingKinds)
  .describe(
    'What ties a transfer to this quote: reference (Solana Pay reference key among the account keys), amount (exactly this amount, unique among open quotes), address (an address of its own)',
  );

export const paymentInstructionsSchema = z
  .object({
    scheme: z.enum(['solana-pay', 'eip-681', 'bip-21', 'monero']),
    uri: z
      .string()
      .describe('A wallet payment request: Solana Pay transfer request, EIP-681, BIP21 or monero: URI'),
    payTo: z.string(),
    asset: z.string(),
    network: z.string(),
    contract: z.string().optional(),
    amount: baseUnits,
    amountDisplay: z.string(),
    exactAmount: z.boolean().describe('The amount identifies the quote: send exactly this'),
    reference: z
      .string()
      .optional()
      .describe('Solana Pay: include this public key as a read-only account of the transfer'),
    notes: z.array(z.string()),
  })
  .meta({ id: 'PaymentInstructions', description: 'What to send, where, and what to include' });

export const paymentSchema = z
  .object({
    id: z.string(),
    jobId: z.string(),
    asset: z.enum(assetIds),
    network: z.string().describe('CAIP-2 chain id'),
    txRef: z.string(),
    payer: z.string().nullable(),
    status: z.enum(paymentStatuses),
    settlement: z.enum(settlements).nullable().describe('How a confirmed payment matched its quote'),
    reason: z.string().nullable(),
    detail: z.string().nullable(),
    amountReceived: baseUnits.nullable(),
    confirmations: z.number().int().nullable(),
    blockTime: z
      .string()
      .nullable()
      .describe('When the chain says the transfer was made; lateness is judged by it'),
    createdAt: z.string(),
    updatedAt: z.string(),
    settledAt: z.string().nullable(),
    nextCheckAt: z.string().nullable(),
    links: z.record(z.string(), z.string()),
  })
  .meta({ id: 'Payment' });

const quoteSchema = z
  .object({
    reference: z.string(),
    asset: z.enum(assetIds),
    network: z.string(),
    amount: baseUnits,
    amountDisplay: z.string(),
    decimals: z.number().int(),
    contract: z.string().optional(),
    payTo: z.string(),
    usdCents: z.number().int(),
    rate: z.object({ usd: z.string(), asOf: z.string(), source: z.string() }).optional(),
    binding: bindingSchema.optional(),
    createdAt: z.string(),
    expiresAt: z.string(),
    paymentInstructions: paymentInstructionsSchema,
  })
  .meta({ id: 'Quote' });

const x402Schema = z
  .object({
    x402Version: z.number().int(),
    error: z.string().optional(),
    resource: z.object({ url: z.string(), description: z.string(), mimeType: z.string() }),
    accepts: z.array(
      z.object({
        scheme: z.literal('exact'),
        network: z.string().describe('CAIP-2 chain id'),
        amount: baseUnits,
        asset: z.string().describe('The EIP-3009 token contract'),
        payTo: z.string(),
        maxTimeoutSeconds: z.number().int(),
        extra: z
          .record(z.string(), z.unknown())
          .describe(
            "name and version: the token's EIP-712 domain; reference: the quote this requirement pays (a payment names it back)",
          ),
      }),
    ),
  })
  .meta({
    id: 'X402PaymentRequired',
    description:
      'x402 (v2) payment requirements, as in the PAYMENT-REQUIRED header: one per quote the `exact` scheme can pay (EIP-3009 tokens on EVM, when a settler is configured); the other quotes are paid with submitPayment',
  });

export const jobPaymentSchema = z
  .object({
    required: z.boolean(),
    usdCents: z.number().int(),
    expiresAt: z.string(),
    watchUntil: z
      .string()
      .describe('Payments submitted until then are still verified (paid_late after expiresAt)'),
    quotes: z.array(quoteSchema),
    unavailable: z.array(z.object({ asset: z.string(), reason: z.string(), detail: z.string() })).optional(),
    x402: x402Schema.optional(),
    payments: z.array(paymentSchema),
    links: z.record(z.string(), z.string()),
    settlement: z
      .object({ success: z.boolean(), transaction: z.string(), network: z.string() })
      .optional()
      .describe(
        'In the reply to createJob retried with PAYMENT-SIGNATURE: the x402 settlement, as PAYMENT-RESPONSE says it (required is then false; the job moves on once the chain check confirms the transfer)',
      ),
  })
  .meta({ id: 'JobPayment' });

export const assetPricingSchema = z
  .object({
    id: z.enum(assetIds),
    symbol: z.string(),
    name: z.string(),
    network: z.string(),
    decimals: z.number().int(),
    contract: z.string().optional(),
    stable: z.boolean(),
    enabled: z.boolean(),
    payTo: z.string().optional().describe('Absent where every quote gets an address of its own'),
    binding: bindingSchema.optional(),
    reason: z.string().optional(),
    detail: z.string().optional(),
  })
  .meta({ id: 'PaymentAsset' });

/**
 * For GET /api/pricing: the nine assets as `assetAvailability` found them, enabled or not and why (a
 * wrong-network endpoint included).
 */
export function pricingAssets(statuses: readonly AssetStatus[]): z.infer<typeof assetPricingSchema>[] {
  return statuses.map((s) => ({
    id: s.asset.id,
    symbol: s.asset.symbol,
    name: s.asset.name,
    network: s.asset.network,
    decimals: s.asset.decimals,
    ...(s.asset.contract ? { contract: s.asset.contract } : {}),
    stable: s.asset.stable,
    enabled: s.enabled,
    ...(s.enabled
      ? { ...(s.payTo ? { payTo: s.payTo } : {}), binding: bindingKindFor(s.asset.family) }
      : { reason: s.reason, detail: s.detail }),
  }));
}

export const quotePolicy = () => ({
  ttlSeconds: env.QUOTE_TTL_SECONDS,
  lateWindowSeconds: env.QUOTE_LATE_WINDOW_SECONDS,
});

/** A job as the job routes shape it: the payment side only adds a link to it. */
interface JobLinks {
  links: Record<string, string>;
}

/** For jobStatus: the job with its payment part (`jobPayment`) and, once paid, its receipt link. */
export function withPaymentPart<J extends JobLinks>(job: J, payment: JobPaymentView | undefined) {
  if (payment?.links.receipt) job.links.receipt = payment.links.receipt;
  return { job, ...(payment ? { payment } : {}) };
}

/**
 * For createJob retried with PAYMENT-SIGNATURE, once the payment settled: 202 with the job, its
 * capability for this payer (the request that settled the payment; a replay gets none), its payment
 * side (`jobPayment` of the paid job) and the settlement's header. The payment side says what the
 * header says: settled, with its transaction, and no longer required (no x402 offer to pay again); the
 * job moves on once the chain check confirms the transfer, a moment later.
 */
export function paidJobReply<J extends JobLinks>(
  job: J,
  paid: X402Paid,
  legacy: boolean,
  payment: JobPaymentView | undefined,
) {
  return {
    status: 202,
    headers: { Location: job.links.self!, ...paymentResponseHeader(paid.settlement, legacy) },
    body: {
      job,
      accessToken: paid.accessToken,
      ...(payment ? { payment: settledView(payment, paid) } : {}),
    },
  };
}

/** A job's payment side once an x402 payment for it settled: required no more, and how it settled. */
function settledView(payment: JobPaymentView, paid: X402Paid) {
  const { x402: _offer, ...rest } = payment;
  return {
    ...rest,
    required: false,
    settlement: {
      success: paid.settlement.success,
      transaction: paid.settlement.transaction,
      network: paid.settlement.network,
    },
  };
}
