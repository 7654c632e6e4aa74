// A2A push notifications as deliveries: the relay (shared/deliveries/webhooks.ts) hands this format an
// A2A subscription's new job events, and gets back the StreamResponse bodies to POST: a status update
// for each state change, and for the event that ends the job the whole task (status and result
// artifact) instead.
import { StreamResponse } from '@a2a-js/sdk';
import type { Knex } from 'knex';
import type { PushFormat, SubscriptionEvents } from '../deliveries/webhooks';
import type { JobRow, JobStatus } from '../jobs/jobs';
import { eventUpdates, taskFromJob } from './tasks';

/** Job states after which nothing more can happen to the job. */
const finalStatuses: ReadonlySet<string> = new Set<JobStatus>(['succeeded', 'failed', 'cancelled']);

const baseOf = (jobUrl: string) => jobUrl.slice(0, Math.max(0, jobUrl.lastIndexOf('/api/jobs/')));

/**
 * The relay's A2A format. The tasks are read again in full, after their events, with their context
 * ids, so a final event always finds its job final.
 */
export const a2aPushFormat: PushFormat = async (
  trx: Knex.Transaction,
  batch: readonly SubscriptionEvents[],
) => {
  const ids = batch.map((b) => b.sub.job_id);
  const jobs = new Map(((await trx('jobs').whereIn('id', ids)) as JobRow[]).map((j) => [j.id, j]));
  const contexts = new Map(
    (
      (await trx('a2a_tasks').whereIn('job_id', ids).select('job_id', 'context_id')) as Array<{
        job_id: string;
        context_id: string;
      }>
    ).map((t) => [t.job_id, t.context_id]),
  );
  const out = new Map<string, Array<Record<string, unknown>>>();
  for (const { sub, events } of batch) {
    const job = jobs.get(sub.job_id);
    if (!job) continue;
    const ctx = { contextId: contexts.get(sub.job_id) ?? sub.job_id, base: baseOf(sub.job_url) };
    out.set(
      sub.job_id,
      events.flatMap((e) => {
        if (finalStatuses.has(e.type)) {
          return [StreamResponse.toJSON({ payload: { $case: 'task', value: taskFromJob(job, ctx) } })];
        }
        return eventUpdates(e, job, ctx)
          .filter((u) => u.payload?.$case === 'statusUpdate')
          .map((u) => StreamResponse.toJSON(u));
      }) as Array<Record<string, unknown>>,
    );
  }
  return out;
};
