// The exchange table, a confirmed payment's signed receipt (getReceipt), readable by its id alone.
import { z } from 'zod';
import { getReceipt } from '../../../shared/payments/job-payment';
import { settlements } from '../../../shared/payments/rows';
import { RECEIPT_TYPE } from '../../../shared/payments/receipts';
import type { RouteTable } from '../../http/route';
import { baseUnits } from '../../views/payments';

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

export function receiptRoutes(table: RouteTable): RouteTable {
  return table.add({
    method: 'get',
    path: '/api/receipts/{receiptId}',
    operationId: 'getReceipt',
    summary: 'A signed receipt for a confirmed payment, verifiable offline with the key from /api/health',
    description:
      'Readable by its id alone, without a credential: a receipt is a signed statement made to be handed to others (an auditor, a counterparty), and it says only what the chain shows (asset, amount, addresses, transaction) plus the job and service it paid. Its id is unguessable, and the job id in it opens nothing without the job’s access token.',
    tags: ['Agent exchange'],
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
