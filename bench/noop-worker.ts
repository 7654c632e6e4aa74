// Baseline worker for bench:jobs: bare BullMQ processing a no-op job, nothing else, on the Redis (one
// node or a cluster) and prefix it is given.
import { Worker } from 'bullmq';
import { createRedis } from '../shared/platform/redis';

const connection = createRedis('worker');
const worker = new Worker('bare', async () => undefined, {
  connection,
  prefix: process.env.QUEUE_PREFIX,
  concurrency: Number(process.env.WORKER_CONCURRENCY ?? 32),
  removeOnComplete: { count: 1000 },
});
process.on('SIGTERM', async () => {
  await worker.close();
  connection.disconnect();
  process.exit(0);
});
