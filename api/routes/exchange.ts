// Table A, the agent exchange: the platform operations (health, services, pricing, jobs).
import { z } from 'zod';
import { serviceSigningKey } from '../../shared/keys';
import { listServices } from '../../shared/jobs/catalog';
import { getJob, jobEvents, jobIdSchema, terminalStatuses } from '../../shared/jobs/jobs';
import { RouteTable } from '../http/route';
import { origin } from '../http/links';
import { checkDb, checkRedis, queueDepths } from './health';
import { createJobFor } from './jobs-create';
import { jobSchema, jobView } from './jobs-view';
import {
  assetPricingSchema,
  jobPaymentSchema,
  jobWebhookRequestSchema,
  jobWebhookSchema,
  jobStatusBody,
  payCreatedJob,
  paymentRequiredHeader,
  paymentSignatureOf,
  pricingAssets,
  quotePolicy,
} from './payments';

export const AGENT_EXCHANGE_VERSION = '1.3.0';

const signingKeySchema = z
  .object({
    algorithm: z.literal('ed25519'),
    keyId: z.string(),
    publicKey: z.string(),
    publicKeyPem: z.string(),
  })
  .meta({
    id: 'SigningKey',
    description: 'The service key that signs attestations, receipts and proof packages.',
  });

export function signingKeyView() {
  const k = serviceSigningKey();
  return {
    algorithm: 'ed25519' as const,
    keyId: k.keyId,
    publicKey: k.publicKey,
    publicKeyPem: k.publicKeyPem,
  };
}

export const serviceSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    price: z.object({ usdCents: z.number().int(), free: z.boolean() }),
    inputSchema: z.record(z.string(), z.unknown()),
    expectedDurationMs: z.number().int(),
  })
  .meta({ id: 'Service' });

export function serviceViews() {
  return listServices().map((s) => ({
    id: s.id,
    name: s.name,
    description: s.description,
    price: { usdCents: s.priceUsdCents, free: s.priceUsdCents === 0 },
    inputSchema: z.toJSONSchema(s.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
    expectedDurationMs: s.expectedDurationMs,
  }));
}

const createJobBody = z
  .strictObject({
    service: z.string().min(1).max(100).describe('A service id from GET /api/services'),
    input: z.record(z.string(), z.unknown()).describe("The service's input, matching its inputSchema"),
    webhook: jobWebhookRequestSchema.optional(),
  })
  .meta({ id: 'CreateJobRequest' });

const jobParams = z.strictObject({ jobId: jobIdSchema });

const createdJobSchema = z
  .object({ job: jobSchema, payment: jobPaymentSchema.optional(), webhook: jobWebhookSchema.optional() })
  .meta({ id: 'CreatedJob' });
const jobLocation = {
  description: 'The job’s address (jobStatus)',
  required: true,
  schema: { type: 'string' as const },
};

export function exchangeRoutes(table = new RouteTable('exchange')): RouteTable {
  const tags = ['Agent exchange'];
  return table
    .add({
      method: 'get',
      path: '/api/health',
      operationId: 'health',
      summary: 'Liveness and a summary of the dependencies',
      tags,
      responses: {
        200: {
          description: 'The process is alive; `status` says whether its dependencies are',
          schema: z.object({
            status: z.enum(['ok', 'degraded']),
            version: z.string(),
            time: z.string(),
            checks: z.record(z.string(), z.unknown()),
            signingKey: signingKeySchema,
          }),
        },
      },
      handler: async ({ deps }) => {
        const [db, redis, queues] = await Promise.all([checkDb(deps), checkRedis(deps), queueDepths(deps)]);
        return {
          status: 200,
          headers: { 'Cache-Control': 'no-store' },
          body: {
            status: db.ok && redis.ok ? 'ok' : 'degraded',
            version: AGENT_EXCHANGE_VERSION,
            time: new Date().toISOString(),
            checks: { db, redis, queues: queues ?? { ok: false } },
            signingKey: signingKeyView(),
          },
        };
      },
    })
    .add({
      method: 'get',
      path: '/api/services',
      operationId: 'services',
      summary: 'The services an agent can buy, with input schemas, prices and expected durations',
      tags,
      responses: {
        200: {
          description: 'The catalogue',
          schema: z.object({ services: z.array(serviceSchema), signingKey: signingKeySchema }),
        },
      },
      handler: async () => ({
        status: 200,
        body: { services: serviceViews(), signingKey: signingKeyView() },
      }),
    })
    .add({
      method: 'get',
      path: '/api/pricing',
      operationId: 'pricing',
      summary: 'Prices per service in USD cents',
      tags,
      responses: {
        200: {
          description: 'Prices',
          schema: z.object({
            currency: z.literal('USD'),
            unit: z.literal('cents'),
            services: z.array(z.object({ id: z.string(), usdCents: z.number().int(), free: z.boolean() })),
            assets: z.array(assetPricingSchema),
            quotes: z.object({ ttlSeconds: z.number().int(), lateWindowSeconds: z.number().int() }),
          }),
        },
      },
      problems: { 503: ['asset_config_invalid'] },
      handler: async () => ({
        status: 200,
        body: {
          currency: 'USD' as const,
          unit: 'cents' as const,
          services: listServices().map((s) => ({
            id: s.id,
            usdCents: s.priceUsdCents,
            free: s.priceUsdCents === 0,
          })),
          assets: await pricingAssets(),
          quotes: quotePolicy(),
        },
      }),
    })
    .add({
      method: 'post',
      path: '/api/jobs',
      operationId: 'createJob',
      summary: 'Create a job for a service; free jobs are queued at once, priced ones await payment',
      tags,
      auth: 'agent-optional',
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
              description: 'The x402 payment requirements of this job (base64 of their JSON)',
              required: true,
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
          'self_referral',
          'target_not_allowed',
          'payment_requirements_mismatch',
        ],
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
        if (signature) return payCreatedJob(signature, body, req, deps);
        const { row, payment, webhook } = await createJobFor(req, deps, auth, {
          ...body,
          referralCode: query.ref ?? req.header('x-referral-code'),
        });
        const job = jobView(row, req, deps);
        return {
          status: payment?.required ? 402 : 202,
          headers: { Location: job.links.self!, ...paymentRequiredHeader(payment) },
          body: { job, ...(payment ? { payment } : {}), ...(webhook ? { webhook } : {}) },
        };
      },
    })
    .add({
      method: 'get',
      path: '/api/jobs/{jobId}',
      operationId: 'jobStatus',
      summary: 'A job: state, progress, result when done; `wait` long-polls for a change (at most 30 s)',
      tags,
      params: jobParams,
      query: z.strictObject({
        wait: z.coerce
          .number()
          .int()
          .min(0)
          .max(30)
          .optional()
          .describe('Seconds to wait for the job to change state'),
      }),
      responses: {
        200: {
          description: 'The job',
          schema: z.object({ job: jobSchema, payment: jobPaymentSchema.optional() }),
        },
      },
      problems: { 404: ['not_found'] },
      handler: async ({ params, query, req, res, deps }) => {
        let row = await getJob(deps.db, params.jobId);
        if (query.wait && !terminalStatuses.has(row.status)) {
          const deadline = Date.now() + query.wait * 1000;
          const abort = new AbortController();
          res.on('close', () => abort.abort());
          const startStatus = row.status;
          // Wake on any change; answer once the state moved (progress alone keeps waiting).
          while (row.status === startStatus && Date.now() < deadline && !abort.signal.aborted) {
            await deps.notifier.next(row.id, deadline - Date.now(), abort.signal);
            row = await getJob(deps.db, params.jobId);
          }
        }
        return {
          status: 200,
          headers: { 'Cache-Control': 'no-store' },
          body: await jobStatusBody(row, req, deps),
        };
      },
    })
    .add({
      method: 'get',
      path: '/api/jobs/{jobId}/events',
      operationId: 'jobEvents',
      summary: "A job's state changes as a server-sent event stream, ending when the job ends",
      tags,
      hidden: true,
      params: jobParams,
      responses: { 200: { description: 'text/event-stream', contentType: 'text/event-stream' } },
      handler: async ({ params, req, res, deps }) => {
        let row = await getJob(deps.db, params.jobId);
        const lastId = Number(req.header('last-event-id') ?? 0) || 0;
        res.writeHead(200, {
          'Content-Type': 'text/event-stream',
          'Cache-Control': 'no-store',
          Connection: 'keep-alive',
          'X-Accel-Buffering': 'no',
        });
        const abort = new AbortController();
        res.on('close', () => abort.abort());
        let cursor = lastId;
        let lastWrite = Date.now();
        const base = origin(req, deps);
        while (!abort.signal.aborted) {
          for (const e of await jobEvents(deps.db, row.id, cursor)) {
            cursor = Number(e.id);
            lastWrite = Date.now();
            res.write(
              `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify({ jobId: row.id, type: e.type, at: e.at, ...e.data, links: { job: `${base}/api/jobs/${row.id}` } })}\n\n`,
            );
          }
          if (terminalStatuses.has(row.status)) break;
          await deps.notifier.next(row.id, 15_000, abort.signal);
          if (Date.now() - lastWrite > 15_000) {
            res.write(': keep-alive\n\n');
            lastWrite = Date.now();
          }
          row = await getJob(deps.db, params.jobId);
        }
        res.end();
        return undefined;
      },
    });
}
