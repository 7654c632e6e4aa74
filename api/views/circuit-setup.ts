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
    keysChecked: z
      .object({
        checkedAt: z.string(),
        tool: z.literal('snarkjs zKey.verifyFromR1cs'),
        ptau: z.object({ file: z.string(), blake2b512: z.string() }),
        circuits: z.array(z.string()),
        ms: z.number(),
        by: z
          .string()
          .describe(
            '`this process`, or the process type (release, web, prover) whose check of these same files (by the hashes of each zkey and r1cs and of the powers of tau) this process took from the database',
          ),
      })
      .optional()
      .describe(
        'In production: when every circuit’s keys were checked against its r1cs and the powers of tau file itself (what snarkjs zkey verify checks), not the manifest’s word. Absent where nothing was checked (development, or ALLOW_INSECURE_CIRCUITS=true).',
      ),
  })
  .meta({
    id: 'CircuitSetup',
    description:
      'Where the circuit keys come from. ptau.provenance: the powers of tau’s blake2b-512 is a published ceremony file’s (circuits/ceremony/ptau-hashes.json), pinned by the operator (PTAU_PINNED_HASHES), or neither; insecure: neither (e.g. the development setup), so its maker could forge proofs; allowInsecureCircuits: production runs it anyway (ALLOW_INSECURE_CIRCUITS).',
  });
