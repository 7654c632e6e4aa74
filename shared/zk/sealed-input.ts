// The sealing of a proof's private circuit input, which travels from the web process to the prover:
// AES-256-GCM, the row id as associated data, so a sealed input opens only for its row.
import { env } from '../platform/env';
import { derivedKeyPurposes, open, purposeKey, seal } from '../platform/sealing';
import type { CircuitInput } from './policies';

const inputKey = (): Buffer =>
  purposeKey(derivedKeyPurposes.PROOF_INPUT_KEY, { name: 'PROOF_INPUT_KEY', value: env.PROOF_INPUT_KEY });

export function sealInput(proofId: string, circuitInput: CircuitInput): Buffer {
  return seal(inputKey(), proofId, JSON.stringify(circuitInput));
}

export function openInput(proofId: string, sealed: Buffer): CircuitInput {
  return JSON.parse(open(inputKey(), proofId, sealed).toString('utf8')) as CircuitInput;
}
