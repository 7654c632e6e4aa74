// The `prover` process: consumes the `proofs` queue. Each proof kind (workflow packages, Groth16 policy
// proofs, …) registers its handler; heavy proving runs off the event loop inside its handler.
import { UnrecoverableError } from 'bullmq';
import type { Processor } from 'bullmq';
import { cpus } from 'node:os';
import { createDb } from '../../shared/db/knex';
import type { Db } from '../../shared/db/knex';
import { isUnavailableError } from '../../shared/errors';
import { closeJobEvents } from '../../shared/jobs/notify';
import { runProcess } from '../../shared/lifecycle';
import { logger } from '../../shared/log';
import { jobDuration, jobsProcessed } from '../../shared/metrics';
import { Queues, queueCatalog } from '../../shared/queues';
import { createRedis } from '../../shared/redis';
import { Shutdown } from '../../shared/shutdown';
import { startWorker } from '../pool';
import { env } from '../../shared/env';
import {
  loadVerificationKey,
  nativeBackend,
  policies,
  policyIds,
  selectProverBackend,
  snarkjsBackend,
  terminateCurves,
  warmCircuit,
} from '../../shared/zk/index';
import type { NativeProverLike, ProverBackend } from '../../shared/zk/index';
import { assertCircuitSetup } from '../../shared/zk/setup';
import { expireHeldProofs } from '../../shared/zk/store';
import { useProverBackend } from './blind-policy';
import { proofHandler, proofKinds } from './kinds';
import './register';

export function proofsProcessor(db: Db, queues: Queues): Processor {
  return async (job) => {
    const parsed = queueCatalog.proofs.payload.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError('malformed proofs payload');
    const { proofId, kind } = parsed.data;
    const handler = proofHandler(kind);
    if (!handler) throw new UnrecoverableError(`no handler for proof kind ${kind}`);
    const end = jobDuration.startTimer({ queue: 'proofs' });
    try {
      const out = await handler(proofId, {
        db,
        queues,
        job,
        progress: async (percent) => {
          await job.updateProgress(percent);
        },
      });
      end({ outcome: 'done' });
      jobsProcessed.inc({ queue: 'proofs', outcome: 'done' });
      return out;
    } catch (err) {
      end({ outcome: 'error' });
      jobsProcessed.inc({ queue: 'proofs', outcome: 'error' });
      if (!isUnavailableError(err))
        logger.warn({ proofId, kind, err: (err as Error).message }, 'proof attempt failed');
      throw err;
    }
  };
}

/**
 * The project's native prover when its addon is built. The module may be absent from a checkout or
 * fail to load on a machine without the build; either way the process proves with another backend.
 */
async function loadNative(): Promise<NativeProverLike | null> {
  const specifier = new URL('../native-prover/index.ts', import.meta.url).href;
  try {
    const mod = (await import(specifier)) as { loadNativeProver?: () => NativeProverLike | null };
    return mod.loadNativeProver?.() ?? null;
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'native prover not loaded');
    return null;
  }
}

/** Picks the backend and loads every circuit's artifacts and verification key before the first job. */
export async function prepareProving(): Promise<ProverBackend> {
  const native =
    env.PROVER_BACKEND === 'snarkjs' || env.PROVER_BACKEND === 'rapidsnark' ? null : await loadNative();
  const backend = selectProverBackend({
    native: native ? nativeBackend(native, { fallback: snarkjsBackend() }) : undefined,
  });
  useProverBackend(backend);
  await Promise.all(policyIds.flatMap((id) => [warmCircuit(id), loadVerificationKey(policies[id].circuit)]));
  // Native keys (and their precomputed tables, built in the background) are loaded before the first job.
  await Promise.all(policyIds.map((id) => backend.warm?.(id)));
  return backend;
}

export async function startProverProcess(concurrency = env.PROVER_CONCURRENCY ?? Math.max(1, cpus().length)) {
  // Checked before any key is loaded or connection opened: a refused setup ends the process at once.
  const setup = await assertCircuitSetup();
  const shutdown = new Shutdown();
  const backend = await prepareProving();
  // snarkjs keeps curve worker threads alive; registered first so it runs after the worker stopped.
  shutdown.register('curves', () => terminateCurves());
  const db = createDb();
  const workerRedis = createRedis('worker');
  const queueRedis = createRedis('api');
  const queues = new Queues(queueRedis);
  shutdown.register('stores', async () => {
    await queues.close();
    workerRedis.disconnect();
    queueRedis.disconnect();
    await closeJobEvents();
    await db.destroy();
  });
  const worker = startWorker('proofs', proofsProcessor(db, queues), workerRedis, { concurrency });
  shutdown.register('worker', () => worker.close());
  // Held proofs nobody paid for lose their sealed input; cheap, idempotent, any prover may run it.
  const expiry = setInterval(
    () =>
      void expireHeldProofs(db).catch((err: Error) =>
        logger.warn({ err: err.message }, 'hold expiry failed'),
      ),
    60_000,
  );
  expiry.unref();
  shutdown.register('hold-expiry', () => clearInterval(expiry));
  if (setup.insecure) {
    logger.warn(
      { ptau: setup.ptau.file, allowInsecureCircuits: setup.allowInsecureCircuits },
      'circuit keys come from the insecure development setup: policy proofs are forgeable',
    );
  }
  await worker.waitUntilReady();
  logger.info(
    { kinds: proofKinds(), concurrency, backend: backend.name, insecureSetup: setup.insecure },
    'prover started',
  );
  return { worker, shutdown };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runProcess('prover', () => startProverProcess());
}
