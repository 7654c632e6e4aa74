// The `prover` process: consumes the `proofs` queue. Each proof kind (workflow packages, Groth16 policy
// proofs, …) registers its handler; heavy proving runs off the event loop inside its handler.
import type { AddressInfo } from 'node:net';
import { UnrecoverableError } from 'bullmq';
import type { Processor } from 'bullmq';
import { cpus } from 'node:os';
import { createDb } from '../../shared/platform/db/knex';
import type { Db } from '../../shared/platform/db/knex';
import { isOutageOfOurs } from '../../shared/platform/errors';
import { closeJobEvents } from '../../shared/jobs/notify';
import { watchSigningKeys } from '../../shared/platform/key-history';
import { runProcess } from '../../shared/platform/lifecycle';
import { logger } from '../../shared/platform/log';
import {
  assertMetricsAllowed,
  jobDuration,
  jobsProcessed,
  listenMetrics,
  metricsAccess,
  proofDuration,
} from '../../shared/platform/metrics';
import { Queues, queueCatalog } from '../../shared/platform/queues';
import { createRedis } from '../../shared/platform/redis';
import { Shutdown } from '../../shared/platform/shutdown';
import { moduleFile } from '../../shared/platform/paths';
import { startTracing, stopTracing } from '../../shared/platform/tracing';
import { startWorker } from '../pool';
import { env } from '../../shared/platform/env';
import { chainSettingIssues } from '../../shared/chains/settings';
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
import { groth16Backend } from '../../shared/zk/groth16';
import { expireHeldProofs } from '../../shared/zk/holds';
import { assertDatabaseStart, refuseStartup } from '../../shared/platform/startup-checks';
import { databaseChecks } from '../startup';
import type { ProofKind } from './kinds';
import { workflowPackageKind } from './workflows';
import { blindPolicyKind, useProverBackend } from './zk';

/** The proof kinds this process handles: each product line's kind, listed here. */
const kinds: ReadonlyMap<string, ProofKind> = new Map(
  [blindPolicyKind, workflowPackageKind].map((k) => [k.kind, k]),
);

export function proofsProcessor(db: Db, queues: Queues): Processor {
  return async (job) => {
    const parsed = queueCatalog.proofs.payload.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError('malformed proofs payload');
    const { proofId, kind } = parsed.data;
    const handler = kinds.get(kind)?.handle;
    if (!handler) throw new UnrecoverableError(`no handler for proof kind ${kind}`);
    const end = jobDuration.startTimer({ queue: 'proofs' });
    const endProof = proofDuration.startTimer({ kind });
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
      endProof({ outcome: 'done' });
      jobsProcessed.inc({ queue: 'proofs', outcome: 'done' });
      return out;
    } catch (err) {
      end({ outcome: 'error' });
      endProof({ outcome: 'error' });
      jobsProcessed.inc({ queue: 'proofs', outcome: 'error' });
      if (!isOutageOfOurs(err))
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
  const specifier = moduleFile('native-prover/index.ts').href;
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
  if (env.PROVER_METRICS_PORT !== undefined) assertMetricsAllowed(metricsAccess(env));
  const shutdown = new Shutdown();
  // Before any store is opened, so its queues and pool are traced; closed last, flushing the spans.
  const tracing = startTracing('prover');
  const db = createDb();
  // Checked before any key is loaded: a refused setup ends the process at once. In production the
  // keys were checked against the ceremony by the release (recorded in the database) or are checked here.
  const setup = await assertCircuitSetup({ db, process: 'prover' }).catch(async (err: unknown) => {
    await db.destroy();
    if (tracing) await stopTracing();
    throw err;
  });
  if (tracing) shutdown.register('tracing', stopTracing);
  // Its keys go into the key history before anything is loaded; a retired or revoked one stops it here.
  const keys = await assertDatabaseStart(db, databaseChecks)
    .then(() => watchSigningKeys(db))
    .catch(async (err: unknown) => {
      await db.destroy();
      throw err;
    });
  const backend = await prepareProving();
  // snarkjs keeps curve worker threads alive; registered first so it runs after the worker stopped.
  shutdown.register('curves', () => terminateCurves());
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
  shutdown.register('signing keys', () => keys.stop());
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
  if (env.PROVER_METRICS_PORT !== undefined) {
    const server = await listenMetrics({
      port: env.PROVER_METRICS_PORT,
      host: env.PROVER_METRICS_HOST,
      access: metricsAccess(env),
      variable: 'PROVER_METRICS_PORT',
    }).catch(async (err: unknown) => {
      await shutdown.run('start failed');
      throw err;
    });
    shutdown.register('metrics', () => new Promise((r) => server.close(r)));
    // The port it listens on (the one chosen when PROVER_METRICS_PORT is 0).
    logger.info({ port: (server.address() as AddressInfo).port }, 'metrics listening');
  }
  await worker.waitUntilReady();
  logger.info(
    {
      kinds: [...kinds.keys()],
      concurrency,
      backend: backend.name,
      verifier: await groth16Backend(),
      insecureSetup: setup.insecure,
    },
    'prover started',
  );
  return { worker, shutdown };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  refuseStartup(env, 'prover', chainSettingIssues(env));
  await runProcess('prover', () => startProverProcess());
}
