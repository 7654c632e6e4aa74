// The log's sequencer, for what is published often (stage records, receipts' digests): a publisher
// queues its entry in its own transaction (translog_queue, one row per leaf key), and one process at a
// time integrates the queue in batches under the log's lock, one checkpoint per batch. A batch's leaves,
// checkpoint and the removal of its queue rows commit together, and a key already in the log is
// dropped from the queue instead of appended again: a crash anywhere loses nothing and logs nothing
// twice, and running it again is always safe.
import type { Knex } from 'knex';
import { env } from '../env';
import { roundLog } from '../log';
import { checkpointAt } from './pg-checkpoints';
import { lockLog, logRoot, logSize, loggedKeys } from './pg-log';
import type { NewLeaf } from './pg-log';
import { appendEntries, signCheckpoint } from './service-log';

type Conn = Knex | Knex.Transaction;

/** Queues entries for the log in the caller's transaction; a key already queued is left as it is. */
export async function enqueueEntries(conn: Conn, leaves: readonly NewLeaf[]): Promise<void> {
  if (leaves.length === 0) return;
  await conn('translog_queue')
    .insert(leaves.map((l) => ({ key: l.key, entry: Buffer.from(l.entry) })))
    .onConflict('key')
    .ignore();
}

export const SEQUENCE_BATCH = 1000;

export interface Integrated {
  /** Leaves appended by this batch. */
  appended: number;
  /** Queue rows dropped because their key was already in the log. */
  dropped: number;
  treeSize: number;
}

/**
 * Integrates up to `max` queued entries, oldest first, under the log's lock: appends them, signs one
 * checkpoint, removes their queue rows, all in one transaction.
 */
export async function integrateQueued(db: Knex, max = SEQUENCE_BATCH): Promise<Integrated> {
  // Nothing queued, nothing locked: a quiet log costs one index probe per round.
  if (!(await db('translog_queue').first('seq'))) return { appended: 0, dropped: 0, treeSize: -1 };
  return db.transaction(async (trx) => {
    await lockLog(trx);
    const rows = (await trx('translog_queue')
      .select('seq', 'key', 'entry')
      .orderBy('seq')
      .limit(max)) as Array<{ seq: string; key: string; entry: Buffer }>;
    const logged = await loggedKeys(
      trx,
      rows.map((r) => r.key),
    );
    const fresh = rows.filter((r) => !logged.has(r.key));
    const treeSize = fresh.length ? (await appendEntries(trx, fresh)).treeSize : await logSize(trx);
    await trx('translog_queue')
      .whereIn(
        'seq',
        rows.map((r) => r.seq),
      )
      .delete();
    return { appended: fresh.length, dropped: rows.length - fresh.length, treeSize };
  });
}

/**
 * Signs a checkpoint for the log's current size when it has none (an empty log, or one that grew
 * before checkpoints existed): tiles and bundles are served only for checkpointed sizes. Returns the
 * size.
 */
export async function checkpointCurrent(db: Knex): Promise<number> {
  return db.transaction(async (trx) => {
    await lockLog(trx);
    const size = await logSize(trx);
    if (!(await checkpointAt(trx, size))) await signCheckpoint(trx, size, await logRoot(trx, size));
    return size;
  });
}

/** Integrates until the queue is empty (each batch its own transaction). */
export async function integrateAll(db: Knex, max = SEQUENCE_BATCH): Promise<number> {
  let total = 0;
  for (;;) {
    const r = await integrateQueued(db, max);
    total += r.appended;
    if (r.appended + r.dropped < max) return total;
  }
}

/** The worker's loop: integrates whatever is queued every `intervalMs`, until stopped. */
export function startLogSequencer(
  db: Knex,
  intervalMs = env.LOG_SEQUENCE_INTERVAL_MS,
): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = false;
  let first = true;
  const round = async () => {
    if (first) {
      await checkpointCurrent(db);
      first = false;
    }
    await integrateAll(db);
  };
  const rounds = roundLog('log sequencer round (the queue is kept)');
  const tick = async () => {
    running = round().then(
      () => rounds.succeeded(),
      (err: Error) => rounds.failed(err),
    );
    await running;
    if (!stopped) timer = setTimeout(tick, intervalMs);
  };
  timer = setTimeout(tick, 0);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
