// The `worker` process: consumes jobs (and, as product lines land, payments and checkouts), runs the sweeper.
import type { Processor, Worker } from 'bullmq';
import { createDb } from '../shared/db/knex';
import type { Db } from '../shared/db/knex';
import { explainListenError } from '../shared/devstack/failures';
import { closeEgress } from '../shared/egress';
import { env } from '../shared/env';
import { closeJobEvents } from '../shared/jobs/notify';
import { runProcess } from '../shared/lifecycle';
import { logger } from '../shared/log';
import { startMetricsServer } from '../shared/metrics';
import { startWebhookRelay } from '../shared/payments/webhooks';
import { Queues } from '../shared/queues';
import type { QueueName } from '../shared/queues';
import { createRedis } from '../shared/redis';
import { Shutdown } from '../shared/shutdown';
import { startChainFollower } from './chain-follower';
import { startWorker } from './pool';
import { checkoutsProcessor } from './processors/checkouts';
import { deliveriesProcessor } from './processors/deliveries';
import { jobsProcessor } from './processors/jobs';
import { paymentsProcessor } from './processors/payments';
import { Sweeper } from './sweeper';
import './prover/blind-policy'; // registers the sweep target for blind policy proofs
import './prover/workflow-package'; // registers the sweep target for pending workflow packages

/** The queues this process type consumes; a queue listed here without a processor fails the typecheck. */
type WorkerQueue = Extract<QueueName, 'jobs' | 'payments' | 'deliveries' | 'checkouts'>;
const processors: { [Q in WorkerQueue]: (db: Db) => Processor } = {
  jobs: jobsProcessor,
  payments: (db) => paymentsProcessor(db),
  deliveries: deliveriesProcessor,
  checkouts: (db) => checkoutsProcessor(db),
};

export interface WorkerProcess {
  workers: Worker[];
  sweeper: Sweeper;
  shutdown: Shutdown;
}

export async function startWorkerProcess(): Promise<WorkerProcess> {
  const shutdown = new Shutdown();
  const db = createDb();
  const workerRedis = createRedis('worker');
  const queueRedis = createRedis('api');
  const queues = new Queues(queueRedis);
  shutdown.register('db', () => db.destroy());
  shutdown.register('egress', () => closeEgress());
  shutdown.register('redis', async () => {
    await queues.close();
    workerRedis.disconnect();
    queueRedis.disconnect();
    await closeJobEvents();
  });

  // Payment checks are grouped (shared/payments/check.ts): the more a worker holds, the larger its groups.
  const workers = (Object.keys(processors) as WorkerQueue[]).map((q) =>
    startWorker(
      q,
      processors[q](db),
      workerRedis,
      q === 'payments' ? { concurrency: env.PAYMENTS_CONCURRENCY } : {},
    ),
  );
  // Stop taking work first; jobs in flight finish (or are handed back when the lock lapses).
  shutdown.register('workers', () => Promise.allSettled(workers.map((w) => w.close())));

  const sweeper = new Sweeper(db, queues, queueRedis);
  sweeper.start();
  shutdown.register('sweeper', () => sweeper.stop());

  const follower = startChainFollower(db);
  if (follower) shutdown.register('chain-follower', () => follower.stop());

  const webhookRelay = startWebhookRelay(db, queues);
  shutdown.register('webhook-relay', () => webhookRelay.stop());

  if (env.WORKER_METRICS_PORT !== undefined) {
    const port = env.WORKER_METRICS_PORT;
    const host = env.WORKER_METRICS_HOST;
    const server = startMetricsServer({ port, host, token: env.METRICS_TOKEN });
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', (err) =>
        reject(
          explainListenError(err, { port, host, variable: 'WORKER_METRICS_PORT (npm start: PORT+1)' }) ?? err,
        ),
      );
    }).catch(async (err: unknown) => {
      await shutdown.run('start failed');
      throw err;
    });
    shutdown.register('metrics', () => new Promise((r) => server.close(r)));
  }
  // Ready means connected: each worker has its Redis connection and takes jobs from here on.
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  logger.info({ queues: Object.keys(processors), concurrency: env.WORKER_CONCURRENCY }, 'worker started');
  return { workers, sweeper, shutdown };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runProcess('worker', startWorkerProcess);
}
