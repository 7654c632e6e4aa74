// bench:jobs — end-to-end createJob → succeeded over HTTP for attest.timestamp (web and worker as
// separate processes, as deployed), against bare BullMQ add + process of a no-op job on the same Redis.
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createHash } from 'node:crypto';
import { benchStack, httpClient, percentile, pool } from './stack';

const N = Number(process.env.BENCH_JOBS ?? 5000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const PORT = Number(process.env.BENCH_PORT ?? 3999);
const fmt = (n: number) => n.toFixed(1);

async function waitHealthy(base: string) {
  for (let i = 0; i < 200; i++) {
    if (
      await fetch(`${base}/api/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('web did not start');
}

async function endToEnd(stack: Awaited<ReturnType<typeof benchStack>>) {
  const base = `http://127.0.0.1:${PORT}`;
  stack.spawn('api/main.ts', { PORT: String(PORT), HOST: '127.0.0.1', RATE_LIMIT_ENABLED: 'false' });
  stack.spawn('workers/main.ts', { WORKER_CONCURRENCY: String(CONCURRENCY) });
  await waitHealthy(base);
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();

  // Warm-up: connections, JIT.
  const body = (i: number) =>
    JSON.stringify({
      service: 'attest.timestamp',
      input: { digest: createHash('sha256').update(`bench ${i}`).digest('hex') },
    });
  const call = httpClient(base, CONCURRENCY);
  const create = async (i: number) => {
    const res = await call('POST', '/api/jobs', body(i));
    if (res.status !== 202) throw new Error(`createJob answered ${res.status}`);
    ids.push((JSON.parse(res.body) as { job: { id: string } }).job.id);
  };
  const ids: string[] = [];
  await pool(
    [...Array(300).keys()].map((i) => -i - 1),
    CONCURRENCY,
    create,
  );
  const doneCount = async () =>
    Number((await db.query(`select count(*) n from jobs where status = 'succeeded'`)).rows[0].n);
  while ((await doneCount()) < 300) await new Promise((r) => setTimeout(r, 20));

  const start = performance.now();
  const createLat = await pool([...Array(N).keys()], CONCURRENCY, create);
  const created = performance.now();
  while ((await doneCount()) < N + 300) await new Promise((r) => setTimeout(r, 10));
  const elapsed = (performance.now() - start) / 1000;

  const sample = ids.slice(-2000);
  const statusLat = await pool(sample, CONCURRENCY, async (id) => {
    const res = await call('GET', `/api/jobs/${id}`);
    if (res.status !== 200) throw new Error(`jobStatus answered ${res.status}`);
  });
  await db.end();
  return {
    jobsPerSecond: N / elapsed,
    createPerSecond: N / ((created - start) / 1000),
    createP50: percentile(createLat, 50),
    createP99: percentile(createLat, 99),
    statusP50: percentile(statusLat, 50),
    statusP99: percentile(statusLat, 99),
  };
}

async function bare(stack: Awaited<ReturnType<typeof benchStack>>) {
  const connection = new Redis(stack.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue('bare', { connection, prefix: stack.prefix });
  const events = new QueueEvents('bare', {
    connection: new Redis(stack.redisUrl, { maxRetriesPerRequest: null }),
    prefix: stack.prefix,
  });
  await events.waitUntilReady();
  let completed = 0;
  events.on('completed', () => completed++);
  const worker = stack.spawn('bench/noop-worker.ts', { WORKER_CONCURRENCY: String(CONCURRENCY) });
  const start = performance.now();
  await pool([...Array(N).keys()], CONCURRENCY, async (i) => {
    await queue.add('noop', { i }, { jobId: `bare-${i}`, removeOnComplete: { count: 1000 } });
  });
  while (completed < N) await new Promise((r) => setTimeout(r, 10));
  const elapsed = (performance.now() - start) / 1000;
  worker.kill('SIGTERM');
  await events.close();
  await queue.obliterate({ force: true });
  await queue.close();
  connection.disconnect();
  return { jobsPerSecond: N / elapsed };
}

const stack = await benchStack();
try {
  console.log(
    `bench:jobs — ${N} jobs, ${CONCURRENCY} in flight, on ${(await import('node:os')).cpus().length} cores`,
  );
  const baseline = await bare(stack);
  const e2e = await endToEnd(stack);
  console.log(`bare BullMQ add+process (no-op):        ${fmt(baseline.jobsPerSecond)} jobs/s`);
  console.log(
    `createJob → succeeded over HTTP:        ${fmt(e2e.jobsPerSecond)} jobs/s  (createJob alone ${fmt(e2e.createPerSecond)}/s)`,
  );
  console.log(
    `ratio end-to-end / bare:                ${((e2e.jobsPerSecond / baseline.jobsPerSecond) * 100).toFixed(1)} %  (target ≥ 30 %)`,
  );
  console.log(`createJob latency p50/p99:              ${fmt(e2e.createP50)} / ${fmt(e2e.createP99)} ms`);
  console.log(`jobStatus latency p50/p99:              ${fmt(e2e.statusP50)} / ${fmt(e2e.statusP99)} ms`);
} finally {
  await stack.close();
}
process.exit(0);
