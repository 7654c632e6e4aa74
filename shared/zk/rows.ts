// The blind policy proof row: its states, how long a held one keeps its input, and its queue kind.
import type { PolicyId } from './policies';
import type { Groth16Proof } from './verify';

export const BLIND_POLICY_KIND = 'blind_policy';
export const proofStatuses = ['held', 'queued', 'running', 'succeeded', 'failed'] as const;
export type ProofStatus = (typeof proofStatuses)[number];
/** How long a held proof (awaiting a paid exchange job) keeps its sealed input. */
export const HOLD_TTL_MS = 2 * 3600 * 1000;

export interface ProofRow {
  id: string;
  policy: PolicyId;
  status: ProofStatus;
  commitments: Record<string, string>;
  public_signals: string[] | null;
  proof: Groth16Proof | null;
  backend: string | null;
  witness_ms: number | null;
  proving_ms: number | null;
  total_ms: number | null;
  queue_ms: number | null;
  progress: number;
  progress_stage: string | null;
  attempts: number;
  error: { code: string; message: string } | null;
  agent_id: string | null;
  job_id: string | null;
  input_sealed: Buffer | null;
  hold_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}
