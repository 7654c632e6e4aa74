// Following a job as it changes: the one loop behind jobStatus's long poll, the jobEvents stream and
// A2A's blocking sends, streams and resubscriptions. Every pass re-reads Postgres, the truth; between
// passes it waits for the job's hint (./notify.ts), HINT_REREAD_MS at most, or for the caller to leave.
import type { Knex } from 'knex';
import type { Db } from '../platform/db/knex';
import { getJob, jobEvents } from './jobs';
import type { JobEventRow, JobRow } from './jobs';
import type { JobNotifier } from './notify';

/** What following needs: the store and this process's hints (the API's deps are one). */
export interface JobWatch {
  db: Db;
  notifier: JobNotifier;
}

/** One wait between passes at most (the notifier answers sooner: on a hint, or at HINT_REREAD_MS). */
const WAIT_MS = 15_000;

/**
 * Waits until `until(row)` holds, the deadline passes or the signal aborts, re-reading the row after
 * each hint, and answers the row as last read: the very row passed in when it held from the start.
 */
export async function waitForJob(
  watch: JobWatch,
  row: JobRow,
  until: (row: JobRow) => boolean,
  opts: { signal: AbortSignal; deadline?: number },
): Promise<JobRow> {
  const deadline = opts.deadline ?? Infinity;
  while (!until(row) && Date.now() < deadline && !opts.signal.aborted) {
    await watch.notifier.next(row.id, Math.min(deadline - Date.now(), WAIT_MS), opts.signal);
    row = await getJob(watch.db, row.id);
  }
  return row;
}

/** One pass over a followed job. */
export interface JobStep {
  /** The job's events after the previous pass's (after the cursor, on the first), in order. */
  events: JobEventRow[];
  /** The row read after those events: a job whose final event is among them is final here too. */
  row: JobRow;
  /** The job has ended (by the follower's `ended`) and has no event left: no pass comes after this. */
  last: boolean;
}

/**
 * A job's events after `after`, pass by pass, each with the row read after them, until the job ends
 * and its events are all out (the last step) or the signal aborts. A pass with no new events is a step
 * too (a follower may keep its connection alive there). `ended` says what ending is to this follower:
 * an ended row is what stops the passes, so a job that ends without an event of its own (an A2A quote
 * whose watch runs out) still ends the follow.
 */
export async function* followJob(
  watch: JobWatch,
  jobId: string,
  opts: { after: number; signal: AbortSignal; ended: (row: JobRow) => boolean },
): AsyncGenerator<JobStep, void, undefined> {
  let cursor = opts.after;
  while (!opts.signal.aborted) {
    const events = await jobEvents(watch.db, jobId, cursor);
    // Read after its events: a job whose final event is here is final in the row too.
    const row = await getJob(watch.db, jobId);
    cursor = Number(events.at(-1)?.id ?? cursor);
    const ended = opts.ended(row);
    // The job may have ended between reading its events and its row: then its final event is there
    // now, and the next pass (at once, without waiting) streams it.
    const last = ended && (await jobEvents(watch.db, jobId, cursor)).length === 0;
    yield { events, row, last };
    if (last) return;
    if (!ended) await watch.notifier.next(jobId, WAIT_MS, opts.signal);
  }
}

/** The id of the job's first event (0 when it has none): a follower that showed the new job reads after it. */
export async function firstEventId(db: Db | Knex.Transaction, jobId: string): Promise<number> {
  const r = (await db('job_events').where({ job_id: jobId }).min({ id: 'id' }).first()) as {
    id: string | null;
  };
  return Number(r.id ?? 0);
}

/** The id of the job's latest event (0 when it has none): a follower from now reads after it. */
export async function lastEventId(db: Db | Knex.Transaction, jobId: string): Promise<number> {
  const r = (await db('job_events').where({ job_id: jobId }).max({ id: 'id' }).first()) as {
    id: string | null;
  };
  return Number(r.id ?? 0);
}
