// Signed webhooks for job and payment state changes. A job created with `webhook: { url }` is subscribed
// with one HMAC secret; each change becomes one logistics request (`event` set), which the `deliveries`
// queue POSTs, signs and redelivers with backoff exactly as it does result deliveries. An A2A push
// notification config is a subscription of the `a2a` format: its deliveries carry A2A payloads.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { unprocessable } from '../platform/errors';
import { sealSubscriptionSecrets } from './secrets';
import { checkTarget, enqueueDelivery } from './deliveries';
import { newId } from '../platform/ids';
import { jobStatuses } from '../jobs/jobs';
import type { JobEventRow, JobRow, JobStatus } from '../jobs/jobs';
import { roundLog } from '../platform/log';
import type { Queues } from '../platform/queues';
import { stillWatched } from '../jobs/cancel';

/**
 * A subscription as the relay reads it: never its secrets (sealed in `secret_sealed`, `token_sealed`,
 * `auth_credentials_sealed`; only the deliveries worker opens them, see ./secrets.ts).
 */
export interface JobWebhookRow {
  job_id: string;
  url: string;
  job_url: string;
  agent_id: string | null;
  last_event_id: string;
  active: boolean;
  /** `event`: the exchange's event bodies; `a2a`: A2A StreamResponse bodies (an A2A push config). */
  format: 'event' | 'a2a';
}

/** One subscription's new job events, as the relay hands them to a format. */
export interface SubscriptionEvents {
  sub: JobWebhookRow;
  events: Array<Pick<JobEventRow, 'id' | 'type' | 'data' | 'at'>>;
}

/**
 * The delivery bodies of a format the relay does not build itself (A2A pushes, shared/a2a/pushes.ts),
 * per job id; it reads what it needs in the relay's transaction, after the events.
 */
export type PushFormat = (
  trx: Knex.Transaction,
  batch: readonly SubscriptionEvents[],
) => Promise<Map<string, Array<Record<string, unknown>>>>;

/** The formats beside the exchange's own event bodies; each process that relays passes them. */
export interface PushFormats {
  a2a: PushFormat;
}

const subscriptionColumns = ['job_id', 'url', 'job_url', 'agent_id', 'last_event_id', 'active', 'format'];

/**
 * A job's subscriptions as a json array (empty without one), for a caller that reads them in a
 * statement of its own and hands them to emitWebhookEvent(s) as `subs`. `jobIdColumn` names the column
 * of that statement holding the job's id. The rows are those of emitWebhookEvents' own read, with the
 * same JS types: the bigint cursor comes as text, as pg returns it to a plain read.
 */
export function subscriptionsJson(db: Knex | Knex.Transaction, jobIdColumn: string): Knex.Raw {
  const columns = subscriptionColumns.map((c) => (c === 'last_event_id' ? `${c}::text as ${c}` : c));
  return db.raw(
    `(select coalesce(json_agg(s), '[]'::json)
        from (select ${columns.join(', ')} from job_webhooks where job_id = ??) s)`,
    [jobIdColumn],
  );
}

/** A state change as its emitter describes it. */
export interface WebhookEventCore {
  /** `job.<job event type>` or `payment.<payment status>`. */
  event: string;
  occurredAt: string;
  [key: string]: unknown;
}

/** What a delivery body carries besides `type` and `deliveryId` (added when it is sent). */
export interface WebhookEvent extends WebhookEventCore {
  jobId: string;
  links: { job: string };
}

/** Every event a delivery can carry: each job state (and a retry), each payment state a payer sees. */
export const webhookEventNames = [
  ...jobStatuses.map((s) => `job.${s}`),
  'job.retry_scheduled',
  ...['pending', 'confirmed', 'underpaid', 'rejected', 'expired'].map((s) => `payment.${s}`),
];

/** Job states after which nothing more can happen to the job. */
const finalStatuses: ReadonlySet<JobStatus> = new Set(['succeeded', 'failed', 'cancelled']);
/** Progress is not a state change; it stays on the job's event stream only. */
const skippedEventTypes = new Set(['progress']);
/** Subscriptions handled per relay round; a full round is followed by another at once. */
const RELAY_BATCH = 100;

const iso = (d: Date | string) => new Date(d).toISOString();

/** createJob, before anything is written: a target the deliveries would refuse is refused now. */
export async function checkWebhookTarget(url: string): Promise<void> {
  const problem = await checkTarget(url);
  if (problem) throw unprocessable('target_not_allowed', `The webhook target is refused: ${problem}.`);
}

/** createJob, in its transaction: subscribes the new job. The secret is shown to the caller once. */
export async function registerJobWebhook(
  trx: Knex.Transaction,
  job: Pick<JobRow, 'id' | 'agent_id'>,
  input: { url: string; jobUrl: string },
): Promise<{ url: string; secret: string }> {
  const secret = `whsec_${randomBytes(32).toString('base64url')}`;
  await trx('job_webhooks').insert({
    job_id: job.id,
    url: input.url,
    ...sealSubscriptionSecrets(job.id, { secret }),
    job_url: input.jobUrl,
    agent_id: job.agent_id ?? null,
  });
  return { url: input.url, secret };
}

/** A subscription's deliveries carry no secret: the deliveries worker signs them with the subscription's. */
function deliveryRows(sub: JobWebhookRow, events: Array<WebhookEvent | Record<string, unknown>>) {
  const now = new Date();
  const a2a = sub.format === 'a2a';
  return events.map((event) => ({
    id: newId('lgx'),
    job_id: sub.job_id,
    agent_id: sub.agent_id,
    method: a2a ? 'a2a_push' : 'webhook',
    target_url: sub.url,
    job_url: sub.job_url,
    status: 'queued',
    wait_until: now,
    event: JSON.stringify(event),
  }));
}

const baseOf = (jobUrl: string) => jobUrl.slice(0, Math.max(0, jobUrl.lastIndexOf('/api/jobs/')));

/**
 * In the transaction that changes something of a job (a payment): one delivery if the job has a
 * webhook. `build` gets the service's base URL the job was created under. Returns the ids to enqueue
 * once committed (`enqueueWebhooks`). `subs`: the job's subscriptions, when the caller has read them
 * already (subscriptionsJson); they are not read again.
 */
export async function emitWebhookEvent(
  trx: Knex.Transaction,
  jobId: string,
  build: (ctx: { base: string; jobUrl: string }) => WebhookEventCore,
  subs?: readonly JobWebhookRow[],
): Promise<string[]> {
  return emitWebhookEvents(trx, [{ jobId, build }], subs);
}

/**
 * emitWebhookEvent for many changes in one transaction: one read of the subscriptions (none when the
 * caller hands them in as `subs`, every subscription of the changed jobs) and one insert of the
 * deliveries, whatever their number; no insert when no job has a subscription.
 */
export async function emitWebhookEvents(
  trx: Knex.Transaction,
  changes: ReadonlyArray<{
    jobId: string;
    build: (ctx: { base: string; jobUrl: string }) => WebhookEventCore;
  }>,
  known?: readonly JobWebhookRow[],
): Promise<string[]> {
  if (changes.length === 0) return [];
  const subs =
    known ??
    ((await trx('job_webhooks')
      .whereIn('job_id', [...new Set(changes.map((c) => c.jobId))])
      .select(subscriptionColumns)) as JobWebhookRow[]);
  // A2A pushes follow the task's states; a payment shows there as the job moving on.
  const byJob = new Map(subs.filter((s) => s.format !== 'a2a').map((s) => [s.job_id, s]));
  if (byJob.size === 0) return [];
  const rows = changes.flatMap(({ jobId, build }) => {
    const sub = byJob.get(jobId);
    if (!sub) return [];
    const base = baseOf(sub.job_url);
    const event = { ...build({ base, jobUrl: sub.job_url }), jobId, links: { job: sub.job_url } };
    return deliveryRows(sub, [event]);
  });
  await trx('logistics_requests').insert(rows);
  return rows.map((r) => r.id);
}

/** After commit; a Redis failure is logged and the sweeper enqueues the rows later. */
export async function enqueueWebhooks(queues: Queues, ids: readonly string[]): Promise<void> {
  for (const id of ids) await enqueueDelivery(queues, id);
}

/**
 * One relay round: job events not yet delivered, of subscriptions no other relay is holding, become
 * deliveries, and each subscription's cursor moves past them in the same transaction. Returns how many
 * subscriptions had something (a full batch means: run again).
 */
export async function relayJobEvents(
  db: Db,
  queues: Queues,
  formats: PushFormats,
  batch = RELAY_BATCH,
): Promise<number> {
  const { ids, subscriptions } = await db.transaction(async (trx) => {
    const subs = (await trx('job_webhooks as w')
      .select(subscriptionColumns.map((c) => `w.${c}`))
      .where('w.active', true)
      .whereExists((q) =>
        q.select(1).from('job_events as e').whereRaw('e.job_id = w.job_id and e.id > w.last_event_id'),
      )
      .orderBy('w.job_id')
      .limit(batch)
      .forUpdate()
      .skipLocked()) as JobWebhookRow[];
    if (subs.length === 0) return { ids: [] as string[], subscriptions: 0 };
    const jobIds = subs.map((s) => s.job_id);
    // The jobs before their events: a job read as final has all its events committed already.
    const jobs = (await trx('jobs')
      .whereIn('id', jobIds)
      .select('id', 'service_id', 'status', 'expires_at')) as Array<
      Pick<JobRow, 'id' | 'service_id' | 'status' | 'expires_at'>
    >;
    const events = (await trx('job_events as e')
      .join('job_webhooks as w', 'w.job_id', 'e.job_id')
      .whereIn('e.job_id', jobIds)
      .whereRaw('e.id > w.last_event_id')
      .orderBy('e.id')
      .select('e.id', 'e.job_id', 'e.type', 'e.data', 'e.at')) as Array<{
      id: string;
      job_id: string;
      type: string;
      data: Record<string, unknown>;
      at: Date;
    }>;
    const jobOf = new Map(jobs.map((j) => [j.id, j]));
    const shownOf = (jobId: string) =>
      events.filter((e) => e.job_id === jobId && !skippedEventTypes.has(e.type));
    // A2A payloads are built by their format, after the events (a final event finds the job final).
    const a2aBatch = subs
      .filter((s) => s.format === 'a2a' && jobOf.has(s.job_id))
      .map((sub) => ({ sub, events: shownOf(sub.job_id) }));
    const a2aPayloads = a2aBatch.length ? await formats.a2a(trx, a2aBatch) : new Map();
    const rows: ReturnType<typeof deliveryRows> = [];
    for (const sub of subs) {
      const job = jobOf.get(sub.job_id);
      const mine = events.filter((e) => e.job_id === sub.job_id);
      if (!job || mine.length === 0) continue;
      const shown = mine.filter((e) => !skippedEventTypes.has(e.type));
      if (sub.format === 'a2a') {
        rows.push(...deliveryRows(sub, a2aPayloads.get(sub.job_id) ?? []));
      } else {
        rows.push(
          ...deliveryRows(
            sub,
            shown.map((e) => ({
              event: `job.${e.type}`,
              jobId: job.id,
              service: job.service_id,
              sequence: Number(e.id),
              occurredAt: iso(e.at),
              data: e.data,
              links: { job: sub.job_url },
            })),
          ),
        );
      }
      await trx('job_webhooks')
        .where({ job_id: sub.job_id })
        // The job row was read before its events: one that ended in between shows as still running,
        // so its own final event settles it too.
        .update({
          last_event_id: mine[mine.length - 1]!.id,
          active: !(isSettled(job) || mine.some((e) => finalStatuses.has(e.type as JobStatus))),
        });
    }
    if (rows.length) await trx('logistics_requests').insert(rows);
    return { ids: rows.map((r) => r.id), subscriptions: subs.length };
  });
  await enqueueWebhooks(queues, ids);
  return subscriptions;
}

/** Final, or expired past the quote's watch window (a late payment can revive a job until then). */
function isSettled(job: Pick<JobRow, 'status' | 'expires_at'>, now = Date.now()): boolean {
  return finalStatuses.has(job.status) || (job.status === 'expired' && !stillWatched(job, now));
}

/** Subscriptions of jobs that expired unpaid and can no longer be revived stop being looked at. */
export async function retireWebhooks(db: Db): Promise<number> {
  return db('job_webhooks as w')
    .where('w.active', true)
    .whereExists((q) =>
      q
        .select(1)
        .from('jobs as j')
        .whereRaw('j.id = w.job_id')
        .andWhere((s) =>
          s
            .whereIn('j.status', [...finalStatuses])
            .orWhereRaw(`j.status = 'expired' and j.expires_at + make_interval(secs => ?) < now()`, [
              env.QUOTE_LATE_WINDOW_SECONDS,
            ]),
        ),
    )
    .whereNotExists((q) =>
      q.select(1).from('job_events as e').whereRaw('e.job_id = w.job_id and e.id > w.last_event_id'),
    )
    .update({ active: false });
}

/**
 * The worker's relay loop: a round every JOB_WEBHOOK_POLL_MS (at once again after a full batch), and
 * a retirement pass every minute. An idle round is one indexed query.
 */
export function startWebhookRelay(
  db: Db,
  queues: Queues,
  formats: PushFormats,
  intervalMs = env.JOB_WEBHOOK_POLL_MS,
): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let retiredAt = Date.now();
  const round = async () => {
    while (!stopped && (await relayJobEvents(db, queues, formats)) >= RELAY_BATCH);
    if (Date.now() - retiredAt > 60_000) {
      retiredAt = Date.now();
      await retireWebhooks(db);
    }
  };
  const rounds = roundLog('webhook relay round');
  const tick = async () => {
    running = round().then(
      () => rounds.succeeded(),
      (err: Error) => rounds.failed(err),
    );
    await running;
    if (!stopped) timer = setTimeout(tick, intervalMs);
  };
  timer = setTimeout(tick, intervalMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
