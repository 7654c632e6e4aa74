// Benchmark stack: a fresh database on the resolved Postgres, the resolved Redis, and child processes.
// A Procfile process (web, worker, prover, release) runs as production runs it: plain node on the build
// in dist/, made afresh when the stack starts (BENCH_SOURCES=1: through tsx, as npm start runs them);
// a bench's own helpers (bare baselines, fake chains) run through tsx.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { Pool } from 'undici';
import { createDb } from '../shared/platform/db/knex';
import { resolvePostgres } from '../dev/stack/postgres';
import { resolveRedis } from '../dev/stack/redis';
import { release } from '../workers/release';
import { buildDist, processEntries } from '../scripts/build';

export interface BenchStack {
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
  spawn(entry: string, env?: Record<string, string>): ChildProcess;
  close(): Promise<void>;
}

export async function benchStack(): Promise<BenchStack> {
  const fromSources = process.env.BENCH_SOURCES === '1';
  if (!fromSources) await buildDist({ quiet: true });
  const pgInfo = await resolvePostgres();
  const redisInfo = await resolveRedis();
  const name = `px_bench_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: pgInfo.url });
  await admin.connect();
  await admin.query(`create database "${name}"`);
  const url = new URL(pgInfo.url);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  const db = createDb(databaseUrl, { poolMax: 2 });
  await release(db);
  await db.destroy();
  const prefix = `pxb_${Date.now().toString(36)}`;
  const children: ChildProcess[] = [];
  let closing = false;
  return {
    databaseUrl,
    redisUrl: redisInfo.url,
    prefix,
    spawn(entry, extra = {}) {
      // BENCH_CPU_PROF=<dir>: each child writes a V8 CPU profile there when it exits.
      const prof = process.env.BENCH_CPU_PROF
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
        : [];
      const built = !fromSources && processEntries.includes(entry);
      const run = built
        ? ['--enable-source-maps', `dist/${entry.replace(/\.ts$/, '.js')}`]
        : ['--import', 'tsx', entry];
      const child = spawn(process.execPath, [...prof, ...run], {
        env: {
          ...process.env,
          DATABASE_URL: databaseUrl,
          REDIS_URL: redisInfo.url,
          QUEUE_PREFIX: prefix,
          LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
          ...extra,
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      // A child that ends before the bench does (its port taken by a process an earlier, killed bench
      // left behind; a failed start) ends the bench: its figures would be of something else. One the
      // bench stops itself (child.kill) is not that.
      child.once('exit', (code, signal) => {
        if (closing || child.killed) return;
        console.error(`bench: ${entry} exited (${signal ?? code}) before the bench ended`);
        process.exit(1);
      });
      children.push(child);
      return child;
    },
    async close() {
      closing = true;
      await Promise.all(
        children.map(
          (c) =>
            new Promise<void>((r) =>
              c.exitCode !== null ? r() : (c.once('exit', () => r()), c.kill('SIGTERM')),
            ),
        ),
      );
      // BENCH_KEEP_DB=1 leaves the database for a look at what the run wrote (its name is printed).
      if (process.env.BENCH_KEEP_DB === '1') console.log(`bench database kept: ${name}`);
      else await admin.query(`drop database if exists "${name}" with (force)`);
      await admin.end();
      await redisInfo.stop();
      await pgInfo.stop();
    },
  };
}

/** The nearest-rank percentile of sorted values: p99 of 100 is the 99th, not the largest. */
export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** Runs fn over items with at most `concurrency` in flight; returns each call's latency in ms. */
export async function pool<T>(
  items: T[],
  concurrency: number,
  fn: (item: T) => Promise<void>,
): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const item = items[next++]!;
        const t = performance.now();
        await fn(item);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return latencies.sort((a, b) => a - b);
}

/**
 * A lean keep-alive HTTP client for the benchmarks: the client shares the machine with the service,
 * so it should spend as little CPU per request as it can (fetch costs several times more).
 */
/**
 * An HTTP client over `sockets` keep-alive connections: node:http's agent (BENCH_CLIENT=node, the
 * default), or undici's pool (BENCH_CLIENT=undici), which drives a server as a load balancer or a busy
 * client does, at a rate node:http's client itself cannot reach on a small host.
 */
export function benchClient(base: string, sockets: number, headers: Record<string, string> = {}) {
  return process.env.BENCH_CLIENT === 'undici'
    ? undiciClient(base, sockets, headers)
    : httpClient(base, sockets, headers);
}

export function undiciClient(base: string, connections: number, headers: Record<string, string> = {}) {
  const client = new Pool(base, { connections, pipelining: 1 });
  return async (
    method: 'GET' | 'POST',
    path: string,
    body?: string,
    also: Record<string, string> = {},
  ): Promise<{ status: number; body: string }> => {
    const res = await client.request({
      method,
      path,
      headers: body ? { ...headers, ...also, 'content-type': 'application/json' } : { ...headers, ...also },
      ...(body !== undefined ? { body } : {}),
    });
    return { status: res.statusCode, body: await res.body.text() };
  };
}

export function httpClient(base: string, sockets: number, headers: Record<string, string> = {}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  const url = new URL(base);
  return (
    method: 'GET' | 'POST',
    path: string,
    body?: string,
    also: Record<string, string> = {},
  ): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = http.request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method,
          path,
          headers: body
            ? {
                ...headers,
                ...also,
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(body),
              }
            : { ...headers, ...also },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
}

/** Peak resident memory of a process so far (VmHWM), in MiB; NaN off Linux or for a process gone. */
export function peakMiB(pid: number | undefined): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** CPU time (user + system) a process has used so far, in ms; Linux only, else NaN. */
export function cpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in USER_HZ ticks
  } catch {
    return NaN;
  }
}

/**
 * CPU time the whole host has been busy so far (every core: user, nice, system, irq, softirq, steal;
 * not idle or iowait), in ms; Linux only, else NaN. Over a phase, against the wall time, it says how
 * many cores were busy: near the host's count, the host itself is what bounds the rate.
 */
export function hostBusyMs(): number {
  try {
    const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
    // user nice system idle iowait irq softirq steal, in USER_HZ ticks.
    const [user, nice, system, , , irq, softirq, steal] = ticks.map(Number) as number[];
    return ((user! + nice! + system! + irq! + softirq! + steal!) * 1000) / 100;
  } catch {
    return NaN;
  }
}

/**
 * Waits until the processes are idle: under `busyMs` of CPU between them over `windowMs`, or `maxMs`
 * at most (and at once off Linux). What a child does as it starts — a prover loading its keys and
 * building tables — must not overlap a measurement. Resolves to the ms it waited.
 */
export async function settled(
  pids: number[],
  { windowMs = 500, busyMs = 25, maxMs = 60_000 } = {},
): Promise<number> {
  const start = performance.now();
  const total = () => pids.reduce((a, p) => a + cpuMs(p), 0);
  let last = total();
  while (Number.isFinite(last) && performance.now() - start < maxMs) {
    await new Promise((r) => setTimeout(r, windowMs));
    const now = total();
    if (now - last < busyMs) break;
    last = now;
  }
  return performance.now() - start;
}

export type CpuSnapshot = Record<string, Map<number, number>>;

/**
 * CPU ms so far per process role, summed over the role's processes, from /proc (NaN off Linux): the
 * given roles, the Postgres backends serving the client's database, and this process (`driver`).
 */
export async function cpuByRole(roles: Record<string, number[]>, db: pg.Client): Promise<CpuSnapshot> {
  const { rows } = await db.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
  );
  const all: Record<string, number[]> = { ...roles, postgres: rows.map((r) => r.pid) };
  const out: CpuSnapshot = {};
  for (const [role, pids] of Object.entries(all)) out[role] = new Map(pids.map((p) => [p, cpuMs(p)]));
  const self = process.cpuUsage();
  out.driver = new Map([[process.pid, (self.user + self.system) / 1000]]);
  return out;
}

/** CPU ms per operation and role between two snapshots (a process that appeared in between counts from 0). */
export function cpuPerOp(before: CpuSnapshot, after: CpuSnapshot, ops: number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after).map(([role, pids]) => {
      let ms = 0;
      for (const [pid, end] of pids) ms += end - (before[role]?.get(pid) ?? 0);
      return [role, ms / ops];
    }),
  );
}
