// Blind policy proofs as workflow evidence: a proof is verified here, then its hash is remembered, so
// an event naming that hash counts as a verified blind policy proof (e.g. Underwriting's risk stage).
import type { Db } from '../db/knex';
import { verifyPolicyProof } from '../zk/verify';
import { policyProofHash, recordVerifiedPolicyProof } from './store';

export type PolicyEvidence = { valid: true; evidenceHash: string } | { valid: false; reason: string };

/** Verifies a Groth16 policy proof and, when it holds, returns the evidence hash to post with the event. */
export async function acceptPolicyProof(
  db: Db,
  input: { policyId: string; proof: unknown; publicSignals: unknown },
): Promise<PolicyEvidence> {
  const result = await verifyPolicyProof(input.policyId, input.proof, input.publicSignals);
  if (!result.valid) return { valid: false, reason: result.reason ?? 'proof_invalid' };
  return { valid: true, evidenceHash: await recordVerifiedPolicyProof(db, input) };
}

export { policyProofHash };
