// A provider's probe, as the status routes answer it: configured, reachable, latency and why, never
// its endpoint.
import { z } from 'zod';
import { probeReasons } from '../../shared/providers/probes';

export const probeSchema = z.object({
  configured: z.boolean(),
  reachable: z.boolean().nullable(),
  latencyMs: z.number().nullable(),
  reason: z
    .enum(probeReasons)
    .describe('Why it is (not) reachable; the answer never names an endpoint, host or port'),
  detail: z.string().optional(),
});
