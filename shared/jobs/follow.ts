// Following a job as it changes: the one loop behind jobStatus's long poll, the jobEvents stream and
// A2A's blocking sends, streams and resubscriptions. Every pass re-reads Postgres, the truth; between
// passes it waits for the job's hint (./notify.ts): a hint for the job, a resubscription (hints may
// have been missed), the notifier's safety check finding the job changed, or the caller leaving. A
// quiet job costs no query of its own. A follower whose hints are lost (the subscription down past
// SUBSCRIPTION_LOST_MS) or whose Postgres read fails ends with `stream_interrupted`, which a stream
// says to its client before it ends; a long poll re-reads every FALLBACK_REREAD_MS instead.
import type { Knex } from 'knex';
import type { Db } from '../platform/db/knex';
import { AppError, isUnavailableError } from '../platform/errors';
import { getJob, jobEvents } from './jobs';
import type { JobEventRow, JobRow } from './jobs';
import { FALLBACK_REREAD_MS } from './notify';
import type { JobNotifier } from './notify';

/** What following needs: the store and this process's hints (the API's deps are one). */
export interface JobWatch {
  db: Db;
  notifier: JobNotifier;
}

/** A quiet follower gets a step (without reading anything) this often, to keep its connection alive. */
export const QUIET_STEP_MS = 15_000;

/** The hints that drive a follower are not heard: it cannot know the job's next change. */
export const streamInterrupted = () =>
  new AppError(
    503,
    'stream_interrupted',
    "This process cannot follow the job's changes now; resume from the last event id.",
    { headers: { 'Retry-After': '2' } },
  );

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Waits until `until(row)` holds, the deadline passes or the signal aborts, re-reading the row after
 * each hint, and answers the row as last read: the very row passed in when it held from the start.
 * Without a hint nothing changed (the hint is published after every change), so a wait that runs out
 * answers the row it has without reading it again.
 */
export async function waitForJob(
  watch: JobWatch,
  row: JobRow,
  until: (row: JobRow) => boolean,
  opts: { signal: AbortSignal; deadline?: number },
): Promise<JobRow> {
  const deadline = opts.deadline ?? Infinity;
  while (!until(row) && Date.now() < deadline && !opts.signal.aborted) {
    const how = await watch.notifier.next(row.id, deadline - Date.now(), opts.signal, {
      db: watch.db,
      updatedAt: new Date(row.updated_at),
    });
    if (opts.signal.aborted) break;
    if (how === 'lost') {
      // No hint can come: poll, as long polls did before hints.
      await pause(Math.min(FALLBACK_REREAD_MS, deadline - Date.now()), opts.signal);
    } else if (how === 'timeout' && Date.now() >= deadline) {
      break;
    }
    row = await getJob(watch.db, row.id);
  }
  return row;
}

/**
 * Waits on a row that is hinted by its id but not on every change (a proof: hinted when it ends or is
 * sent back to the queue, not when a prover claims it) until `until(row)` holds, the deadline passes or
 * the signal aborts. It re-reads after each hint and once more when the wait runs out, so a change
 * that was not hinted is still answered, at the deadline at the latest.
 */
export async function waitForHinted<R extends { id: string }>(
  notifier: JobNotifier,
  row: R,
  read: (id: string) => Promise<R>,
  until: (row: R) => boolean,
  opts: { signal: AbortSignal; deadline: number },
): Promise<R> {
  while (!until(row) && Date.now() < opts.deadline && !opts.signal.aborted) {
    const how = await notifier.next(row.id, opts.deadline - Date.now(), opts.signal);
    if (opts.signal.aborted) break;
    if (how === 'lost') await pause(Math.min(FALLBACK_REREAD_MS, opts.deadline - Date.now()), opts.signal);
    row = await read(row.id);
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
 * too, and so is a quiet QUIET_STEP_MS without a hint (the row as last read, nothing read): a follower
 * may keep its connection alive there. `ended` says what ending is to this follower: an ended row is
 * what stops the passes, so a job that ends without an event of its own (an A2A quote whose watch
 * runs out) still ends the follow; `changesAt` says when the row, unchanged, will mean something else
 * to `ended` (that watch's end), and a pass is made then. Throws `stream_interrupted` when the hints
 * are lost or Postgres is unreachable, and whatever else a read throws.
 */
export async function* followJob(
  watch: JobWatch,
  jobId: string,
  opts: {
    after: number;
    signal: AbortSignal;
    ended: (row: JobRow) => boolean;
    changesAt?: (row: JobRow) => number | undefined;
  },
): AsyncGenerator<JobStep, void, undefined> {
  let cursor = opts.after;
  while (!opts.signal.aborted) {
    let pass: JobStep;
    try {
      const events = await jobEvents(watch.db, jobId, cursor);
      // Read after its events: a job whose final event is here is final in the row too.
      const row = await getJob(watch.db, jobId);
      cursor = Number(events.at(-1)?.id ?? cursor);
      // The job may have ended between reading its events and its row: then its final event is there
      // now, and the next pass (at once, without waiting) streams it.
      const last = opts.ended(row) && (await jobEvents(watch.db, jobId, cursor)).length === 0;
      pass = { events, row, last };
    } catch (err) {
      // Postgres is away: the follower cannot know what comes next either.
      throw isUnavailableError(err) ? streamInterrupted() : err;
    }
    const { events, row, last } = pass;
    const ended = opts.ended(row);
    yield { events, row, last };
    if (last) return;
    if (ended) continue;
    // Wait for a hint (or the notifier's safety check); a quiet stretch yields a step that reads nothing.
    const changesAt = opts.changesAt?.(row);
    const rereadAt = changesAt !== undefined && changesAt > Date.now() ? changesAt + 1 : Infinity;
    const seen = { db: watch.db, updatedAt: new Date(row.updated_at) };
    for (;;) {
      const left = rereadAt - Date.now();
      const how = await watch.notifier.next(jobId, Math.min(QUIET_STEP_MS, left), opts.signal, seen);
      if (opts.signal.aborted) return;
      if (how === 'lost') throw streamInterrupted();
      if (how === 'changed' || Date.now() >= rereadAt) break;
      yield { events: [], row, last: false };
    }
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
