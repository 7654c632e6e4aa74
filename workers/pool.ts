// BullMQ worker construction shared by the worker and prover processes: one place for locks, stalls and metrics.
import { hostname } from 'node:os';
import { Worker } from 'bullmq';
import type { Processor } from 'bullmq';
import { env } from '../shared/platform/env';
import { logger } from '../shared/platform/log';
import type { QueueName } from '../shared/platform/queues';
import type { RedisClient } from '../shared/platform/redis';

export function startWorker(
  queue: QueueName,
  processor: Processor,
  connection: RedisClient,
  opts: { concurrency?: number; prefix?: string; lockDurationMs?: number } = {},
): Worker {
  const lockDuration = opts.lockDurationMs ?? env.WORKER_LOCK_DURATION_MS;
  const worker = new Worker(queue, processor, {
    // Shown in Bull Board and kept on each job (processedBy): which process ran it, or held it when it died.
    name: `${hostname()}:${process.pid}`,
    connection,
    prefix: opts.prefix ?? env.QUEUE_PREFIX,
    concurrency: opts.concurrency ?? env.WORKER_CONCURRENCY,
    lockDuration,
    // A job whose worker died is noticed within one lock period and handed to another worker.
    stalledInterval: lockDuration,
    maxStalledCount: 2,
    autorun: true,
  });
  worker.on('failed', (job, err) => {
    logger.warn(
      { queue, jobId: job?.id, attempt: job?.attemptsMade, err: err.message },
      'job attempt failed',
    );
  });
  worker.on('error', (err) => logger.error({ queue, err: err.message }, 'worker error'));
  return worker;
}
