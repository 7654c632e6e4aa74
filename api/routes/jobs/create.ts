// createJob (the exchange table): a job for a service, ordered for its caller (shared/exchange/order.ts);
// free jobs are queued at once, priced ones answer 402 with their quotes, and a retry with an x402 payment
// pays them.
import { z } from 'zod';
import { orderJob } from '../../../shared/exchange/order';
import { orderingCaller } from '../../http/callers';
import type { RouteTable } from '../../http/route';
import { jobSchema, jobView } from '../../views/jobs';
import { jobPayment } from '../../../shared/payments/job-payment';
import { payJobWithX402 } from '../../../shared/payments/x402/pay';
import { origin } from '../../http/links';
import { paymentRequiredHeader, paymentSignatureOf } from '../../http/x402';
import { jobWebhookRequestSchema, jobWebhookSchema } from '../../views/deliveries';
import { jobPaymentSchema, paidJobReply } from '../../views/payments';

const createJobBody = z
  .strictObject({
    service: z.string().min(1).max(100).describe('A service id from GET /api/services'),
    input: z.record(z.string(), z.unknown()).describe("The service's input, matching its inputSchema"),
    webhook: jobWebhookRequestSchema.optional(),
  })
  .meta({ id: 'CreateJobRequest' });

const createdJobSchema = z
  .object({
    job: jobSchema,
    accessToken: z
      .string()
      .describe(
        'The job’s access token (jt_…), shown in this reply only: send it as `Authorization: Bearer <accessToken>` to read the job (jobStatus, its events), pay it (submitPayment) and route its result (requestLogistics). The key that created the job works too. The job id alone opens nothing.',
      ),
    payment: jobPaymentSchema.optional(),
    webhook: jobWebhookSchema.optional(),
  })
  .meta({ id: 'CreatedJob' });
const jobLocation = {
  description: 'The job’s address (jobStatus)',
  required: true,
  schema: { type: 'string' as const },
};

export function createJobRoutes(table: RouteTable): RouteTable {
  return table.add({
    method: 'post',
    path: '/api/jobs',
    operationId: 'createJob',
    summary: 'Create a job for a service; free jobs are queued at once, priced ones await payment',
    tags: ['Agent exchange'],
    auth: 'agent-optional',
    // The reply carries the job's capability (and a webhook's secret), shown once.
    secretReply: true,
    query: z.strictObject({
      ref: z.string().min(1).max(40).optional().describe('A referral code (or the X-Referral-Code header)'),
    }),
    body: createJobBody,
    requestHeaders: z.object({
      'PAYMENT-SIGNATURE': z
        .string()
        .optional()
        .describe(
          'x402 v2 payment (base64 JSON) for a requirement from this job’s PAYMENT-REQUIRED, sent with the same body: it pays that job (no new job is made). X-PAYMENT is read the same way.',
        ),
    }),
    responses: {
      202: {
        description:
          'Accepted: free, or paid from a license’s prepaid credit, or (a retry with PAYMENT-SIGNATURE) the x402 payment settled and recorded; poll the job or follow its events',
        schema: createdJobSchema,
        headers: {
          Location: jobLocation,
          'PAYMENT-RESPONSE': {
            description:
              'On a PAYMENT-SIGNATURE retry: the x402 settlement (base64 of its JSON: success, transaction, network, payer)',
            schema: { type: 'string' },
          },
        },
      },
      402: {
        description:
          'Stored and awaiting payment: the same body, whose `payment` holds this job’s quotes (amounts, receiving addresses, references, expiry); pay one and submit it, or retry with an x402 payment',
        schema: createdJobSchema,
        headers: {
          'PAYMENT-REQUIRED': {
            description:
              'The x402 payment requirements of this job (base64 of their JSON): sent whenever a quote can be paid with x402 (`exact`, through a configured settler). It never lists nothing: where no quote can be, the header and `payment.x402` are absent and the quotes are paid with submitPayment',
            required: false,
            schema: { type: 'string' },
          },
          Location: jobLocation,
        },
      },
    },
    problems: {
      400: ['validation_failed', 'payment_signature_invalid', 'x402_version_unsupported'],
      402: ['payment_invalid', 'payment_settlement_failed'],
      409: [
        'payment_for_other_job',
        'payment_signature_used',
        'payment_in_progress',
        'job_payment_in_progress',
        'job_not_awaiting_payment',
        'quote_expired',
      ],
      422: [
        'unknown_service',
        'unknown_referral',
        'referral_needs_agent',
        'self_referral',
        'target_not_allowed',
        'payment_requirements_mismatch',
      ],
      429: ['too_many_open_quotes'],
      503: [
        'payments_unavailable',
        'asset_config_invalid',
        'x402_unavailable',
        'payment_settler_unavailable',
        'payment_settlement_unknown',
      ],
    },
    handler: async ({ body, query, auth, req, deps }) => {
      const signature = paymentSignatureOf(req);
      if (signature) {
        // The retry pays the job its requirement was issued for (never a new one).
        const base = origin(req, deps, 'base');
        const paid = await payJobWithX402(deps.db, deps.queues, {
          header: signature.value,
          request: body,
          base,
        });
        const payment = await jobPayment(deps.db, paid.job, base);
        return paidJobReply(jobView(paid.job, req, deps), paid, signature.legacy, payment);
      }
      const { row, accessToken, payment, webhook } = await orderJob(
        deps.db,
        deps.queues,
        orderingCaller(auth, req, deps),
        { ...body, referralCode: query.ref ?? req.header('x-referral-code') },
      );
      const job = jobView(row, req, deps);
      return {
        status: payment?.required ? 402 : 202,
        headers: { Location: job.links.self!, ...paymentRequiredHeader(payment) },
        body: { job, accessToken, ...(payment ? { payment } : {}), ...(webhook ? { webhook } : {}) },
      };
    },
  });
}
