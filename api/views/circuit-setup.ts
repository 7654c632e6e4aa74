// Where the circuit keys come from, as the proof workflow and blind policy status routes report it.
import { z } from 'zod';

export const circuitSetupSchema = z
  .object({
    insecure: z.boolean(),
    allowInsecureCircuits: z.boolean(),
    ptau: z.object({
      file: z.string(),
      power: z.number().int(),
      blake2b512: z.string(),
      provenance: z.enum(['published', 'pinned', 'unaccepted']),
    }),
  })
  .meta({
    id: 'CircuitSetup',
    description:
      'Where the circuit keys come from. ptau.provenance: the powers of tau’s blake2b-512 is a published ceremony file’s (circuits/ceremony/ptau-hashes.json), pinned by the operator (PTAU_PINNED_HASHES), or neither; insecure: neither (e.g. the development setup), so its maker could forge proofs; allowInsecureCircuits: production runs it anyway (ALLOW_INSECURE_CIRCUITS).',
  });
