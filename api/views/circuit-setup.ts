// Where the circuit keys come from, as the proof workflow and blind policy status routes report it.
import { z } from 'zod';

export const circuitSetupSchema = z
  .object({
    insecure: z.boolean(),
    allowInsecureCircuits: z.boolean(),
    ptau: z.object({ file: z.string(), power: z.number().int() }),
  })
  .meta({
    id: 'CircuitSetup',
    description:
      'Where the circuit keys come from. insecure: the development setup, whose maker could forge proofs; allowInsecureCircuits: production runs it anyway (ALLOW_INSECURE_CIRCUITS).',
  });
