// Proof kinds: each names its handler and its outbox; the `proofs` payload says which kind a job is.
// The prover's main lists the kinds it handles (workers/prover/main.ts).
import type { Job } from 'bullmq';
import type { Db } from '../../shared/platform/db/knex';
import type { Queues } from '../../shared/platform/queues';
import type { SweepTarget } from '../sweeper';

export interface ProofContext {
  db: Db;
  queues: Queues;
  job: Job;
  progress(percent: number, stage?: string): Promise<void>;
}

/** Builds or proves the row `proofId`; idempotent (skips work already recorded). */
export type ProofHandler = (proofId: string, ctx: ProofContext) => Promise<unknown>;

/** A proof kind: its name in the `proofs` payload, its handler, and the rows the sweeper keeps queued. */
export interface ProofKind {
  kind: string;
  handle: ProofHandler;
  sweep: SweepTarget<'proofs'>;
}
