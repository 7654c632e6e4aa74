// The `worker` process: consumes the jobs, payments, checkouts and deliveries queues, and runs the
// sweeper, the webhook relay, the chain follower, the transparency log's sequencer and its witnessing.
import type { AddressInfo } from 'node:net';
import type { Processor, Worker } from 'bullmq';
import { createDb } from '../shared/platform/db/knex';
import type { Db } from '../shared/platform/db/knex';
import { closeEgress } from '../shared/platform/egress';
import { env } from '../shared/platform/env';
import { chainSettingIssues } from '../shared/chains/settings';
import { closeJobEvents } from '../shared/jobs/notify';
import { watchSigningKeys } from '../shared/platform/key-history';
import { runProcess } from '../shared/platform/lifecycle';
import { logger } from '../shared/platform/log';
import { assertMetricsAllowed, listenMetrics, metricsAccess } from '../shared/platform/metrics';
import { a2aPushFormat } from '../shared/a2a/pushes';
import { startWebhookRelay } from '../shared/deliveries/webhooks';
import { Queues } from '../shared/platform/queues';
import type { QueueName } from '../shared/platform/queues';
import { createRedis } from '../shared/platform/redis';
import { Shutdown } from '../shared/platform/shutdown';
import { startTracing, stopTracing } from '../shared/platform/tracing';
import { startLogSequencer } from '../shared/platform/translog/sequencer';
import {
  Witnessing,
  pgCheckpointLog,
  witnessPolicy,
  witnessSettingIssues,
} from '../shared/platform/translog/witnessing';
import type { CheckpointLog } from '../shared/platform/translog/witnessing';
import { assertDatabaseStart, refuseStartup } from '../shared/platform/startup-checks';
import { startChainFollower } from './chain-follower';
import { startWorker } from './pool';
import { checkoutsProcessor, checkoutsSweepTarget } from './processors/licensing';
import { deliveriesProcessor, deliveriesSweepTarget } from './processors/deliveries';
import { jobsProcessor, jobsSweepTarget } from './processors/jobs';
import { paymentsProcessor, paymentsSweepTarget } from './processors/payments';
import { workflowPackageKind } from './prover/workflows';
import { blindPolicyKind } from './prover/zk';
import { databaseChecks } from './startup';
import { Sweeper } from './sweeper';
import type { SweepTarget } from './sweeper';

/** The queues this process type consumes; a queue listed here without a processor fails the typecheck. */
type WorkerQueue = Extract<QueueName, 'jobs' | 'payments' | 'deliveries' | 'checkouts'>;
const processors: { [Q in WorkerQueue]: (db: Db) => Processor } = {
  jobs: jobsProcessor,
  payments: (db) => paymentsProcessor(db),
  deliveries: deliveriesProcessor,
  checkouts: (db) => checkoutsProcessor(db),
};

/**
 * Every outbox the sweeper keeps in its queue: this process's queues, and the prover's (a deployment
 * may run no worker beside its provers, but the worker's sweeper is the one that runs).
 */
export const sweepTargets: readonly SweepTarget[] = [
  jobsSweepTarget,
  paymentsSweepTarget,
  checkoutsSweepTarget,
  deliveriesSweepTarget,
  blindPolicyKind.sweep,
  workflowPackageKind.sweep,
] as readonly SweepTarget[];

export interface WorkerProcess {
  workers: Worker[];
  sweeper: Sweeper;
  witnessing: Witnessing | undefined;
  shutdown: Shutdown;
}

/** What the worker process is given: the log's checkpoints, which the witnesses of LOG_WITNESSES cosign. */
export interface WorkerOptions {
  /** Default: the log in Postgres (the checkpoints its sequencer and publishers sign). */
  checkpoints?: CheckpointLog;
}

export async function startWorkerProcess(options: WorkerOptions = {}): Promise<WorkerProcess> {
  if (env.WORKER_METRICS_PORT !== undefined) assertMetricsAllowed(metricsAccess(env));
  const shutdown = new Shutdown();
  // Before any store is opened, so its queues and pool are traced; closed last, flushing the spans.
  if (startTracing('worker')) shutdown.register('tracing', stopTracing);
  const db = createDb();
  const workerRedis = createRedis('worker');
  const queueRedis = createRedis('api');
  const queues = new Queues(queueRedis);
  shutdown.register('db', () => db.destroy());
  // Its keys go into the key history first; a retired or revoked one stops the start here, as does a
  // database holding values sealed under a key it lacks, or demo money.
  const keys = await assertDatabaseStart(db, databaseChecks)
    .then(() => watchSigningKeys(db))
    .catch(async (err: unknown) => {
      await shutdown.run('start failed');
      throw err;
    });
  shutdown.register('signing keys', () => keys.stop());
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

  const sweeper = new Sweeper(db, queues, queueRedis, sweepTargets);
  sweeper.start();
  shutdown.register('sweeper', () => sweeper.stop());

  // One process at a time asks each witness (a Redis lock per witness); appends never wait for it.
  const policy = witnessPolicy();
  let witnessing: Witnessing | undefined;
  if (policy) {
    witnessing = new Witnessing(db, queueRedis, policy.policy, options.checkpoints ?? pgCheckpointLog);
    witnessing.start();
    shutdown.register('witnessing', () => witnessing?.stop());
  }

  const follower = startChainFollower(db);
  if (follower) shutdown.register('chain-follower', () => follower.stop());

  // What is published often (stage records, receipts' digests) is queued by its publisher and logged
  // here in batches, one checkpoint a batch (shared/platform/translog/sequencer.ts).
  const sequencer = startLogSequencer(db);
  shutdown.register('log-sequencer', () => sequencer.stop());

  // A2A pushes are deliveries in their own format (shared/a2a/pushes.ts).
  const webhookRelay = startWebhookRelay(db, queues, { a2a: a2aPushFormat });
  shutdown.register('webhook-relay', () => webhookRelay.stop());

  if (env.WORKER_METRICS_PORT !== undefined) {
    const server = await listenMetrics({
      port: env.WORKER_METRICS_PORT,
      host: env.WORKER_METRICS_HOST,
      access: metricsAccess(env),
      variable: 'WORKER_METRICS_PORT (npm start: PORT+1)',
    }).catch(async (err: unknown) => {
      await shutdown.run('start failed');
      throw err;
    });
    shutdown.register('metrics', () => new Promise((r) => server.close(r)));
    // The port it listens on (the one chosen when WORKER_METRICS_PORT is 0).
    logger.info({ port: (server.address() as AddressInfo).port }, 'metrics listening');
  }
  // Ready means connected: each worker has its Redis connection and takes jobs from here on.
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  logger.info({ queues: Object.keys(processors), concurrency: env.WORKER_CONCURRENCY }, 'worker started');
  return { workers, sweeper, witnessing, shutdown };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  refuseStartup(env, 'worker', [...chainSettingIssues(env), ...witnessSettingIssues(env)]);
  await runProcess('worker', startWorkerProcess);
}
