// bench:outage — the chaos run of "an outage never fails a user's job": a worker process (as deployed)
// reaches Postgres through a TCP proxy on loopback; BENCH_JOBS jobs (default 3,000) are accepted, then
// the proxy is cut for BENCH_OUTAGE_S seconds (default 60, far past the attempt budget of JOB_ATTEMPTS
// and JOB_BACKOFF_MS) and restored. Figures: jobs failed (target 0), jobs whose result was written
// more than once (target 0), the largest attemptsMade (target 1: the outage spent none), the runs
// held back by the outage, and the seconds from Postgres's return until every job had succeeded.
//   npm run bench:outage
import { createJob } from '../shared/jobs/jobs';
import { sha256Hex } from '../shared/platform/crypto';
import { createDb } from '../shared/platform/db/knex';
import { Queues } from '../shared/platform/queues';
import { createRedis } from '../shared/platform/redis';
import { tcpProxy } from '../test/proxy';
import { printReport } from './report';
import { benchStack } from './stack';

const N = Number(process.env.BENCH_JOBS ?? 3000);
const OUTAGE_S = Number(process.env.BENCH_OUTAGE_S ?? 60);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const stack = await benchStack();
const db = createDb(stack.databaseUrl, { poolMax: 4 });
const redis = createRedis('api', stack.redisUrl);
const queues = new Queues(redis, stack.prefix);
const proxy = await tcpProxy(Number(new URL(stack.databaseUrl).port || 5432));
try {
  const queue = queues.get('jobs');
  stack.spawn('workers/main.ts', { DATABASE_URL: proxy.url(stack.databaseUrl), WORKER_CONCURRENCY: '32' });
  for (let i = 0; (await queue.getWorkers()).length === 0; i++) {
    if (i > 600) throw new Error('the worker did not start');
    await sleep(100);
  }
  await proxy.cut();
  const cutAt = Date.now();
  const ids: string[] = [];
  for (let i = 0; i < N; i++) {
    const { row } = await createJob(db, queues, {
      service: 'attest.timestamp',
      input: { digest: sha256Hex(`outage bench ${cutAt} ${i}`) },
    });
    ids.push(row.id);
  }
  await sleep(Math.max(0, OUTAGE_S * 1000 - (Date.now() - cutAt)));
  const failedDuring = await queue.getJobCountByTypes('failed');
  await proxy.restore();
  const restoredAt = Date.now();
  const count = async (status: string) =>
    Number((await db('jobs').whereIn('id', ids).where({ status }).count({ n: '*' }))[0]!.n);
  while ((await count('succeeded')) + (await count('failed')) < N) {
    if (Date.now() - restoredAt > 300_000) throw new Error('jobs still open 5 minutes after the outage');
    await sleep(100);
  }
  const recoverySeconds = (Date.now() - restoredAt) / 1000;
  const failed = await count('failed');
  const results = (await db('job_events')
    .where({ type: 'succeeded' })
    .whereIn('job_id', ids)
    .select('job_id')
    .count({ n: '*' })
    .groupBy('job_id')) as Array<{ n: string }>;
  const doubled = results.filter((r) => Number(r.n) > 1).length;
  for (let i = 0; (await queue.getJobCountByTypes('completed')) < N - failed && i < 100; i++)
    await sleep(100);
  const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
  const maxAttemptsMade = Math.max(...jobs.map((j) => j?.attemptsMade ?? 0));
  const heldBackRuns = jobs.reduce((n, j) => n + Math.max(0, (j?.attemptsStarted ?? 1) - 1), 0);
  printReport({
    bench: 'outage',
    settings: { jobs: N, outageSeconds: OUTAGE_S, workerConcurrency: 32 },
    figures: {
      failed,
      failedInQueueDuringOutage: failedDuring,
      doubled,
      maxAttemptsMade,
      heldBackRuns,
      recoverySeconds,
    },
    baseline: {},
    target: { failed: { max: 0 }, doubled: { max: 0 }, maxAttemptsMade: { max: 1 } },
  });
} finally {
  await proxy.close();
  await queues.close();
  redis.disconnect();
  await db.destroy();
  await stack.close();
}
