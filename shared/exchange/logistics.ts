// Logistics: delivering a job's result once the job ends — a signed webhook POST, a polling hand-over,
// or a POST to another registered agent's endpoint. Each request is a row (queued → delivering →
// delivered | failed) worked by the `deliveries` queue with retries and backoff.
import { randomBytes } from 'node:crypto';
import { A2A_CONTENT_TYPE } from '@a2a-js/sdk';
import { pushCredentialsOf } from '../a2a/store';
import type { Db } from '../db/knex';
import { hmacSha256Hex } from '../crypto';
import { EgressRefusedError, checkUserTarget, privateTargetsAllowed, userFetch } from '../egress';
import { env } from '../env';
import { AppError, forbidden, unprocessable } from '../errors';
import { newId } from '../ids';
import { getJob, terminalStatuses } from '../jobs/jobs';
import type { JobRow } from '../jobs/jobs';
import { serviceSigningKey } from '../keys';
import { logger } from '../log';
import type { Queues } from '../queues';
import { findAgent } from './agents';

export const DELIVERY_TYPE = 'proof-exchange.delivery/v1';
export const EVENT_DELIVERY_TYPE = 'proof-exchange.event/v1';
export const deliveryMethods = ['webhook', 'polling', 'agent_handoff'] as const;
export type DeliveryMethod = (typeof deliveryMethods)[number];
export const deliveryStatuses = ['queued', 'delivering', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof deliveryStatuses)[number];
/** Attempts of one webhook or hand-off POST; waiting for the job to end spends none. */
export const DELIVERY_ATTEMPTS = 8;
export const SIGNATURE_HEADERS = {
  id: 'X-Delivery-Id',
  timestamp: 'X-Delivery-Timestamp',
  attempt: 'X-Delivery-Attempt',
  hmac: 'X-Delivery-Signature',
  ed25519: 'X-Delivery-Signature-Ed25519',
  keyId: 'X-Delivery-Key-Id',
} as const;

export interface LogisticsRow {
  id: string;
  job_id: string;
  agent_id: string | null;
  /** `a2a_push`: a state change of an A2A task to its push notification config (see a2aHeaders). */
  method: DeliveryMethod | 'a2a_push';
  target_url: string | null;
  target_agent_id: string | null;
  job_url: string;
  webhook_secret: string | null;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
  wait_until: Date;
  delivered_at: Date | null;
  /** A job or payment state change to deliver now (job webhooks); null for a result delivery. */
  event?: Record<string, unknown> | null;
}

export function logisticsView(row: LogisticsRow) {
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

/** Refuses targets the deliveries would refuse, so the caller hears at once (null: acceptable). */
export const checkTarget = (url: string): Promise<string | null> =>
  checkUserTarget(url, { requireResolvable: true });

export interface RequestLogisticsInput {
  jobId: string;
  method: DeliveryMethod | 'onchain_anchoring';
  targetUrl?: string | undefined;
  targetAgentId?: string | undefined;
  jobUrl: string;
}

export async function requestLogistics(
  db: Db,
  queues: Queues,
  requesterAgentId: string | null,
  input: RequestLogisticsInput,
): Promise<{ row: LogisticsRow; secret: string | null }> {
  if (input.method === 'onchain_anchoring') {
    throw unprocessable('method_unavailable', 'On-chain anchoring is not configured in this deployment.');
  }
  const job = await getJob(db, input.jobId);
  if (job.agent_id && job.agent_id !== requesterAgentId) {
    throw forbidden('This job belongs to another agent; request its delivery with that agent’s API key.');
  }
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
  const secret = targetUrl ? `whsec_${randomBytes(32).toString('base64url')}` : null;
  const [row] = (await db('logistics_requests')
    .insert({
      id: newId('lgx'),
      job_id: job.id,
      agent_id: requesterAgentId,
      method: input.method,
      target_url: targetUrl,
      target_agent_id: targetAgentId,
      job_url: input.jobUrl,
      webhook_secret: secret,
      status: 'queued',
      wait_until: new Date(Date.now() + env.LOGISTICS_MAX_WAIT_SECONDS * 1000),
    })
    .returning('*')) as LogisticsRow[];
  await enqueueDelivery(queues, row!.id);
  return { row: row!, secret };
}

function field(path: string, message: string): AppError {
  return new AppError(400, 'validation_failed', 'The request is not valid.', {
    errors: [{ path: `body.${path}`, message }],
  });
}

export async function enqueueDelivery(queues: Queues, requestId: string): Promise<void> {
  try {
    await queues.enqueue('deliveries', { requestId }, { attempts: DELIVERY_ATTEMPTS });
  } catch (err) {
    logger.warn(
      { requestId, err: (err as Error).message },
      'enqueue failed; the sweeper will retry from Postgres',
    );
  }
}

/** The body a delivery carries: the job's outcome, never its input. */
export function deliveryBody(row: LogisticsRow, job: JobRow): string {
  return JSON.stringify({
    type: DELIVERY_TYPE,
    deliveryId: row.id,
    jobId: job.id,
    service: job.service_id,
    status: job.status,
    result: job.result ?? null,
    error: job.error ?? null,
    finishedAt: job.finished_at ? new Date(job.finished_at).toISOString() : null,
    links: { job: row.job_url },
  });
}

/** The body of a state-change delivery: the event as recorded when it happened. */
export function eventDeliveryBody(row: Pick<LogisticsRow, 'id' | 'event'>): string {
  return JSON.stringify({ type: EVENT_DELIVERY_TYPE, deliveryId: row.id, ...row.event });
}

/** The signature headers of one delivery attempt. */
export function signDelivery(
  row: Pick<LogisticsRow, 'id' | 'webhook_secret'>,
  body: string,
  attempt: number,
  now = new Date(),
): Record<string, string> {
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const signed = `${timestamp}.${body}`;
  const key = serviceSigningKey();
  return {
    [SIGNATURE_HEADERS.id]: row.id,
    [SIGNATURE_HEADERS.timestamp]: timestamp,
    [SIGNATURE_HEADERS.attempt]: String(attempt),
    ...(row.webhook_secret
      ? { [SIGNATURE_HEADERS.hmac]: `sha256=${hmacSha256Hex(row.webhook_secret, signed)}` }
      : {}),
    [SIGNATURE_HEADERS.ed25519]: key.sign(signed),
    [SIGNATURE_HEADERS.keyId]: key.keyId,
  };
}

export type DeliveryOutcome =
  | { outcome: 'delivered' | 'skipped' }
  | { outcome: 'wait'; delayMs: number }
  | { outcome: 'failed'; reason: string };

/** A failed attempt worth repeating (the target answered non-2xx, or could not be reached). */
export class DeliveryAttemptError extends Error {}

async function finish(db: Db, id: string, set: Record<string, unknown>): Promise<boolean> {
  const n = await db('logistics_requests')
    .where({ id })
    .whereIn('status', ['queued', 'delivering'])
    .update({ ...set, updated_at: db.fn.now() });
  return n > 0;
}

export async function failDelivery(db: Db, id: string, reason: string): Promise<boolean> {
  return finish(db, id, { status: 'failed', last_error: reason.slice(0, 500) });
}

/**
 * One step of a delivery. Waits (without spending an attempt) until the job ends; then one POST.
 * Throws DeliveryAttemptError when the POST failed and may be repeated.
 */
export async function processDelivery(db: Db, id: string, attempt: number): Promise<DeliveryOutcome> {
  const row = (await db('logistics_requests').where({ id }).first()) as LogisticsRow | undefined;
  if (!row || row.status === 'delivered' || row.status === 'failed') return { outcome: 'skipped' };
  const job = await getJob(db, row.job_id);
  if (!terminalStatuses.has(job.status) && !row.event) {
    if (Date.now() >= new Date(row.wait_until).getTime()) {
      const reason = `The job had not ended by ${new Date(row.wait_until).toISOString()}.`;
      await failDelivery(db, id, reason);
      return { outcome: 'failed', reason };
    }
    const waited = Date.now() - new Date(row.created_at).getTime();
    return { outcome: 'wait', delayMs: Math.min(30_000, Math.max(200, Math.round(waited / 2))) };
  }
  if (row.method === 'polling') {
    await finish(db, id, { status: 'delivered', delivered_at: db.fn.now() });
    return { outcome: 'delivered' };
  }
  const claimed = await db('logistics_requests')
    .where({ id })
    .whereIn('status', ['queued', 'delivering'])
    .update({ status: 'delivering', attempts: db.raw('attempts + 1'), updated_at: db.fn.now() });
  if (!claimed) return { outcome: 'skipped' };

  let body: string;
  let extra: Record<string, string> = { 'Content-Type': 'application/json' };
  if (row.method === 'a2a_push') {
    // The A2A payload exactly as recorded, with what the receiver asked to get back.
    const credentials = await pushCredentialsOf(db, row.job_id);
    if (!credentials) {
      const reason = 'The push notification config was deleted.';
      await failDelivery(db, id, reason);
      return { outcome: 'failed', reason };
    }
    body = JSON.stringify(row.event);
    extra = {
      'Content-Type': A2A_CONTENT_TYPE,
      ...(credentials.authorization ? { Authorization: credentials.authorization } : {}),
      ...(credentials.token ? { 'X-A2A-Notification-Token': credentials.token } : {}),
    };
  } else {
    body = row.event ? eventDeliveryBody(row) : deliveryBody(row, job);
  }
  let status: number;
  try {
    // Resolved once and pinned by the egress module; a redirect comes back as a non-2xx answer.
    const res = await userFetch(row.target_url!, {
      method: 'POST',
      headers: {
        ...extra,
        'User-Agent': 'proof-exchange-delivery/1',
        ...signDelivery(row, body, attempt),
      },
      body,
      signal: AbortSignal.timeout(env.LOGISTICS_TIMEOUT_MS),
    });
    status = res.status;
    await res.body?.cancel().catch(() => undefined);
  } catch (err) {
    if (err instanceof EgressRefusedError) {
      await failDelivery(db, id, err.message);
      return { outcome: 'failed', reason: err.reason };
    }
    const message = `The target could not be reached: ${(err as Error).message}`;
    await db('logistics_requests').where({ id }).update({ last_error: message, last_status_code: null });
    throw new DeliveryAttemptError(message);
  }
  if (status >= 200 && status < 300) {
    await finish(db, id, {
      status: 'delivered',
      delivered_at: db.fn.now(),
      last_status_code: status,
      last_error: null,
    });
    return { outcome: 'delivered' };
  }
  const message = `The target answered HTTP ${status}.`;
  await db('logistics_requests').where({ id }).update({ last_status_code: status, last_error: message });
  throw new DeliveryAttemptError(message);
}
