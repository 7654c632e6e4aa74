// Groth16 verification of blind-policy proofs against the cached verification keys (native when built).
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { AppError } from '../platform/errors';
import { artifactPaths, circuitManifest } from './artifacts';
import { FIELD_PRIME } from '../platform/field';
import { verifyGroth16 } from './groth16';
import { getPolicy } from './policies';
import { circuitSetup } from './setup';
import type { PolicyDefinition } from './policies';

const fieldString = z.string().regex(/^(0|[1-9]\d{0,77})$/, 'a decimal field element');

export const groth16ProofSchema = z.object({
  pi_a: z.array(fieldString).length(3),
  pi_b: z.array(z.array(fieldString).length(2)).length(3),
  pi_c: z.array(fieldString).length(3),
  protocol: z.literal('groth16').optional(),
  curve: z.literal('bn128').optional(),
});
export type Groth16Proof = z.infer<typeof groth16ProofSchema>;

export const publicSignalsSchema = z.array(fieldString).min(1).max(64);

export type VerifyReason =
  | 'signal_count_mismatch'
  | 'policy_mismatch'
  | 'result_not_satisfied'
  | 'signal_out_of_field'
  | 'proof_invalid';

export interface VerifyResult {
  valid: boolean;
  reason?: VerifyReason;
}

const vkeys = new Map<string, Promise<unknown>>();

/** Loaded once per circuit and kept: verification then costs only the pairing check. */
export function loadVerificationKey(circuit: string): Promise<unknown> {
  let vkey = vkeys.get(circuit);
  if (!vkey) {
    vkey = readFile(artifactPaths(circuit).vkey, 'utf8').then((text) => JSON.parse(text) as unknown);
    vkey.catch(() => vkeys.delete(circuit));
    vkeys.set(circuit, vkey);
  }
  return vkey;
}

function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new AppError(400, 'invalid_proof_format', `The ${what} is not well formed.`, {
      errors: parsed.error.issues.map((i) => ({ path: [what, ...i.path].join('.'), message: i.message })),
    });
  }
  return parsed.data;
}

/** Index of a named public signal in the policy's circuit order. */
export function signalIndex(policy: PolicyDefinition, name: string): number {
  const index = circuitManifest(policy.circuit).publicSignals.indexOf(name);
  if (index < 0) throw new Error(`Circuit ${policy.circuit} has no public signal ${name}.`);
  return index;
}

/**
 * Checks a proof for the named policy. Structurally wrong input throws AppError 400
 * `invalid_proof_format`; a well-formed proof that does not hold gives `{ valid: false, reason }`.
 */
export async function verifyPolicyProof(
  policyId: string,
  proof: unknown,
  publicSignals: unknown,
): Promise<VerifyResult> {
  const policy = getPolicy(policyId);
  const parsedProof = parseOrThrow(groth16ProofSchema, proof, 'proof');
  const signals = parseOrThrow(publicSignalsSchema, publicSignals, 'publicSignals');
  const manifest = circuitManifest(policy.circuit);

  if (signals.length !== manifest.nPublic) return { valid: false, reason: 'signal_count_mismatch' };
  if (signals.some((s) => BigInt(s) >= FIELD_PRIME)) return { valid: false, reason: 'signal_out_of_field' };
  // The verification key alone already rejects a proof made for another circuit; the id check
  // names the failure and keeps holding should two policies ever share a circuit.
  if (signals[signalIndex(policy, 'policyId')] !== String(policy.fieldId)) {
    return { valid: false, reason: 'policy_mismatch' };
  }
  if (signals[signalIndex(policy, 'result')] !== '1') return { valid: false, reason: 'result_not_satisfied' };

  const vkey = await loadVerificationKey(policy.circuit);
  const ok = await verifyGroth16(vkey, signals, { ...parsedProof, protocol: 'groth16', curve: 'bn128' });
  return ok ? { valid: true } : { valid: false, reason: 'proof_invalid' };
}

/** A verdict as a verifier is told it, with whether the keys are ones a proof could be forged under. */
export type BlindPolicyVerdict =
  | { valid: false; reason: VerifyReason | undefined; insecureSetup: boolean }
  | { valid: true; context: string | undefined; insecureSetup: boolean };

/** Checks a proof for the named policy (throwing as verifyPolicyProof does); a valid one with its context. */
export async function verifyBlindPolicy(
  policyId: string,
  proof: unknown,
  publicSignals: unknown,
): Promise<BlindPolicyVerdict> {
  const result = await verifyPolicyProof(policyId, proof, publicSignals);
  const { insecure } = circuitSetup();
  if (!result.valid) return { valid: false, reason: result.reason, insecureSetup: insecure };
  // Valid means well formed: the signals are decimal strings in the policy's circuit order.
  const context = (publicSignals as string[])[signalIndex(getPolicy(policyId), 'context')];
  return { valid: true, context, insecureSetup: insecure };
}
