// The `prover` process: consumes the `proofs` queue. Each proof kind (workflow packages, Groth16 policy
// proofs, …) registers its handler; heavy proving runs off the event loop inside its handler.
import { UnrecoverableError } from 'bullmq';
import type { Processor } from 'bullmq';
import { cpus } from 'node:os';
import { createDb } from '../../shared/db/knex';
import type { Db } from '../../shared/db/knex';
import { isUnavailableError } from '../../shared/errors';
import { logger } from '../../shared/log';
import { jobDuration, jobsProcessed } from '../../shared/metrics';
import { Queues, queueCatalog } from '../../shared/queues';
import { createRedis } from '../../shared/redis';
import { Shutdown } from '../../shared/shutdown';
import { startWorker } from '../pool';
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
      if (!isUnavailableError(err)) logger.warn({ proofId, kind, err: (err as Error).message }, 'proof attempt failed');
      throw err;
    }
  };
}

export async function startProverProcess(concurrency = Math.max(1, cpus().length)) {
  const shutdown = new Shutdown();
  const db = createDb();
  const workerRedis = createRedis('worker');
  const queueRedis = createRedis('api');
  const queues = new Queues(queueRedis);
  shutdown.register('stores', async () => {
    await queues.close();
    workerRedis.disconnect();
    queueRedis.disconnect();
    await db.destroy();
  });
  const worker = startWorker('proofs', proofsProcessor(db, queues), workerRedis, { concurrency });
  shutdown.register('worker', () => worker.close());
  logger.info({ kinds: proofKinds(), concurrency }, 'prover started');
  return { worker, shutdown };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { shutdown } = await startProverProcess();
  shutdown.installSignalHandlers();
}
