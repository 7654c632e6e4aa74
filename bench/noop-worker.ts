// Baseline worker for bench:jobs: bare BullMQ processing a no-op job, nothing else.
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';

const connection = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: null });
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
