// zk.blind_policy: a blind policy proof bought on the agent exchange. The job names a proof held by
// POST /api/proof-workflows/blind-policy/prove (hold: true), so no private input ever sits in a job's input.
import { UnrecoverableError } from 'bullmq';
import { z } from 'zod';
import { createDb } from '../../platform/db/knex';
import type { Db } from '../../platform/db/knex';
import { idPattern } from '../../platform/ids';
import { Queues } from '../../platform/queues';
import { createRedis } from '../../platform/redis';
import type { RedisClient } from '../../platform/redis';
import { awaitProof, releaseHeldProof } from '../../zk/holds';
import { proofView } from '../../zk/views';

export const blindPolicyInput = z.strictObject({
  proofId: z
    .string()
    .regex(idPattern('prf'), 'a proof id (prf_…)')
    .describe('A proof held by POST /api/proof-workflows/blind-policy/prove with hold: true'),
});
export type BlindPolicyInput = z.output<typeof blindPolicyInput>;

/** How long one attempt waits for the prover; a retry of the job waits for the same proof again. */
const WAIT_MS = 5 * 60 * 1000;

interface Stores {
  db: Db;
  redis: RedisClient;
  queues: Queues;
}
let stores: Stores | undefined;

/** The job runner hands a service no stores, so this one keeps a small pool of its own, made on first use. */
function serviceStores(): Stores {
  if (!stores) {
    const redis = createRedis('worker');
    stores = { db: createDb(undefined, { poolMax: 2 }), redis, queues: new Queues(redis) };
  }
  return stores;
}

export async function closeBlindPolicyStores(): Promise<void> {
  const s = stores;
  stores = undefined;
  if (!s) return;
  await s.queues.close();
  s.redis.disconnect();
  await s.db.destroy();
}

interface Progress {
  jobId: string;
  progress(percent: number, stage?: string): Promise<void>;
}

export async function runBlindPolicyJob(input: BlindPolicyInput, ctx: Progress) {
  const { db, queues } = serviceStores();
  const held = await releaseHeldProof(db, queues, input.proofId, ctx.jobId);
  await ctx.progress(5, 'queued');
  const row = await awaitProof(db, held.id, {
    timeoutMs: WAIT_MS,
    onProgress: (r) => ctx.progress(5 + Math.round(r.progress * 0.9), r.progress_stage ?? 'proving'),
  });
  if (row.status === 'failed') {
    throw new UnrecoverableError(`The proof failed: ${row.error?.message ?? 'unknown error'}`);
  }
  const view = proofView(row);
  return {
    proofId: view.id,
    policy: view.policy,
    commitments: view.commitments,
    publicSignals: view.publicSignals,
    proof: view.proof,
    backend: view.backend,
    timings: view.timings,
    verify: 'POST /api/proof-workflows/blind-policy/verify with { policy, proof, publicSignals }',
  };
}

export const blindPolicyService = {
  id: 'zk.blind_policy',
  name: 'Blind policy proof',
  description:
    'A Groth16 proof that private values satisfy a policy (threshold, range or set membership), with Poseidon commitments as the only public trace. Hold the proof first with POST /api/proof-workflows/blind-policy/prove ({ policy, inputs, hold: true }); this job proves it and returns the proof and public signals.',
  priceUsdCents: 200,
  expectedDurationMs: 3000,
  input: blindPolicyInput,
  // A proof id as held by the prove route; a job for an id that is not held fails when it runs.
  examples: [{ proofId: 'prf_01jd3x0v9m7k2q8w4e6r5t1y3z' }],
  run: runBlindPolicyJob,
};
