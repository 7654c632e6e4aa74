// The blind-policy core: prepare inputs, prove with a backend, verify, describe, shut down.
import { loadManifest } from './artifacts';
import { expectedPublicSignals } from './backends';
import type { ProveOutput, ProveProgress, ProverBackend } from './backends';
import { getPolicy, policies, preparePolicyInput } from './policies';
import { insecureSetup } from './setup';
import type { PolicyId } from './policies';

export { artifactPaths, artifactsDir, loadManifest } from './artifacts';
export type { CircuitManifest, Manifest } from './artifacts';
export {
  expectedPublicSignals,
  nativeBackend,
  rapidsnarkBackend,
  selectProverBackend,
  snarkjsBackend,
  warmCircuit,
} from './backends';
export type {
  NativeCircuitProver,
  NativeProverLike,
  ProveOutput,
  ProveProgress,
  ProveStage,
  ProveTimings,
  ProverBackend,
  ProverBackendKind,
} from './backends';
export { fieldElementSchema, proofIdField, stageContext } from './context';
export { FIELD_PRIME, MAX_SET_SIZE, MAX_VALUE, MEMBERSHIP_DEPTH, VALUE_BITS } from '../platform/field';
export {
  commitSet,
  commitValue,
  getPolicy,
  isPolicyId,
  parsePolicyInputs,
  policies,
  policyIds,
  preparePolicyInput,
} from './policies';
export type { CircuitInput, PolicyDefinition, PolicyId, PreparedInput } from './policies';
export { groth16ProofSchema, loadVerificationKey, publicSignalsSchema, verifyPolicyProof } from './verify';
export type { Groth16Proof, VerifyReason, VerifyResult } from './verify';

export interface PolicyProof extends ProveOutput {
  policyId: PolicyId;
  backend: string;
  /** Public commitments by name, the same values as in publicSignals. */
  commitments: Record<string, string>;
  /** Salts used; secret to the caller, who needs them to open a commitment later. Never log them. */
  salts: Record<string, string>;
}

/**
 * Validates and checks the private inputs (400/422 before any proving), then proves. The result
 * carries the salts: hand them to the caller only.
 */
export async function provePolicy(
  backend: ProverBackend,
  policyId: string,
  rawInputs: unknown,
  onProgress?: ProveProgress,
  options: { context?: bigint } = {},
): Promise<PolicyProof> {
  const policy = getPolicy(policyId);
  const prepared = await preparePolicyInput(policy.id, rawInputs, options);
  const output = await backend.prove(policy.id, prepared.circuitInput, onProgress);
  if (output.publicSignals.join() !== expectedPublicSignals(policy.id, prepared.circuitInput).join()) {
    throw new Error(`The ${backend.name} prover returned public signals that do not match the input.`);
  }
  return {
    policyId: policy.id,
    backend: backend.name,
    ...output,
    commitments: prepared.commitments,
    salts: prepared.salts,
  };
}

export interface PolicyDescription {
  id: PolicyId;
  name: string;
  description: string;
  circuit: string;
  label: string;
  /** The public policy-id signal's value. */
  policyFieldId: string;
  constraints: number;
  publicSignals: string[];
  /** True while the keys come from the project's development powers of tau: proofs are forgeable. */
  insecureSetup: boolean;
  /** The public signals that commit to the policy's parameters, which a relying party fixes. */
  parameterCommitments: string[];
}

/** For the status route: what each policy proves and its circuit's shape, from the build manifest. */
export function describePolicies(): PolicyDescription[] {
  const manifest = loadManifest();
  return Object.values(policies).map((policy) => {
    const entry = manifest.circuits[policy.circuit];
    return {
      id: policy.id,
      name: policy.name,
      description: policy.description,
      circuit: policy.circuit,
      label: policy.label,
      policyFieldId: String(policy.fieldId),
      constraints: entry?.constraints ?? 0,
      publicSignals: entry?.publicSignals ?? [...policy.publicSignals],
      insecureSetup: insecureSetup(),
      parameterCommitments: [...policy.parameters.commitmentSignals],
    };
  });
}

type CurveHolder = { terminate(): Promise<void> } | null | undefined;

/**
 * snarkjs keeps its curve's worker threads alive after a proof or verification; the process does
 * not exit until they are terminated. Safe to call more than once; the next use rebuilds the curve.
 */
export async function terminateCurves(): Promise<void> {
  const holder = globalThis as { curve_bn128?: CurveHolder; curve_bls12381?: CurveHolder };
  await Promise.allSettled([holder.curve_bn128?.terminate(), holder.curve_bls12381?.terminate()]);
}
