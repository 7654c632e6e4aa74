// The public view of a blind policy proof (never the sealed input); ./proofs.ts reads the rows.
import type { PolicyId } from './policies';
import type { ProofRow, ProofStatus } from './rows';
import type { Groth16Proof } from './verify';

export interface ProofTimings {
  witnessMs: number | null;
  provingMs: number | null;
  totalMs: number | null;
  queueMs: number | null;
}

export interface ProofView {
  id: string;
  policy: PolicyId;
  status: ProofStatus;
  progress: number;
  stage: string | null;
  commitments: Record<string, string>;
  publicSignals: string[] | null;
  proof: Groth16Proof | null;
  backend: string | null;
  timings: ProofTimings;
  attempts: number;
  error: { code: string; message: string } | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  holdExpiresAt: string | null;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

/** The public face of a row: never the sealed input. */
export function proofView(row: ProofRow): ProofView {
  return {
    id: row.id,
    policy: row.policy,
    status: row.status,
    progress: row.progress,
    stage: row.progress_stage,
    commitments: row.commitments,
    publicSignals: row.public_signals,
    proof: row.proof,
    backend: row.backend,
    timings: {
      witnessMs: row.witness_ms,
      provingMs: row.proving_ms,
      totalMs: row.total_ms,
      queueMs: row.queue_ms,
    },
    attempts: row.attempts,
    error: row.error,
    createdAt: iso(row.created_at)!,
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    holdExpiresAt: iso(row.hold_expires_at),
  };
}
