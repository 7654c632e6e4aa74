// The state of blind policy proving as the status route shows it: the setup, the policies, the prover
// (configured and last used backend, queue depth), what verifies proofs here and recent proving times.
import { env } from '../platform/env';
import type { Db } from '../platform/db/knex';
import type { Queues } from '../platform/queues';
import { describePolicies } from './index';
import { circuitSetup } from './setup';
import { groth16Backend } from './groth16';
import { lastProofBackend, provingStats } from './proofs';

/** The proofs queue's depth; null while Redis does not answer (the rest of the status still does). */
async function proofQueueDepth(queues: Queues) {
  return queues
    .get('proofs')
    .getJobCounts('waiting', 'active', 'delayed', 'prioritized')
    .then(
      (c) => ({
        waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
        active: c.active ?? 0,
        delayed: c.delayed ?? 0,
      }),
      () => null,
    );
}

export async function blindPolicyStatus(db: Db, queues: Queues) {
  const [provingTimes, queue, lastBackend, verifier] = await Promise.all([
    provingStats(db),
    proofQueueDepth(queues),
    lastProofBackend(db),
    groth16Backend(),
  ]);
  return {
    setup: circuitSetup(),
    policies: describePolicies(),
    prover: { configuredBackend: env.PROVER_BACKEND, lastBackend, queue },
    verifier,
    provingTimes,
  };
}
