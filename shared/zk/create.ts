// Creating a blind policy proof: inputs checked before anything is written, the row stored with its
// input sealed, and queued unless held.
import type { Db } from '../platform/db/knex';
import { AppError } from '../platform/errors';
import { newId } from '../platform/ids';
import { logger } from '../platform/log';
import type { Queues } from '../platform/queues';
import { getPolicy, preparePolicyInput } from './policies';
import { BLIND_POLICY_KIND, HOLD_TTL_MS } from './rows';
import type { ProofRow } from './rows';
import { sealInput } from './sealed-input';

export interface CreateProofRequest {
  policy: string;
  inputs: unknown;
  /** Keep the proof held until a paid `zk.blind_policy` exchange job releases it. */
  hold?: boolean;
  agentId?: string | null;
  /** The context the proof binds to (a workflow stage's); default 0, bound to nothing. */
  context?: bigint;
  /**
   * Commitments the proof must carry (a workflow stage's parameters): a mismatch is refused before
   * anything is written, rather than proved and refused at the stage.
   */
  expectCommitments?: Record<string, string>;
}

/**
 * Validates and checks the private inputs (400/422 before anything is written), stores the row with
 * the circuit input sealed, and enqueues it unless held. The salts are for the caller only.
 */
export async function createPolicyProof(
  db: Db,
  queues: Queues,
  req: CreateProofRequest,
): Promise<{ row: ProofRow; salts: Record<string, string> }> {
  const policy = getPolicy(req.policy);
  const prepared = await preparePolicyInput(policy.id, req.inputs, { context: req.context ?? 0n });
  const differing = Object.entries(req.expectCommitments ?? {})
    .filter(([name, value]) => prepared.commitments[name] !== value)
    .map(([name]) => name);
  if (differing.length > 0) {
    throw new AppError(
      422,
      'policy_parameters_mismatch',
      `The inputs commit to another ${differing.join(', ')} than the stage fixed: use the parameters and salts the workflow owner holds.`,
    );
  }
  const id = newId('prf');
  const hold = req.hold === true;
  const [row] = (await db('proofs')
    .insert({
      id,
      policy: policy.id,
      status: hold ? 'held' : 'queued',
      commitments: JSON.stringify(prepared.commitments),
      input_sealed: sealInput(id, prepared.circuitInput),
      agent_id: req.agentId ?? null,
      hold_expires_at: hold ? new Date(Date.now() + HOLD_TTL_MS) : null,
    })
    .returning('*')) as ProofRow[];
  if (!hold) await enqueueProof(queues, id);
  return { row: row!, salts: prepared.salts };
}

/** A Redis failure is logged, not thrown: the sweeper enqueues rows left queued. */
export async function enqueueProof(queues: Queues, proofId: string): Promise<boolean> {
  try {
    await queues.enqueue('proofs', { proofId, kind: BLIND_POLICY_KIND });
    return true;
  } catch (err) {
    logger.warn({ proofId, err: (err as Error).message }, 'proof enqueue failed; the sweeper will retry');
    return false;
  }
}
