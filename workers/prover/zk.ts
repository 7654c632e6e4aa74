// The `blind_policy` proof kind: proves a stored Groth16 policy proof row with the process's backend;
// the sweeper re-enqueues rows left queued or running without a live job.
import { UnrecoverableError } from 'bullmq';
import { jobChanged } from '../../shared/jobs/notify';
import { isOutageOfOurs } from '../../shared/platform/errors';
import type { ProverBackend } from '../../shared/zk/index';
import { selectProverBackend } from '../../shared/zk/index';
import { BLIND_POLICY_KIND } from '../../shared/zk/rows';
import { ProofRefused, failProof, proveStoredProof, requeueProof } from '../../shared/zk/proving';
import { isFinalAttempt } from '../attempts';
import type { ProofKind } from './kinds';

let backend: ProverBackend | undefined;

/** The prover process picks its backend at start (native when built); otherwise the configured default. */
export function useProverBackend(selected: ProverBackend): void {
  backend = selected;
}

export function proverBackend(): ProverBackend {
  backend ??= selectProverBackend();
  return backend;
}

export const blindPolicyKind: ProofKind = {
  kind: BLIND_POLICY_KIND,
  handle: async (proofId, ctx) => {
    try {
      const { outcome } = await proveStoredProof(ctx.db, proofId, proverBackend(), (percent, stage) =>
        ctx.progress(percent, stage),
      );
      // Long polls on the proof wake now (a hint names the row by its id, as a job's does).
      if (outcome === 'succeeded') jobChanged(proofId);
      return outcome;
    } catch (err) {
      // Postgres or Redis down: leave the row as it is; the pool holds the job back without an attempt.
      if (isOutageOfOurs(err)) throw err;
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof ProofRefused) {
        if (await failProof(ctx.db, proofId, err.code, message)) jobChanged(proofId);
        throw new UnrecoverableError(message);
      }
      if (isFinalAttempt(ctx.job, err)) {
        if (await failProof(ctx.db, proofId, 'proof_failed', message)) jobChanged(proofId);
        throw new UnrecoverableError(message);
      }
      await requeueProof(ctx.db, proofId, message);
      throw err;
    }
  },
  sweep: {
    queue: 'proofs',
    table: 'proofs',
    statuses: ['queued', 'running'],
    payload: (row) => ({ proofId: row.id, kind: BLIND_POLICY_KIND }),
    markFailed: async (db, id, reason) => {
      const row = await failProof(db, id, 'proof_failed', reason);
      if (row) jobChanged(id);
      return row;
    },
  },
};
