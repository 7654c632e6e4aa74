// Proof kinds the prover process handles: each kind names its handler; the `proofs` payload says which.
import type { Job } from 'bullmq';
import type { Db } from '../../shared/db/knex';
import type { Queues } from '../../shared/queues';

export interface ProofContext {
  db: Db;
  queues: Queues;
  job: Job;
  progress(percent: number, stage?: string): Promise<void>;
}

/** Builds or proves the row `proofId`; idempotent (skips work already recorded). */
export type ProofHandler = (proofId: string, ctx: ProofContext) => Promise<unknown>;

const handlers = new Map<string, ProofHandler>();

export function registerProofKind(kind: string, handler: ProofHandler): void {
  handlers.set(kind, handler);
}

export function proofHandler(kind: string): ProofHandler | undefined {
  return handlers.get(kind);
}

export function proofKinds(): string[] {
  return [...handlers.keys()];
}
