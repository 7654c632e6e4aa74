// The exchange table, paying a job by transfer (submitPayment): the transaction is recorded and verified on
// chain in the background. x402 payments arrive on createJob's retry instead.
import { z } from 'zod';
import { jobIdSchema } from '../../../shared/jobs/jobs';
import { idPattern } from '../../../shared/platform/ids';
import { assetIds } from '../../../shared/chains/assets';
import { paymentView } from '../../../shared/payments/views';
import { submitPayment } from '../../../shared/payments/submit';
import { jobAccess } from '../../http/auth';
import { origin } from '../../http/links';
import type { RouteTable } from '../../http/route';
import { paymentSchema } from '../../views/payments';

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

export function jobPaymentRoutes(table: RouteTable): RouteTable {
  return table.add({
    method: 'post',
    path: '/api/jobs/{jobId}/payment',
    operationId: 'submitPayment',
    summary: 'Submit the transaction that paid a job; it is verified on chain in the background',
    description:
      'Records the payment as `pending` and queues its verification. Poll the job: once the payment is confirmed the job is queued and runs, and a signed receipt is linked. A transaction credits one payment only (409 `payment_already_claimed`). Needs the job’s access token (or the key that created it), as jobStatus does: for anyone else the job is not found.',
    tags: ['Agent exchange'],
    auth: 'job',
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
    handler: async ({ params, body, auth, req, deps }) => {
      const { payment } = await submitPayment(deps.db, deps.queues, params.jobId, body, {
        access: jobAccess(req, auth),
      });
      const view = paymentView(payment, origin(req, deps, 'base'));
      return { status: 202, headers: { Location: view.links.job }, body: { payment: view } };
    },
  });
}
