// Logistics: delivering a job's result once the job ends — a signed webhook POST, a polling hand-over,
// or a POST to another registered agent's endpoint. A request is a delivery (shared/deliveries) the
// `deliveries` queue works with retries and backoff.
import { randomBytes } from 'node:crypto';
import { DELIVERY_ATTEMPTS, SIGNATURE_HEADERS, checkTarget, enqueueDelivery } from '../deliveries/deliveries';
import type { DeliveryMethod, DeliveryRow } from '../deliveries/deliveries';
import { sealDeliverySecret } from '../deliveries/secrets';
import { getJobFor } from '../jobs/access';
import type { JobAccess } from '../jobs/access';
import type { Db } from '../platform/db/knex';
import { privateTargetsAllowed } from '../platform/egress';
import { env } from '../platform/env';
import { AppError, unprocessable } from '../platform/errors';
import { newId } from '../platform/ids';
import type { Queues } from '../platform/queues';
import { findAgent } from './agents';

export function logisticsView(row: DeliveryRow) {
  return {
    id: row.id,
    jobId: row.job_id,
    method: row.method,
    status: row.status,
    target: row.target_url
      ? { url: row.target_url, agentId: row.target_agent_id }
      : row.method === 'polling'
        ? { url: row.job_url, agentId: null }
        : null,
    attempts: row.attempts,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
    waitUntil: new Date(row.wait_until).toISOString(),
    deliveredAt: row.delivered_at ? new Date(row.delivered_at).toISOString() : null,
  };
}

/** What can be asked for now; on-chain anchoring needs an anchoring backend, which is not configured. */
export function logisticsCapabilities() {
  return {
    methods: [
      {
        method: 'webhook' as const,
        available: true,
        detail:
          'POST of the job result to targetUrl, signed with HMAC-SHA256 (a secret returned once) and the service ed25519 key.',
      },
      {
        method: 'polling' as const,
        available: true,
        detail: 'The result stays at the job URL; the request is marked delivered when the job ends.',
      },
      {
        method: 'agent_handoff' as const,
        available: true,
        detail: "POST of the job result to another registered agent's endpoint, signed like a webhook.",
      },
      {
        method: 'onchain_anchoring' as const,
        available: false,
        detail: 'No anchoring backend is configured in this deployment.',
      },
    ],
    limits: {
      attempts: DELIVERY_ATTEMPTS,
      backoff: { type: 'exponential' as const, firstDelayMs: env.JOB_BACKOFF_MS },
      timeoutMs: env.LOGISTICS_TIMEOUT_MS,
      maxWaitForJobSeconds: env.LOGISTICS_MAX_WAIT_SECONDS,
      privateTargets: privateTargetsAllowed(),
      schemes: privateTargetsAllowed() ? ['https', 'http'] : ['https'],
    },
    regions: [
      {
        id: 'global',
        detail: 'Deliveries leave from the exchange workers to any reachable public endpoint.',
      },
    ],
    signature: {
      hmac: `${SIGNATURE_HEADERS.hmac}: sha256=hex(HMAC-SHA256(secret, timestamp + "." + body))`,
      ed25519: `${SIGNATURE_HEADERS.ed25519}: base64url ed25519 over timestamp + "." + body, key from /api/discovery`,
      headers: Object.values(SIGNATURE_HEADERS),
    },
  };
}

export interface RequestLogisticsInput {
  jobId: string;
  method: DeliveryMethod | 'onchain_anchoring';
  targetUrl?: string | undefined;
  targetAgentId?: string | undefined;
  jobUrl: string;
}

/**
 * Queues the delivery of a job's result, for a caller who may open the job (shared/jobs/access.ts):
 * anyone else is told the job was not found, and nothing is written.
 */
export async function requestLogistics(
  db: Db,
  queues: Queues,
  access: JobAccess,
  input: RequestLogisticsInput,
): Promise<{ row: DeliveryRow; secret: string | null }> {
  if (input.method === 'onchain_anchoring') {
    throw unprocessable('method_unavailable', 'On-chain anchoring is not configured in this deployment.');
  }
  const job = await getJobFor(db, input.jobId, access);
  const requesterAgentId = access.caller.kind === 'agent' ? access.caller.agentId : null;
  let targetUrl: string | null = null;
  let targetAgentId: string | null = null;
  if (input.method === 'webhook') {
    if (!input.targetUrl) throw field('targetUrl', 'a webhook needs targetUrl');
    if (input.targetAgentId) throw field('targetAgentId', 'only an agent_handoff names an agent');
    targetUrl = input.targetUrl;
  } else if (input.method === 'agent_handoff') {
    if (!input.targetAgentId) throw field('targetAgentId', 'an agent_handoff needs targetAgentId');
    if (input.targetUrl) throw field('targetUrl', "a hand-off goes to the agent's registered endpoint");
    const agent = await findAgent(db, input.targetAgentId);
    if (!agent) throw unprocessable('target_agent_not_found', `There is no agent ${input.targetAgentId}.`);
    if (!agent.endpoint_url)
      throw unprocessable(
        'agent_has_no_endpoint',
        `Agent ${agent.id} registered no endpoint to hand off to.`,
      );
    targetUrl = agent.endpoint_url;
    targetAgentId = agent.id;
  } else if (input.targetUrl || input.targetAgentId) {
    throw field(input.targetUrl ? 'targetUrl' : 'targetAgentId', 'polling takes no target');
  }
  if (targetUrl) {
    const problem = await checkTarget(targetUrl);
    if (problem) throw unprocessable('target_not_allowed', `The delivery target is refused: ${problem}.`);
  }
  const id = newId('lgx');
  const secret = targetUrl ? `whsec_${randomBytes(32).toString('base64url')}` : null;
  const [row] = (await db('logistics_requests')
    .insert({
      id,
      job_id: job.id,
      agent_id: requesterAgentId,
      method: input.method,
      target_url: targetUrl,
      target_agent_id: targetAgentId,
      job_url: input.jobUrl,
      webhook_secret_sealed: secret ? sealDeliverySecret(id, secret) : null,
      status: 'queued',
      wait_until: new Date(Date.now() + env.LOGISTICS_MAX_WAIT_SECONDS * 1000),
    })
    .returning('*')) as DeliveryRow[];
  await enqueueDelivery(queues, row!.id);
  return { row: row!, secret };
}

function field(path: string, message: string): AppError {
  return new AppError(400, 'validation_failed', 'The request is not valid.', {
    errors: [{ path: `body.${path}`, message }],
  });
}
