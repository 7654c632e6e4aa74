// Deliveries: one signed POST at a time to a target outside (a job's result to a webhook or another
// agent, a job or payment event to its webhook subscription, an A2A push), each a row of
// `logistics_requests` (queued → delivering → delivered | failed) worked by the `deliveries` queue with
// retries and backoff. What asks for a delivery (requestLogistics, a webhook subscription, an A2A push
// config) writes the row; this module sends it.
import { ExternalFailure } from '../platform/errors';
import { A2A_CONTENT_TYPE } from '@a2a-js/sdk';
import { getJob, terminalStatuses } from '../jobs/jobs';
import type { JobRow } from '../jobs/jobs';
import type { Db } from '../platform/db/knex';
import { hmacSha256Hex } from '../platform/crypto';
import { EgressRefusedError, checkUserTarget, userFetch } from '../platform/egress';
import { env } from '../platform/env';
import { serviceSigningKey } from '../platform/keys';
import { logger } from '../platform/log';
import type { Queues } from '../platform/queues';
import { deliveryKeys } from './secrets';

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

/** A delivery: a row of `logistics_requests`. */
export interface DeliveryRow {
  id: string;
  job_id: string;
  agent_id: string | null;
  /** `a2a_push`: a state change of an A2A task to its push notification config (see a2aHeaders). */
  method: DeliveryMethod | 'a2a_push';
  target_url: string | null;
  target_agent_id: string | null;
  job_url: string;
  /**
   * A requestLogistics delivery's own HMAC secret, sealed (./secrets.ts). A subscription's
   * deliveries have none: they are signed with the subscription's.
   */
  webhook_secret_sealed: Buffer | null;
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

/** Refuses targets the deliveries would refuse, so the caller hears at once (null: acceptable). */
export const checkTarget = (url: string): Promise<string | null> =>
  checkUserTarget(url, { requireResolvable: true });

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
export function deliveryBody(row: DeliveryRow, job: JobRow): string {
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
export function eventDeliveryBody(row: Pick<DeliveryRow, 'id' | 'event'>): string {
  return JSON.stringify({ type: EVENT_DELIVERY_TYPE, deliveryId: row.id, ...row.event });
}

/** The signature headers of one delivery attempt; `hmacKey` is opened just before (deliveryKeys). */
export function signDelivery(
  row: Pick<DeliveryRow, 'id'>,
  hmacKey: string | null,
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
    ...(hmacKey ? { [SIGNATURE_HEADERS.hmac]: `sha256=${hmacSha256Hex(hmacKey, signed)}` } : {}),
    [SIGNATURE_HEADERS.ed25519]: key.sign(signed),
    [SIGNATURE_HEADERS.keyId]: key.keyId,
  };
}

export type DeliveryOutcome =
  | { outcome: 'delivered' | 'skipped' }
  | { outcome: 'wait'; delayMs: number }
  | { outcome: 'failed'; reason: string };

/** A failed attempt worth repeating (the target answered non-2xx, or could not be reached). */
export class DeliveryAttemptError extends ExternalFailure {}

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
  const row = (await db('logistics_requests').where({ id }).first()) as DeliveryRow | undefined;
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

  // The secrets are opened here, just before the POST, and go nowhere but into its headers.
  const keys = await deliveryKeys(db, row);
  if ('refused' in keys) {
    await failDelivery(db, id, keys.refused);
    return { outcome: 'failed', reason: keys.refused };
  }
  let body: string;
  let extra: Record<string, string> = { 'Content-Type': 'application/json' };
  if (row.method === 'a2a_push') {
    // The A2A payload exactly as recorded, with what the receiver asked to get back.
    body = JSON.stringify(row.event);
    extra = { 'Content-Type': A2A_CONTENT_TYPE, ...keys.headers };
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
        ...signDelivery(row, keys.hmacKey, body, attempt),
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
