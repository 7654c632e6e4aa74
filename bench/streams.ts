// bench:streams — what idle job event streams cost: N streams held open on one web process (its own
// process, as deployed) while nothing happens, measured as Postgres transactions a second on the
// bench database and the web's CPU.
//   npm run bench:streams
// BENCH_STREAMS (2000) streams over BENCH_JOBS (100) queued jobs (no worker runs them), BENCH_WINDOW_S
// (10) seconds measured, BENCH_RUNS (7) runs; the median is reported. BENCH_BASELINE_DIR=<checkout>:
// each run also measures the web of that checkout (e.g. a worktree of an earlier commit, with its
// node_modules), interleaved with this one's, as the baseline.
import http from 'node:http';
import { loadavg } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../dev/stack/redis';
import { printReport } from './report';
import { benchStack, cpuMs, httpClient, peakMiB } from './stack';
import type { BenchStack } from './stack';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 2000);
const JOBS = Number(process.env.BENCH_JOBS ?? 100);
const WINDOW_S = Number(process.env.BENCH_WINDOW_S ?? 10);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const BASELINE = process.env.BENCH_BASELINE_DIR;
const STATS_FLUSH_MS = 11_000;

interface Run {
  queriesPerS: number;
  webCpuPct: number;
  webPeakMiB: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function waitHealthy(base: string) {
  for (let i = 0; i < 600; i++) {
    const ok = await fetch(`${base}/api/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('web did not start');
}

/** Opens a stream and resolves once its first event came; the request is returned to close it. */
function openStream(port: number, id: string, token: string): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = http.get({
      host: '127.0.0.1',
      port,
      path: `/api/jobs/${id}/events`,
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
      agent: false,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      if (res.statusCode !== 200) reject(new Error(`stream answered ${res.statusCode}`));
      res.setEncoding('utf8');
      res.once('data', () => resolve(req));
    });
  });
}

async function commits(stats: pg.Client, db: string): Promise<number> {
  const { rows } = await stats.query(
    'select xact_commit + xact_rollback as n from pg_stat_database where datname = $1',
    [db],
  );
  return Number(rows[0]?.n ?? 0);
}

async function measure(stack: BenchStack, stats: pg.Client, db: string, dir: string): Promise<Run> {
  const port = await freePort();
  const web = stack.spawn(path.join(dir, 'api/main.ts'), { PORT: String(port), RATE_LIMIT_ENABLED: 'false' });
  const base = `http://127.0.0.1:${port}`;
  const streams: http.ClientRequest[] = [];
  try {
    await waitHealthy(base);
    const client = httpClient(base, 16);
    const jobs: Array<{ id: string; token: string }> = [];
    for (let i = 0; i < JOBS; i++) {
      const digest = (i + Date.now()).toString(16).padStart(64, '0').slice(-64);
      const res = await client(
        'POST',
        '/api/jobs',
        JSON.stringify({ service: 'attest.timestamp', input: { digest } }),
      );
      if (res.status !== 202) throw new Error(`createJob answered ${res.status}: ${res.body}`);
      const body = JSON.parse(res.body) as { job: { id: string }; accessToken: string };
      jobs.push({ id: body.job.id, token: body.accessToken });
    }
    for (let i = 0; i < STREAMS; i += 100) {
      const batch = Array.from(
        { length: Math.min(100, STREAMS - i) },
        (_, k) => jobs[(i + k) % jobs.length]!,
      );
      streams.push(...(await Promise.all(batch.map((j) => openStream(port, j.id, j.token)))));
    }
    // Everything opened has settled into waiting. An idle backend flushes its statistics to
    // pg_stat_database within 10 s (PGSTAT_IDLE_INTERVAL): the opening's must land before the window,
    // the window's before the second reading.
    await new Promise((r) => setTimeout(r, STATS_FLUSH_MS));
    const q0 = await commits(stats, db);
    const c0 = cpuMs(web.pid);
    await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
    const c1 = cpuMs(web.pid);
    // The streams close (ending their reads) before the window's statistics are waited for.
    for (const s of streams.splice(0)) s.destroy();
    await new Promise((r) => setTimeout(r, STATS_FLUSH_MS));
    const q1 = await commits(stats, db);
    return {
      queriesPerS: (q1 - q0) / WINDOW_S,
      webCpuPct: ((c1 - c0) / (WINDOW_S * 1000)) * 100,
      webPeakMiB: peakMiB(web.pid!),
    };
  } finally {
    for (const s of streams) s.destroy();
    await new Promise<void>((r) =>
      web.exitCode !== null ? r() : (web.once('exit', () => r()), web.kill('SIGTERM')),
    );
  }
}

async function main() {
  const stack = await benchStack();
  const db = new URL(stack.databaseUrl).pathname.slice(1);
  const adminUrl = new URL(stack.databaseUrl);
  adminUrl.pathname = '/postgres';
  const stats = new pg.Client({ connectionString: adminUrl.toString() });
  await stats.connect();
  const after: Run[] = [];
  const before: Run[] = [];
  const loads: number[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      // Interleaved, so drift on a shared machine falls on both sides alike.
      after.push(await measure(stack, stats, db, process.cwd()));
      if (BASELINE) before.push(await measure(stack, stats, db, path.resolve(BASELINE)));
      loads.push(loadavg()[0]!);
      console.error(
        `run ${i + 1}/${RUNS}: ${JSON.stringify({ after: after.at(-1), before: before.at(-1) })}`,
      );
    }
  } finally {
    await stats.end();
    await stack.close();
  }
  const figures = (runs: Run[]) => ({
    queries_per_s: runs.length ? median(runs.map((r) => r.queriesPerS)) : null,
    web_cpu_pct: runs.length ? median(runs.map((r) => r.webCpuPct)) : null,
    web_peak_mib: runs.length ? Math.max(...runs.map((r) => r.webPeakMiB)) : null,
  });
  printReport({
    bench: 'streams',
    settings: { streams: STREAMS, jobs: JOBS, window_s: WINDOW_S, runs: RUNS, load_avg_1m: median(loads) },
    figures: figures(after),
    baseline: figures(before),
    target: { queries_per_s: { max: 1 } },
  });
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
