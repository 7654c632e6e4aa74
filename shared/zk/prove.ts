// Proving a blind policy on request: a proof of a caller's private inputs, bound to a context or to a
// workflow stage, held for a paid exchange job or queued for the prover now.
import type { Db } from '../platform/db/knex';
import { AppError } from '../platform/errors';
import type { Queues } from '../platform/queues';
import { createPolicyProof } from './create';
import { expireHeldProofs } from './holds';
import type { ProofRow } from './rows';

/** What a proof for a workflow stage must carry: the stage's policy, its context and fixed parameters. */
export interface ProofBinding {
  stage: string;
  policy: string;
  /** The stage's context, a decimal field element. */
  context: string;
  /** The commitments to the parameters the workflow fixed. */
  commitments: Record<string, string>;
}

/** A place among the caller's proofs in flight: given the proof's id once made, or given back. */
export interface ProverSlot {
  commit(proofId: string): Promise<void>;
  release(): Promise<void>;
}

export interface ProveRequest {
  policy: string;
  /** The private inputs: used for the witness only, never stored in clear or logged. */
  inputs: unknown;
  /** Keep the proof held until a paid `zk.blind_policy` exchange job releases it. */
  hold: boolean;
  agentId: string | null;
  /** The public context to bind to, a decimal field element; default 0 (bound to nothing). */
  context?: string | undefined;
  /** The workflow stage to make the proof for (instead of a context). */
  workflow?: { proofId: string; stage: string } | undefined;
}

/**
 * What proving needs from above this line: a workflow stage's binding (workflows know their stages;
 * shared/workflows stageBinding answers it), and a place among the caller's proofs in flight (the
 * API's cap; a refusal is thrown from here).
 */
export interface ProvePorts {
  stageBinding(proofId: string, stage: string): Promise<ProofBinding>;
  slot(): Promise<ProverSlot>;
}

/**
 * Makes the proof: finds the stage it is for (a stage of another policy is 422
 * `policy_proof_wrong_policy`), checks the inputs (400/422 before anything is written), and stores it
 * held or queued. The salts are the caller's only copy.
 */
export async function proveBlindPolicy(
  db: Db,
  queues: Queues,
  req: ProveRequest,
  ports: ProvePorts,
): Promise<{ row: ProofRow; salts: Record<string, string> }> {
  const binding = req.workflow
    ? await ports.stageBinding(req.workflow.proofId, req.workflow.stage)
    : undefined;
  if (binding && binding.policy !== req.policy) {
    throw new AppError(
      422,
      'policy_proof_wrong_policy',
      `Stage '${binding.stage}' needs a ${binding.policy} proof, not ${req.policy}.`,
    );
  }
  if (req.hold) await expireHeldProofs(db);
  // A held proof waits for a paid job and burns no prover time: only proofs to run now take a slot.
  const slot = req.hold ? undefined : await ports.slot();
  let created;
  try {
    created = await createPolicyProof(db, queues, {
      policy: req.policy,
      inputs: req.inputs,
      hold: req.hold,
      agentId: req.agentId,
      context: BigInt(binding?.context ?? req.context ?? '0'),
      ...(binding ? { expectCommitments: binding.commitments } : {}),
    });
  } catch (err) {
    await slot?.release();
    throw err;
  }
  await slot?.commit(created.row.id);
  return created;
}
