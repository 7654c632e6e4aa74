// Held proofs: released to the queue by the paid exchange job that buys them, which then waits for the
// prover; expired, input wiped, when no job came in time.
import { UnrecoverableError } from 'bullmq';
import type { Db } from '../platform/db/knex';
import type { Queues } from '../platform/queues';
import { enqueueProof } from './create';
import { failProof } from './proving';
import type { ProofRow } from './rows';
import { findProof, getProof } from './proofs';

/** Held proofs nobody paid for in time lose their input. */
export async function expireHeldProofs(db: Db): Promise<number> {
  return db('proofs')
    .where('status', 'held')
    .andWhere('hold_expires_at', '<', db.fn.now())
    .update({
      status: 'failed',
      error: JSON.stringify({ code: 'hold_expired', message: 'No exchange job released the proof in time.' }),
      input_sealed: null,
      progress_stage: 'failed',
      finished_at: db.fn.now(),
      updated_at: db.fn.now(),
    });
}

/**
 * Releases a held proof to the queue for the exchange job `jobId`. A retry of the same job finds its
 * proof again; anything else (unknown, expired, taken by another job) is a permanent failure.
 */
export async function releaseHeldProof(db: Db, queues: Queues, id: string, jobId: string): Promise<ProofRow> {
  const [released] = (await db('proofs')
    .where({ id, status: 'held' })
    .andWhere('hold_expires_at', '>', db.fn.now())
    .update({ status: 'queued', job_id: jobId, hold_expires_at: null, updated_at: db.fn.now() })
    .returning('*')) as ProofRow[];
  const row = released ?? (await findProof(db, id));
  if (!row) throw new UnrecoverableError(`There is no proof ${id}.`);
  if (row.job_id !== jobId) {
    if (row.status === 'held') {
      await failProof(db, id, 'hold_expired', 'No exchange job released the proof in time.');
      throw new UnrecoverableError(`Proof ${id} was held too long; prove again.`);
    }
    throw new UnrecoverableError(`Proof ${id} is not held for an exchange job.`);
  }
  if (row.status === 'queued') await enqueueProof(queues, id);
  return row;
}

/** Polls a row until it ends (the prover is another process; Postgres is the meeting point). */
export async function awaitProof(
  db: Db,
  id: string,
  opts: { timeoutMs: number; everyMs?: number; onProgress?: (row: ProofRow) => Promise<void> },
): Promise<ProofRow> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastProgress = -1;
  for (;;) {
    const row = await getProof(db, id);
    if (row.status === 'succeeded' || row.status === 'failed') return row;
    if (row.progress !== lastProgress) {
      lastProgress = row.progress;
      await opts.onProgress?.(row);
    }
    if (Date.now() > deadline) throw new Error(`Proof ${id} is still ${row.status}.`);
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 200));
  }
}
