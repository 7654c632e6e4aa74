// Table A payment routes (submitPayment, getReceipt), and the payment parts of createJob, jobStatus and
// pricing, which exchange.ts adds to its replies through the helpers below.
import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import type { Request } from 'express';
import type { Knex } from 'knex';
import { z } from 'zod';
import { env } from '../../shared/env';
import type { JobRow } from '../../shared/jobs/jobs';
import { jobIdSchema } from '../../shared/jobs/jobs';
import { idPattern } from '../../shared/ids';
import { assetIds } from '../../shared/payments/assets';
import { bindingKindFor, bindingKinds } from '../../shared/payments/binding';
import {
  assetAvailability,
  getReceipt,
  jobPayment,
  paymentStatuses,
  paymentView,
  prepareQuotes,
  settlements,
  submitPayment,
} from '../../shared/payments/payments';
import type { JobPaymentView, PreparedQuotes } from '../../shared/payments/payments';
import { RECEIPT_TYPE } from '../../shared/payments/receipts';
import { LEGACY_PAYMENT_HEADER, PAYMENT_SIGNATURE_HEADER, payJobWithX402 } from '../../shared/payments/x402';
import { checkWebhookTarget, registerJobWebhook, webhookEventNames } from '../../shared/payments/webhooks';
import type { AppDeps } from '../deps';
import { origin } from '../http/links';
import type { RouteTable } from '../http/route';
import { jobView } from './jobs-view';

const baseUnits = z.string().regex(/^\d+$/).describe('Integer base units of the asset');

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

/** For GET /api/pricing: the nine assets, enabled or not and why (a wrong-network endpoint included). */
export async function pricingAssets(): Promise<z.infer<typeof assetPricingSchema>[]> {
  return (await assetAvailability()).map((s) => ({
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

/** For createJob: prices the job before it is stored (undefined when it needs no payment). */
export function quoteForNewJob(service: string): Promise<PreparedQuotes | undefined> {
  return prepareQuotes(service);
}

/** For createJob: stores the quotes of the new job and shapes its payment part. */
export async function newJobPayment(
  row: JobRow,
  prepared: PreparedQuotes | undefined,
  req: Request,
  deps: AppDeps,
): Promise<JobPaymentView | undefined> {
  if (!prepared || row.status !== 'awaiting_payment') return undefined;
  return jobPayment(deps.db, row, origin(req, deps, 'base'), { unavailable: prepared.unavailable });
}

/** For jobStatus: the job with its payment part and, once paid, its receipt link. */
export async function jobStatusBody(row: JobRow, req: Request, deps: AppDeps) {
  const job = jobView(row, req, deps);
  // Free jobs carry no price, so no quotes: skip the lookups on the hot path.
  const payment =
    row.price_usd_cents > 0 ? await jobPayment(deps.db, row, origin(req, deps, 'base')) : undefined;
  if (payment?.links.receipt) job.links.receipt = payment.links.receipt;
  return { job, ...(payment ? { payment } : {}) };
}

export const jobWebhookRequestSchema = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/ })
      .max(2000)
      .describe('Receives a signed POST for each state change of the job and of its payments'),
  })
  .meta({ id: 'JobWebhookRequest' });

export const jobWebhookSchema = z
  .object({
    url: z.string(),
    secret: z
      .string()
      .describe(
        'HMAC-SHA256 key of the X-Delivery-Signature header of every delivery; shown once, never again',
      ),
    events: z.array(z.string()).describe('The event names deliveries carry'),
  })
  .meta({ id: 'JobWebhook' });

/** For createJob, before anything is written: the target must be one deliveries may POST to. */
export async function checkJobWebhook(webhook: { url: string } | undefined): Promise<void> {
  if (webhook) await checkWebhookTarget(webhook.url);
}

/** For createJob, in its transaction: subscribes the job; the reply shows the secret once. */
export async function subscribeJobWebhook(
  trx: Knex.Transaction,
  row: JobRow,
  webhook: { url: string },
  req: Request,
  deps: AppDeps,
): Promise<z.infer<typeof jobWebhookSchema>> {
  const jobUrl = `${origin(req, deps, 'base')}/api/jobs/${row.id}`;
  return { ...(await registerJobWebhook(trx, row, { url: webhook.url, jobUrl })), events: webhookEventNames };
}

/** The x402 PAYMENT-REQUIRED header value (base64 JSON, v2) for an unpaid job. */
export function paymentRequiredHeader(payment: JobPaymentView | undefined): Record<string, string> {
  if (!payment?.x402) return {};
  return { 'PAYMENT-REQUIRED': encodePaymentRequiredHeader(payment.x402) };
}

/** The payment header of a createJob retry, v2's or the legacy one, if the request carries one. */
export function paymentSignatureOf(req: Request): { value: string; legacy: boolean } | undefined {
  const v2 = req.header(PAYMENT_SIGNATURE_HEADER);
  if (v2 !== undefined) return { value: v2, legacy: false };
  const legacy = req.header(LEGACY_PAYMENT_HEADER);
  return legacy !== undefined ? { value: legacy, legacy: true } : undefined;
}

/**
 * For createJob retried with PAYMENT-SIGNATURE: pays the job the signature's requirement was issued
 * for (never a new one) and answers 202 with the job, its payment side and PAYMENT-RESPONSE.
 */
export async function payCreatedJob(
  signature: { value: string; legacy: boolean },
  request: { service: string; input: unknown },
  req: Request,
  deps: AppDeps,
) {
  const base = origin(req, deps, 'base');
  const paid = await payJobWithX402(deps.db, deps.queues, { header: signature.value, request, base });
  const job = jobView(paid.job, req, deps);
  const payment = await jobPayment(deps.db, paid.job, base);
  const response = encodePaymentResponseHeader(paid.settlement);
  return {
    status: 202,
    headers: {
      Location: job.links.self!,
      [signature.legacy ? 'X-PAYMENT-RESPONSE' : 'PAYMENT-RESPONSE']: response,
    },
    body: { job, ...(payment ? { payment } : {}) },
  };
}

const receiptSchema = z
  .object({
    type: z.literal(RECEIPT_TYPE),
    id: z.string(),
    jobId: z.string(),
    serviceId: z.string(),
    paymentId: z.string(),
    asset: z.string(),
    network: z.string(),
    decimals: z.number().int(),
    amount: baseUnits,
    quotedAmount: baseUnits,
    usdCents: z.string(),
    payTo: z.string(),
    payer: z.string().nullable(),
    settlement: z.enum(settlements),
    transaction: z.object({
      txRef: z.string(),
      output: z.string(),
      confirmations: z.number().int().nullable(),
    }),
    quote: z.object({ reference: z.string(), createdAt: z.string(), expiresAt: z.string() }),
    times: z.object({ submittedAt: z.string(), confirmedAt: z.string(), issuedAt: z.string() }),
    keyId: z.string(),
    signature: z.string().describe('ed25519 (base64url) over the canonical JSON of every other field'),
  })
  .meta({ id: 'Receipt' });

const submitPaymentBody = z
  .strictObject({
    asset: z.enum(assetIds).describe('The asset paid in; the job must have a quote in it'),
    txRef: z.string().min(1).max(200).describe('Transaction hash / signature / txid'),
    reference: z
      .string()
      .regex(idPattern('pay'), 'a quote reference (pay_…)')
      .optional()
      .describe("The quote paid (its reference), checked against the job's quote in `asset`"),
    payer: z.string().min(1).max(200).optional().describe('The paying address, for the record'),
    txKey: z.string().min(1).max(200).optional().describe('XMR only: the transaction key (get_tx_key)'),
  })
  .meta({ id: 'SubmitPaymentRequest' });

export function paymentRoutes(table: RouteTable): RouteTable {
  const tags = ['Agent exchange'];
  return table
    .add({
      method: 'post',
      path: '/api/jobs/{jobId}/payment',
      operationId: 'submitPayment',
      summary: 'Submit the transaction that paid a job; it is verified on chain in the background',
      description:
        'Records the payment as `pending` and queues its verification. Poll the job: once the payment is confirmed the job is queued and runs, and a signed receipt is linked. A transaction credits one payment only (409 `payment_already_claimed`).',
      tags,
      params: z.strictObject({ jobId: jobIdSchema }),
      body: submitPaymentBody,
      responses: {
        202: {
          description: 'Recorded; being verified',
          schema: z.object({ payment: paymentSchema }),
          headers: {
            Location: {
              description: 'The job’s address (jobStatus)',
              required: true,
              schema: { type: 'string' },
            },
          },
        },
      },
      problems: {
        404: ['not_found'],
        409: ['job_not_awaiting_payment', 'payment_already_claimed', 'payment_not_required', 'quote_expired'],
        422: ['asset_not_quoted', 'unknown_reference'],
      },
      handler: async ({ params, body, req, deps }) => {
        const { payment } = await submitPayment(deps.db, deps.queues, params.jobId, body);
        const view = paymentView(payment, origin(req, deps, 'base'));
        return { status: 202, headers: { Location: view.links.job }, body: { payment: view } };
      },
    })
    .add({
      method: 'get',
      path: '/api/receipts/{receiptId}',
      operationId: 'getReceipt',
      summary: 'A signed receipt for a confirmed payment, verifiable offline with the key from /api/health',
      tags,
      params: z.strictObject({ receiptId: z.string().regex(/^rcpt_[0-9a-z]{26}$/, 'a receipt id (rcpt_…)') }),
      responses: { 200: { description: 'The receipt', schema: z.object({ receipt: receiptSchema }) } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps }) => ({
        status: 200,
        headers: { 'Cache-Control': 'public, max-age=300' },
        body: { receipt: await getReceipt(deps.db, params.receiptId) },
      }),
    });
}
