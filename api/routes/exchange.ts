// Table A, the agent exchange: the platform operations (health, services, pricing, jobs).
import { z } from 'zod';
import { serviceSigningKey } from '../../shared/keys';
import { attributeJob, referralForJob } from '../../shared/exchange/referrals';
import { attachQuotes } from '../../shared/payments/payments';
import { listServices } from '../../shared/jobs/catalog';
import { createJob, getJob, jobEvents, jobIdSchema, terminalStatuses } from '../../shared/jobs/jobs';
import { RouteTable } from '../http/route';
import { origin } from '../http/links';
import { checkDb, checkRedis, queueDepths } from './health';
import { jobSchema, jobView } from './jobs-view';
import {
  assetPricingSchema,
  checkJobWebhook,
  jobPaymentSchema,
  jobWebhookRequestSchema,
  jobWebhookSchema,
  subscribeJobWebhook,
  jobStatusBody,
  newJobPayment,
  payCreatedJob,
  paymentRequiredHeader,
  paymentSignatureOf,
  pricingAssets,
  quoteForNewJob,
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

const createJobReply = z.object({
  job: jobSchema,
  payment: jobPaymentSchema.optional(),
  webhook: jobWebhookSchema.optional(),
});

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
            "x402 v2 payment (base64 JSON) for a requirement from this job's PAYMENT-REQUIRED, sent with the same body: it pays that job (no new job is made). X-PAYMENT is read the same way.",
          ),
      }),
      responses: {
        202: {
          description:
            'Accepted: a free job (or one prepaid credit paid) queued, or, for a retry with PAYMENT-SIGNATURE, the payment settled and recorded; poll the job or follow its events',
          schema: createJobReply,
          headers: {
            Location: 'The job',
            'PAYMENT-RESPONSE':
              'On a PAYMENT-SIGNATURE retry: the x402 settlement (base64 JSON: success, transaction, network, payer)',
          },
        },
        402: {
          description:
            'Payment required: the job was created and awaits payment. The body holds it and its quotes (pay any with submitPayment); PAYMENT-REQUIRED holds the x402 requirements (retry this request with PAYMENT-SIGNATURE)',
          schema: createJobReply,
          headers: {
            Location: 'The job',
            'PAYMENT-REQUIRED': 'x402 v2 payment requirements (base64 JSON), as in payment.x402',
          },
        },
      },
      handler: async ({ body, query, auth, req, deps }) => {
        const signature = paymentSignatureOf(req);
        if (signature) return payCreatedJob(signature, body, req, deps);
        const agentId = auth.kind === 'agent' ? auth.agentId : null;
        const referral = await referralForJob(deps.db, query.ref ?? req.header('x-referral-code'), agentId);
        // A license never makes a priced job free: its prepaid credit (if any) pays it in the same
        // transaction, else the job is quoted like anyone's.
        const prepaidLicenseId = auth.kind === 'license' ? auth.licenseId : undefined;
        const quoting = quoteForNewJob(body.service);
        const prepared = prepaidLicenseId ? await quoting.catch(() => undefined) : await quoting;
        await checkJobWebhook(body.webhook);
        let webhook: z.infer<typeof jobWebhookSchema> | undefined;
        const row = await createJob(
          deps.db,
          deps.queues,
          { service: body.service, input: body.input, agentId, prepaidLicenseId },
          referral || prepared || body.webhook || prepaidLicenseId
            ? async (trx, created) => {
                // Credit did not cover it and it cannot be quoted either: nothing is written.
                if (created.status === 'awaiting_payment' && !prepared) await quoting;
                if (referral) await attributeJob(trx, created.id, referral.id);
                if (prepared && created.status === 'awaiting_payment')
                  await attachQuotes(trx, created, prepared);
                if (body.webhook) webhook = await subscribeJobWebhook(trx, created, body.webhook, req, deps);
              }
            : undefined,
        );
        const payment = await newJobPayment(row, prepared, req, deps);
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
