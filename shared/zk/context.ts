// The context a blind policy proof is bound to: a public signal of every policy circuit, so a proof
// made for one workflow stage is useless at any other stage, in any other workflow, or unbound.
import { z } from 'zod';
import { sha256Hex } from '../platform/crypto';
import { FIELD_PRIME, poseidonHash } from '../platform/field';

/** A field element as it travels (a context, a commitment): decimal, below the BN254 scalar prime. */
export const fieldElementSchema = z
  .string()
  .regex(/^(0|[1-9]\d{0,77})$/, 'a decimal field element')
  // zod runs refinements after a failed regex too: only a decimal string may reach BigInt.
  .refine((v) => !/^\d+$/.test(v) || BigInt(v) < FIELD_PRIME, 'below the BN254 scalar field prime');

/** A workflow's public proof id as a field element: sha256 of its ASCII bytes, reduced mod p. */
export function proofIdField(proofId: string): bigint {
  return BigInt(`0x${sha256Hex(proofId)}`) % FIELD_PRIME;
}

/**
 * The context of a workflow stage: Poseidon(proofIdField(proofId), stageIndex), the stage index being
 * its position in the template (0 for the first stage). Anyone can compute it from public values.
 */
export async function stageContext(proofId: string, stageIndex: number): Promise<string> {
  if (!Number.isInteger(stageIndex) || stageIndex < 0) throw new RangeError('stage index must be ≥ 0');
  return String(await poseidonHash([proofIdField(proofId), BigInt(stageIndex)]));
}
