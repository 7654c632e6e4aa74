// The exchange table, logistics: requestLogistics (a job's result delivered by webhook, polling or agent
// hand-off, as queued work) and logisticsCapabilities (what can be asked for now).
import { z } from 'zod';
import { jobIdSchema } from '../../../shared/jobs/jobs';
import { deliveryMethods, deliveryStatuses } from '../../../shared/deliveries/deliveries';
import { logisticsCapabilities, logisticsView, requestLogistics } from '../../../shared/exchange/logistics';
import { jobAccess } from '../../http/auth';
import { origin } from '../../http/links';
import type { RouteTable } from '../../http/route';
import { httpUrl } from '../../views/exchange';

const methodSchema = z.enum([...deliveryMethods, 'onchain_anchoring']);

const requestSchema = z
  .object({
    id: z.string(),
    jobId: z.string(),
    method: z.enum(deliveryMethods),
    status: z.enum(deliveryStatuses),
    target: z.object({ url: z.string(), agentId: z.string().nullable() }).nullable(),
    attempts: z.number().int(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    waitUntil: z.string(),
    deliveredAt: z.string().nullable(),
  })
  .meta({ id: 'LogisticsRequest' });

export function logisticsRoutes(table: RouteTable): RouteTable {
  const tags = ['Logistics'];
  return table
    .add({
      method: 'post',
      path: '/api/logistics/request',
      operationId: 'requestLogistics',
      summary: "Have a job's result delivered when the job ends: webhook, polling or agent hand-off",
      description:
        'Queued work: `queued → delivering → delivered | failed`, retried with exponential backoff. Webhook and hand-off POSTs carry `X-Delivery-Id`, `X-Delivery-Timestamp` and `X-Delivery-Signature: sha256=HMAC-SHA256(secret, timestamp + "." + body)` with the secret returned here once, and an ed25519 signature by the service key. The job opens as on jobStatus: with its access token, or the key that created it; for anyone else it is not found.',
      tags,
      auth: 'job',
      // The reply carries the delivery signatures' secret, shown once.
      secretReply: true,
      body: z
        .strictObject({
          jobId: jobIdSchema,
          method: methodSchema,
          targetUrl: httpUrl.optional().describe('webhook: where to POST the result'),
          targetAgentId: z
            .string()
            .regex(/^agt_[0-9a-z]{26}$/)
            .optional()
            .describe('agent_handoff: the agent whose registered endpoint receives the result'),
        })
        .meta({ id: 'RequestLogisticsRequest' }),
      responses: {
        202: {
          description: 'Queued',
          schema: z.object({
            request: requestSchema,
            secret: z
              .string()
              .nullable()
              .describe('HMAC key of the delivery signatures; shown once (null for polling)'),
          }),
        },
      },
      problems: {
        404: ['not_found'],
        422: ['agent_has_no_endpoint', 'method_unavailable', 'target_agent_not_found', 'target_not_allowed'],
      },
      handler: async ({ body, auth, req, deps }) => {
        const { row, secret } = await requestLogistics(deps.db, deps.queues, jobAccess(req, auth), {
          ...body,
          jobUrl: `${origin(req, deps, 'base')}/api/jobs/${body.jobId}`,
        });
        return {
          status: 202,
          headers: { 'Cache-Control': 'no-store' },
          body: { request: logisticsView(row), secret },
        };
      },
    })
    .add({
      method: 'get',
      path: '/api/logistics/capabilities',
      operationId: 'logisticsCapabilities',
      summary: 'The delivery methods, limits and regions supported now',
      tags,
      responses: {
        200: {
          description: 'Capabilities',
          schema: z.object({
            methods: z.array(z.object({ method: methodSchema, available: z.boolean(), detail: z.string() })),
            limits: z.object({
              attempts: z.number().int(),
              backoff: z.object({ type: z.literal('exponential'), firstDelayMs: z.number().int() }),
              timeoutMs: z.number().int(),
              maxWaitForJobSeconds: z.number().int(),
              privateTargets: z.boolean(),
              schemes: z.array(z.string()),
            }),
            regions: z.array(z.object({ id: z.string(), detail: z.string() })),
            signature: z.object({ hmac: z.string(), ed25519: z.string(), headers: z.array(z.string()) }),
          }),
        },
      },
      handler: async () => ({ status: 200, body: logisticsCapabilities() }),
    });
}
