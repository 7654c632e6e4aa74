// bench:jobs — end-to-end createJob → succeeded over HTTP for attest.timestamp (web and worker as
// separate processes, as deployed), against bare BullMQ add + process of a no-op job on the same Redis.
//   npm run bench:jobs [-- --cluster]
// --cluster runs both sides on a three-master Redis Cluster started on loopback (QUEUE_PREFIX={…}).
// BENCH_WEBS / BENCH_WORKERS start more web and worker processes (default one each).
import { Queue, QueueEvents } from 'bullmq';
import pg from 'pg';
import { createHash } from 'node:crypto';
import { cpus } from 'node:os';
import { freePort } from '../dev/stack/redis';
import { startLocalCluster } from '../dev/stack/redis-cluster';
import type { LocalCluster } from '../dev/stack/redis-cluster';
import { parseEnv } from '../shared/platform/env';
import { createRedis, waitReady } from '../shared/platform/redis';
import type { RedisClient, RedisTarget } from '../shared/platform/redis';
import { printReport } from './report';
import { benchStack, cpuByRole, cpuPerOp, httpClient, percentile, pool } from './stack';

const N = Number(process.env.BENCH_JOBS ?? 5000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const WEBS = Number(process.env.BENCH_WEBS ?? 1);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 1);
const CLUSTER = process.argv.includes('--cluster');
const fmt = (n: number) => n.toFixed(1);

type Stack = Awaited<ReturnType<typeof benchStack>>;

/** Where both sides keep their queues: the stack's Redis, or a fresh cluster with a hash-tagged prefix. */
interface Place {
  target: RedisTarget;
  prefix: string;
  /** What child processes need on top of the stack's environment. */
  env: Record<string, string>;
}

async function waitHealthy(base: string) {
  for (let i = 0; i < 600; i++) {
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

/** The pid of every Redis server holding the queues: the one node, or each master of the cluster. */
async function redisPids(client: RedisClient): Promise<number[]> {
  const nodes = 'nodes' in client && typeof client.nodes === 'function' ? client.nodes('master') : [client];
  const infos = await Promise.all(nodes.map((n) => n.info('server')));
  return infos.map((info) => Number(/process_id:(\d+)/.exec(info)?.[1]));
}

async function endToEnd(stack: Stack, place: Place) {
  const bases: string[] = [];
  const pids: Record<string, number[]> = { web: [], worker: [] };
  for (let i = 0; i < WEBS; i++) {
    const port = process.env.BENCH_PORT ? Number(process.env.BENCH_PORT) + i : await freePort();
    const web = stack.spawn('api/main.ts', {
      ...place.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      RATE_LIMIT_ENABLED: 'false',
    });
    pids.web!.push(web.pid!);
    bases.push(`http://127.0.0.1:${port}`);
  }
  for (let i = 0; i < WORKERS; i++)
    pids.worker!.push(
      stack.spawn('workers/main.ts', { ...place.env, WORKER_CONCURRENCY: String(CONCURRENCY) }).pid!,
    );
  const probe = createRedis('worker', place.target);
  if (!(await waitReady(probe, 10_000))) throw new Error('Redis did not answer');
  const servers = await redisPids(probe);
  if (servers.length === 0 || servers.some((p) => !p)) throw new Error('no Redis server pid');
  // One role per cluster master: the queues' master works, the others mostly relay pub/sub.
  servers.forEach((pid, i) => (pids[servers.length > 1 ? `redis${i + 1}` : 'redis'] = [pid]));
  probe.disconnect();
  for (const base of bases) await waitHealthy(base);
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();

  const body = (i: number) =>
    JSON.stringify({
      service: 'attest.timestamp',
      input: { digest: createHash('sha256').update(`bench ${i}`).digest('hex') },
    });
  let shedRetries = 0;
  // Requests go round the webs, as a router in front of them would send them.
  const calls = bases.map((base) => httpClient(base, Math.ceil(CONCURRENCY / bases.length)));
  // A createJob the web sheds (503 overloaded: its requests took longer than OVERLOAD_TARGET_MS) is
  // sent again after a pause, and counted: a run that needed any says so.
  const create = async (i: number) => {
    let res = await calls[Math.abs(i) % calls.length]!('POST', '/api/jobs', body(i));
    while (res.status === 503) {
      shedRetries++;
      await new Promise((r) => setTimeout(r, 50));
      res = await calls[Math.abs(i) % calls.length]!('POST', '/api/jobs', body(i));
    }
    if (res.status !== 202) throw new Error(`createJob answered ${res.status}`);
    const created = JSON.parse(res.body) as { job: { id: string }; accessToken: string };
    ids.push({ id: created.job.id, token: created.accessToken });
  };
  // Each job with its access token: jobStatus opens a job to its token only.
  const ids: Array<{ id: string; token: string }> = [];
  // Warm-up: connections, JIT.
  await pool(
    [...Array(300).keys()].map((i) => -i - 1),
    CONCURRENCY,
    create,
  );
  const doneCount = async () =>
    Number((await db.query(`select count(*) n from jobs where status = 'succeeded'`)).rows[0].n);
  while ((await doneCount()) < 300) await new Promise((r) => setTimeout(r, 20));

  const cpuBefore = await cpuByRole(pids, db);
  const start = performance.now();
  const createLat = await pool([...Array(N).keys()], CONCURRENCY, create);
  const created = performance.now();
  while ((await doneCount()) < N + 300) await new Promise((r) => setTimeout(r, 10));
  const elapsed = (performance.now() - start) / 1000;
  const cpu = cpuPerOp(cpuBefore, await cpuByRole(pids, db), N);

  const sample = ids.slice(-2000);
  const statusLat = await pool(sample, CONCURRENCY, async ({ id, token }) => {
    const get = () => calls[0]!('GET', `/api/jobs/${id}`, undefined, { authorization: `Bearer ${token}` });
    let res = await get();
    while (res.status === 503) {
      shedRetries++;
      await new Promise((r) => setTimeout(r, 50));
      res = await get();
    }
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
    shedRetries,
    cpu,
  };
}

async function bare(stack: Stack, place: Place) {
  const connection = createRedis('worker', place.target);
  const queue = new Queue('bare', { connection, prefix: place.prefix });
  const eventsConnection = createRedis('worker', place.target);
  const events = new QueueEvents('bare', { connection: eventsConnection, prefix: place.prefix });
  await events.waitUntilReady();
  let completed = 0;
  events.on('completed', () => completed++);
  const worker = stack.spawn('bench/noop-worker.ts', {
    ...place.env,
    WORKER_CONCURRENCY: String(CONCURRENCY),
  });
  const add = (i: number) =>
    queue.add('noop', { i }, { jobId: `bare-${i}`, removeOnComplete: { count: 1000 } }).then(() => undefined);
  // Warm-up, as the end-to-end run has one: the worker process started and its connections and code
  // warm before the clock starts (the worker's start alone is a second or more, as long as the run).
  await pool(
    [...Array(300).keys()].map((i) => -i - 1),
    CONCURRENCY,
    add,
  );
  while (completed < 300) await new Promise((r) => setTimeout(r, 10));
  completed = 0;
  const start = performance.now();
  await pool([...Array(N).keys()], CONCURRENCY, add);
  while (completed < N) await new Promise((r) => setTimeout(r, 10));
  const elapsed = (performance.now() - start) / 1000;
  await new Promise((r) => (worker.once('exit', r), worker.kill('SIGTERM')));
  await events.close();
  await queue.obliterate({ force: true });
  await queue.close();
  connection.disconnect();
  eventsConnection.disconnect();
  return { jobsPerSecond: N / elapsed };
}

const stack = await benchStack();
let cluster: LocalCluster | undefined;
let report: Parameters<typeof printReport>[0];
try {
  let place: Place = { target: { url: stack.redisUrl }, prefix: stack.prefix, env: {} };
  if (CLUSTER) {
    cluster = await startLocalCluster(3);
    const prefix = `{${stack.prefix}}`;
    const env = { REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.nodes, QUEUE_PREFIX: prefix };
    place = { target: { cluster: parseEnv(env).REDIS_CLUSTER_NODES! }, prefix, env };
  }
  const redis = CLUSTER ? `a Redis Cluster of 3 masters (${cluster!.nodes})` : `Redis ${stack.redisUrl}`;
  console.log(
    `bench:jobs — ${N} jobs, ${CONCURRENCY} in flight, ${WEBS} web / ${WORKERS} worker process(es), on ${cpus().length} cores, ${redis}`,
  );
  const baseline = await bare(stack, place);
  const e2e = await endToEnd(stack, place);
  const ratio = e2e.jobsPerSecond / baseline.jobsPerSecond;
  console.log(`bare BullMQ add+process (no-op):        ${fmt(baseline.jobsPerSecond)} jobs/s`);
  console.log(
    `createJob → succeeded over HTTP:        ${fmt(e2e.jobsPerSecond)} jobs/s  (createJob alone ${fmt(e2e.createPerSecond)}/s)`,
  );
  console.log(`ratio end-to-end / bare:                ${(ratio * 100).toFixed(1)} %  (target ≥ 30 %)`);
  console.log(`createJob latency p50/p99:              ${fmt(e2e.createP50)} / ${fmt(e2e.createP99)} ms`);
  console.log(`jobStatus latency p50/p99:              ${fmt(e2e.statusP50)} / ${fmt(e2e.statusP99)} ms`);
  console.log(`requests shed (503) and sent again:     ${e2e.shedRetries}`);
  const cpuLine = Object.entries(e2e.cpu).map(([role, ms]) => `${role} ${ms.toFixed(3)}`);
  console.log(`CPU ms per job end to end:              ${cpuLine.join(', ')}`);
  report = {
    bench: CLUSTER ? 'jobs --cluster' : 'jobs',
    settings: {
      jobs: N,
      inFlight: CONCURRENCY,
      webs: WEBS,
      workers: WORKERS,
      redis: CLUSTER ? 'cluster, 3 masters' : 'one node',
    },
    figures: {
      jobsPerSecond: e2e.jobsPerSecond,
      ratioToBaseline: ratio,
      createPerSecond: e2e.createPerSecond,
      createP50Ms: e2e.createP50,
      createP99Ms: e2e.createP99,
      statusP50Ms: e2e.statusP50,
      statusP99Ms: e2e.statusP99,
      shedRetries: e2e.shedRetries,
      ...Object.fromEntries(Object.entries(e2e.cpu).map(([role, ms]) => [`cpuMsPerJob.${role}`, ms])),
    },
    baseline: { bareBullmqJobsPerSecond: baseline.jobsPerSecond },
    target: { jobsPerSecond: { min: 1000 }, ratioToBaseline: { min: 0.3 } },
  };
} finally {
  await stack.close();
  await cluster?.stop();
}
printReport(report);
process.exit(0);
