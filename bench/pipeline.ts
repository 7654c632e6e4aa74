// bench:pipeline — jobs end to end through this service against the pipeline a user would build
// themselves, driven alike, in the same run.
//   npm run bench:pipeline
// The baseline (`bare`): an Express 5 app (express.json, a pg pool of 10, a BullMQ queue) whose
// POST /jobs inserts a row and adds a job, and a BullMQ worker process that marks the row done, as
// separate processes. This service (`ours`): the web's POST /api/jobs with a free service
// (attest.timestamp, anonymous) and its own worker process, as deployed (the build in dist/, rate limits
// on, budgets out of reach). In rounds, the order turning each round: BENCH_JOBS jobs with
// BENCH_CONCURRENCY in flight, counted from the first request until every job is accepted over HTTP and
// finished in Postgres. It reports medians over the rounds of jobs per second and the ratio, CPU per job
// by process (web, worker, Postgres backends, Redis, this driver), load and peak memory.
// One file, three roles: the driver (default), the bare web (BENCH_PIPELINE_ROLE=web) and the bare
// worker (BENCH_PIPELINE_ROLE=worker).
import { Queue, QueueEvents, Worker } from 'bullmq';
import express from 'express';
import pg from 'pg';
import { createHash, randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { freePort } from '../dev/stack/redis';
import { createRedis } from '../shared/platform/redis';
import { printReport } from './report';
import { benchStack, cpuByRole, cpuPerOp, httpClient, peakMiB, percentile, pool, settled } from './stack';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const N = Number(process.env.BENCH_JOBS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const ROLE = process.env.BENCH_PIPELINE_ROLE;
const BARE_TABLE = 'bare_pipeline_jobs';
const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '–');
const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

/** The bare web: what a user writes first — validate, insert, enqueue, answer 202. */
async function bareWeb() {
  const db = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const queue = new Queue('bare-pipeline', {
    connection: createRedis('api'),
    prefix: process.env.QUEUE_PREFIX,
  });
  const app = express();
  app.use(express.json());
  app.post('/jobs', async (req, res) => {
    const body = req.body as { service?: unknown; input?: unknown };
    if (typeof body?.service !== 'string') {
      res.status(400).json({ error: 'service required' });
      return;
    }
    const id = randomUUID();
    await db.query(`insert into ${BARE_TABLE} (id, service, input, status) values ($1, $2, $3, 'queued')`, [
      id,
      body.service,
      JSON.stringify(body.input ?? null),
    ]);
    await queue.add(
      'job',
      { id },
      { jobId: id, removeOnComplete: { count: 1000 }, removeOnFail: { count: 1000 } },
    );
    res.status(202).json({ job: { id, status: 'queued' } });
  });
  const server = app.listen(Number(process.env.PORT), '127.0.0.1');
  process.on('SIGTERM', () => {
    server.close();
    void queue.close().then(() => db.end().then(() => process.exit(0)));
  });
}

/** The bare worker: marks the row done. */
function bareWorker() {
  const db = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const worker = new Worker(
    'bare-pipeline',
    async (job) => {
      await db.query(
        `update ${BARE_TABLE} set status = 'succeeded', result = $2, updated_at = now() where id = $1`,
        [(job.data as { id: string }).id, JSON.stringify({ done: true })],
      );
    },
    {
      connection: createRedis('worker'),
      prefix: process.env.QUEUE_PREFIX,
      concurrency: CONCURRENCY,
      removeOnComplete: { count: 1000 },
    },
  );
  process.on('SIGTERM', () => void worker.close().then(() => db.end().then(() => process.exit(0))));
}

async function waitUp(
  request: ReturnType<typeof httpClient>,
  method: 'GET' | 'POST',
  path: string,
  body?: string,
) {
  for (let i = 0; i < 600; i++) {
    const up = await request(method, path, body).then(
      (r) => r.status < 500,
      () => false,
    );
    if (up) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${path} did not come up`);
}

async function driver() {
  const stack = await benchStack();
  try {
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    db.on('error', () => {});
    await db.connect();
    await db.query(
      `create table ${BARE_TABLE} (id text primary key, service text not null, input jsonb, status text not null,
         result jsonb, created_at timestamptz not null default now(), updated_at timestamptz not null default now())`,
    );
    const [ourPort, barePort] = [await freePort(), await freePort()];
    const big = '100000000';
    const web = stack.spawn('api/main.ts', {
      PORT: String(ourPort),
      HOST: '127.0.0.1',
      OVERLOAD_TARGET_MS: '0',
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_IP_PER_MINUTE: big,
      RATE_LIMIT_KEY_PER_MINUTE: big,
    });
    const worker = stack.spawn('workers/main.ts', { WORKER_CONCURRENCY: String(CONCURRENCY) });
    const bareWebProcess = stack.spawn('bench/pipeline.ts', {
      BENCH_PIPELINE_ROLE: 'web',
      PORT: String(barePort),
    });
    const bareWorkerProcess = stack.spawn('bench/pipeline.ts', { BENCH_PIPELINE_ROLE: 'worker' });
    // Completions are counted from each queue's events, so the driver does not poll Postgres while a
    // side runs (a count over a growing table would cost the side's own Postgres time); the rows are
    // counted once the events say all are done.
    const completions = { ours: 0, bare: 0 };
    const events = [
      ['ours', 'jobs'],
      ['bare', 'bare-pipeline'],
    ].map(([name, queue]) => {
      const e = new QueueEvents(queue!, { connection: createRedis('worker'), prefix: stack.prefix });
      e.on('completed', () => completions[name as 'ours' | 'bare']++);
      return e;
    });
    await Promise.all(events.map((e) => e.waitUntilReady()));
    const probe = createRedis('worker');
    const redisPid = Number(/process_id:(\d+)/.exec(await probe.info('server'))?.[1]);
    probe.disconnect();

    const sides = {
      ours: {
        request: httpClient(`http://127.0.0.1:${ourPort}`, CONCURRENCY),
        path: '/api/jobs',
        done: `select count(*)::int n from jobs where status = 'succeeded' and created_at >= $1`,
        pids: { web: [web.pid!], worker: [worker.pid!], redis: [redisPid] },
      },
      bare: {
        request: httpClient(`http://127.0.0.1:${barePort}`, CONCURRENCY),
        path: '/jobs',
        done: `select count(*)::int n from ${BARE_TABLE} where status = 'succeeded' and created_at >= $1`,
        pids: { web: [bareWebProcess.pid!], worker: [bareWorkerProcess.pid!], redis: [redisPid] },
      },
    };
    let seq = 0;
    const body = () =>
      JSON.stringify({
        service: 'attest.timestamp',
        input: { digest: createHash('sha256').update(`bench ${seq++}`).digest('hex') },
      });
    await waitUp(sides.ours.request, 'GET', '/api/health');
    await waitUp(sides.bare.request, 'POST', '/jobs', body());

    const doneCount = async (sql: string, since: Date) =>
      (await db.query<{ n: number }>(sql, [since])).rows[0]!.n;
    const results = { ours: [] as number[], bare: [] as number[] };
    const cpu = { ours: [] as Array<Record<string, number>>, bare: [] as Array<Record<string, number>> };
    let shed = 0;
    const run = async (name: 'ours' | 'bare', n: number) => {
      const side = sides[name];
      const completed = completions[name] + n;
      // Postgres's clock is this host's: every row of this run is created after this moment, every row
      // of the run before it, before.
      const since = new Date();
      const cpuBefore = await cpuByRole(side.pids, db);
      const start = performance.now();
      await pool([...Array(n).keys()], CONCURRENCY, async () => {
        let res = await side.request('POST', side.path, body());
        // A request shed by the web's overload gate is sent again, and counted.
        while (res.status === 503) {
          shed++;
          await new Promise((r) => setTimeout(r, 20));
          res = await side.request('POST', side.path, body());
        }
        if (res.status !== 202)
          throw new Error(`${name}: POST ${side.path} answered ${res.status}: ${res.body}`);
      });
      while (completions[name] < completed) await new Promise((r) => setTimeout(r, 2));
      while ((await doneCount(side.done, since)) < n) await new Promise((r) => setTimeout(r, 2));
      const seconds = (performance.now() - start) / 1000;
      return { rate: n / seconds, cpu: cpuPerOp(cpuBefore, await cpuByRole(side.pids, db), n) };
    };
    // Warm-up: connections, JIT, both sides.
    for (const name of ['ours', 'bare'] as const) await run(name, 1500);
    await settled([web.pid!, worker.pid!, bareWebProcess.pid!, bareWorkerProcess.pid!]);
    console.log(
      `bench:pipeline — ${ROUNDS} rounds × ${N} jobs a side, ${CONCURRENCY} in flight, ${cpus().length} cores; medians over the rounds`,
    );
    const loads: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['bare', 'ours'] as const) : (['ours', 'bare'] as const);
      const line: string[] = [];
      for (const name of order) {
        const r = await run(name, N);
        results[name].push(r.rate);
        cpu[name].push(r.cpu);
        line.push(`${name} ${fmt(r.rate)}/s`);
      }
      loads.push(loadavg()[0]!);
      console.log(
        `  round ${round + 1}: ${line.join(', ')}; ratio ${fmt(results.ours.at(-1)! / results.bare.at(-1)!, 3)}`,
      );
    }
    await db.end();
    await Promise.all(events.map((e) => e.close()));
    const ratios = results.ours.map((r, i) => r / results.bare[i]!);
    const cpuMedian = (name: 'ours' | 'bare') =>
      Object.fromEntries(
        Object.keys(cpu[name][0]!).map((role) => [role, median(cpu[name].map((c) => c[role]!))]),
      );
    const cpuLine = (c: Record<string, number>) =>
      Object.entries(c)
        .map(([role, ms]) => `${role} ${fmt(ms, 3)}`)
        .join(', ');
    const [ours, bare] = [median(results.ours), median(results.bare)];
    console.log(
      `\nbare Express + pg + BullMQ:  ${fmt(bare)} jobs/s; CPU ms a job: ${cpuLine(cpuMedian('bare'))}`,
    );
    console.log(
      `this service, POST /api/jobs: ${fmt(ours)} jobs/s; CPU ms a job: ${cpuLine(cpuMedian('ours'))}`,
    );
    console.log(
      `ratio (median of the rounds' ratios): ${fmt(median(ratios), 3)} (rounds ${ratios.map((r) => fmt(r, 2)).join(' ')}); requests shed and sent again: ${shed}`,
    );
    console.log(
      `load average over the rounds ${fmt(Math.min(...loads), 2)}–${fmt(Math.max(...loads), 2)}; peak memory MiB: web ${fmt(peakMiB(web.pid))}, worker ${fmt(peakMiB(worker.pid))}, bare web ${fmt(peakMiB(bareWebProcess.pid))}, bare worker ${fmt(peakMiB(bareWorkerProcess.pid))}`,
    );
    printReport({
      bench: 'pipeline',
      settings: { rounds: ROUNDS, jobs: N, inFlight: CONCURRENCY },
      figures: {
        jobsPerSecond: ours,
        ratioToBare: median(ratios),
        shed,
        ...Object.fromEntries(Object.entries(cpuMedian('ours')).map(([k, v]) => [`cpuMsPerJob.${k}`, v])),
      },
      baseline: {
        bareJobsPerSecond: bare,
        ...Object.fromEntries(Object.entries(cpuMedian('bare')).map(([k, v]) => [`bareCpuMsPerJob.${k}`, v])),
      },
      target: { ratioToBare: { min: 0.9 } },
    });
  } finally {
    await stack.close();
  }
  process.exit(0);
}

if (ROLE === 'web') await bareWeb();
else if (ROLE === 'worker') bareWorker();
else await driver();
