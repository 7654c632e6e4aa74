// Scale-out on a real Redis Cluster: two `web` and three `worker` processes (as the Procfile runs
// them) against three masters on loopback, a few thousand jobs through both webs, one worker
// SIGKILLed while it holds jobs; every job still succeeds exactly once.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../shared/platform/crypto';
import { createDb } from '../../shared/platform/db/knex';
import type { Db } from '../../shared/platform/db/knex';
import { freePort } from '../../dev/stack/redis';
import { findProgram, startLocalCluster } from '../../dev/stack/redis-cluster';
import type { LocalCluster } from '../../dev/stack/redis-cluster';
import { parseEnv } from '../../shared/platform/env';
import { jobEventsChannel } from '../../shared/jobs/notify';
import { createRedis } from '../../shared/platform/redis';
import type { RedisClient } from '../../shared/platform/redis';
import { eventually } from '../helpers';
import { newWallet } from '../exchange/fixtures';
import type { ProcessType } from '../processes';
import { processArgs } from '../processes';

const JOBS = 2000;
const IN_FLIGHT = 32;
const TOKEN = 'op_cluster_token_0123456789';
const missing = ['redis-server', 'redis-cli'].filter((p) => !findProgram(p));
if (missing.length) console.warn(`cluster scale-out test skipped: ${missing.join(' and ')} not on the PATH`);

interface Proc {
  child: ChildProcess;
  output: string[];
}

let cluster: LocalCluster;
let client: RedisClient;
let subscriber: RedisClient;
const hints = new Map<string, number>();
let queue: Queue;
let db: Db;
const prefix = `{pxc_${randomBytes(4).toString('hex')}}`;
const webs: Array<Proc & { base: string }> = [];
const workers: Proc[] = [];

function start(type: ProcessType, extra: Record<string, string>): Proc {
  const child = spawn(process.execPath, processArgs(type), {
    env: {
      ...process.env,
      VITEST: '',
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: cluster.nodes,
      QUEUE_PREFIX: prefix,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      OPERATOR_TOKEN: TOKEN,
      // Rate limits stay on, counted in the cluster: high for the load, low per key for the check below.
      RATE_LIMIT_IP_PER_MINUTE: '1000000',
      RATE_LIMIT_KEY_PER_MINUTE: '6',
      WORKER_CONCURRENCY: '16',
      WORKER_LOCK_DURATION_MS: '2000',
      KEEP_COMPLETED_JOBS: String(JOBS * 2),
      ...extra,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 50) output.shift();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, output };
}

async function stop(p: Proc): Promise<void> {
  const { child } = p;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

const logs = () =>
  [...webs, ...workers].map((p, i) => `--- process ${i}\n${p.output.join('').slice(-2000)}`).join('\n');

describe.skipIf(missing.length > 0)('scale-out on a three-master Redis Cluster', () => {
  beforeAll(async () => {
    cluster = await startLocalCluster(3);
    const seeds = parseEnv({ REDIS_CLUSTER_NODES: cluster.nodes, QUEUE_PREFIX: prefix }).REDIS_CLUSTER_NODES!;
    client = createRedis('worker', { cluster: seeds });
    queue = new Queue('jobs', { connection: client, prefix });
    // Job hints published by any process must reach a subscriber anywhere on the cluster.
    subscriber = createRedis('worker', { cluster: seeds });
    subscriber.on('message', (_channel: string, jobId: string) =>
      hints.set(jobId, (hints.get(jobId) ?? 0) + 1),
    );
    await subscriber.subscribe(jobEventsChannel(prefix));
    db = createDb(undefined, { poolMax: 2 });
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      webs.push({ ...start('web', { PORT: String(port) }), base: `http://127.0.0.1:${port}` });
    }
    for (let i = 0; i < 3; i++) workers.push(start('worker', {}));
    await eventually(
      async () => {
        const up = await Promise.all(
          webs.map((w) =>
            fetch(`${w.base}/api/health`).then(
              (r) => r.ok,
              () => false,
            ),
          ),
        );
        return up.every(Boolean) && (await queue.getWorkersCount()) >= workers.length;
      },
      100_000,
      100,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${logs()}`);
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled([...webs, ...workers].map(stop));
    await queue?.close();
    client?.disconnect();
    subscriber?.disconnect();
    await db?.destroy();
    await cluster?.stop();
  }, 30_000);

  it('runs every job exactly once through two webs and three workers, one SIGKILLed midway', async () => {
    const victim = workers[0]!;
    const victimName = new RegExp(`:${victim.child.pid}$`);
    const ids: string[] = [];
    let held: string[] = [];
    let killed = false;
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async (_, lane) => {
        const web = webs[lane % webs.length]!;
        while (next < JOBS) {
          const i = next++;
          const res = await fetch(`${web.base}/api/jobs`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              service: 'attest.timestamp',
              input: { digest: sha256Hex(`cluster ${i}`) },
            }),
          });
          expect(res.status).toBe(202);
          ids.push(((await res.json()) as { job: { id: string } }).job.id);
          // Midway, the first worker dies holding jobs: frozen, so what it holds stays held, then killed.
          if (lane === 0 && i >= JOBS / 2 && !killed) {
            victim.child.kill('SIGSTOP');
            const holding = (await queue.getActive(0, 500)).filter((j) =>
              victimName.test(j.processedBy ?? ''),
            );
            if (!holding.length) {
              victim.child.kill('SIGCONT');
              continue;
            }
            const died = new Promise((r) => victim.child.once('exit', r));
            victim.child.kill('SIGKILL');
            killed = true;
            await died;
            // What it held while frozen: a job it had finished just before the stop (its reply in flight)
            // is done; every other one must be handed on. Read from the frozen view, not after the kill:
            // under load the stalled check may already have handed them on by then.
            held = holding.map((j) => j.id!);
          }
        }
      }),
    );
    expect(held.length, 'the victim died holding no job').toBeGreaterThan(0);
    expect(ids).toHaveLength(JOBS);

    await eventually(
      async () => {
        const { rows } = await db.raw(`select count(*)::int n from jobs where status = 'succeeded'`);
        return (rows as Array<{ n: number }>)[0]!.n === JOBS;
      },
      45_000,
      100,
    ).catch(async (err: Error) => {
      const { rows } = await db.raw(`select status, count(*)::int n from jobs group by status`);
      throw new Error(`${err.message}: ${JSON.stringify(rows)}\n${logs()}`);
    });

    // Postgres: every job one row, succeeded, with a result, and exactly one success event.
    const { rows: states } = await db.raw(
      `select status, count(*)::int n, count(result)::int results from jobs where id = any(?) group by status`,
      [ids],
    );
    expect(states).toEqual([{ status: 'succeeded', n: JOBS, results: JOBS }]);
    const { rows: events } = await db.raw(
      `select count(*) filter (where type = 'succeeded')::int succeeded,
              count(distinct job_id) filter (where type = 'succeeded')::int jobs,
              count(*) filter (where type in ('failed', 'retrying'))::int failures
         from job_events where job_id = any(?)`,
      [ids],
    );
    expect(events).toEqual([{ succeeded: JOBS, jobs: JOBS, failures: 0 }]);

    // Job hints crossed the cluster's pub/sub from both kinds of process: each job's creation (web) and
    // its claim (worker). Hints are best effort: a job the killed worker held may have lost its claim's
    // hint (frozen between the claim's write and its publish; the survivor's take-over claims a row
    // already running), so of those only the creation's is required.
    const victims = new Set(held);
    const unhinted = () => ids.filter((id) => (hints.get(id) ?? 0) < (victims.has(id) ? 1 : 2));
    await eventually(async () => unhinted().length === 0, 5_000, 50).catch(() => undefined);
    expect(unhinted()).toEqual([]);

    // BullMQ acknowledges each job just after its row is written: let the last acknowledgements land.
    const settled = { completed: JOBS, failed: 0, active: 0, waiting: 0, delayed: 0 };
    const counts = () => queue.getJobCounts('completed', 'failed', 'active', 'waiting', 'delayed');
    await eventually(
      async () => JSON.stringify(await counts()) === JSON.stringify(settled),
      10_000,
      100,
    ).catch(() => undefined);

    // The jobs the dead worker held finished once; those it had not finished before the stop were
    // handed on as stalled and completed by a survivor.
    let handedOn = 0;
    for (const id of held) {
      const job = await queue.getJob(id);
      expect(job?.finishedOn, `job ${id} finished in BullMQ`).toBeTruthy();
      if (victimName.test(job!.processedBy ?? '')) continue;
      expect(job!.stalledCounter).toBeGreaterThanOrEqual(1);
      handedOn += 1;
    }
    expect(handedOn, 'a job the victim held was handed on').toBeGreaterThan(0);
    // BullMQ's side: one completion per job, none failed, and every worker process took part.
    expect(await counts()).toEqual(settled);
    const completed = await queue.getCompleted(0, JOBS);
    const byProcess = new Set(completed.map((j) => j.processedBy?.split(':').pop()));
    expect(byProcess).toEqual(new Set(workers.map((w) => String(w.child.pid))));
  }, 120_000);

  it('keeps each queue in one slot and the webs healthy on the cluster', async () => {
    const slotsWithQueueKeys = new Set<number>();
    for (const port of cluster.ports) {
      const node = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
      try {
        let cursor = '0';
        do {
          const [nextCursor, keys] = await node.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 10_000);
          cursor = nextCursor;
          for (const key of keys) slotsWithQueueKeys.add(Number(await node.call('CLUSTER', 'KEYSLOT', key)));
        } while (cursor !== '0');
      } finally {
        node.disconnect();
      }
    }
    expect(slotsWithQueueKeys.size).toBe(1);

    for (const web of webs) {
      const health = (await (await fetch(`${web.base}/api/health`)).json()) as {
        checks: { redis: { ok: boolean }; queues: { ok: boolean } };
      };
      expect(health.checks.redis).toMatchObject({ ok: true });
      expect(health.checks.queues).toEqual({ ok: true });
      // The queues' counts are read on the cluster for /metrics alone.
      const metrics = await (await fetch(`${web.base}/metrics`)).text();
      expect(metrics).toMatch(/^px_queue_jobs\{queue="jobs",state="waiting"\} 0$/m);
      const board = await fetch(`${web.base}/admin/queues/api/redis/stats`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(board.status).toBe(200);
      expect(((await board.json()) as { mode: string }).mode).toBe('cluster');
    }
  });

  it('shares one rate limit across both webs: the caller over it is refused by either', async () => {
    // A per-credential bucket is kept only for a credential that authenticates: a registered agent's key.
    const wallet = newWallet();
    const registered = await fetch(`${webs[0]!.base}/api/registry/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'rate probe', walletPublicKey: wallet.publicKey }),
    });
    expect(registered.status).toBe(201);
    const key = ((await registered.json()) as { apiKey: string }).apiKey;
    const get = (i: number) =>
      fetch(`${webs[i % 2]!.base}/api/services`, { headers: { authorization: `Bearer ${key}` } });
    for (let i = 0; i < 6; i++) expect((await get(i)).status).not.toBe(429);
    for (let i = 0; i < 2; i++) {
      const refused = await get(i);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await refused.json()) as { code: string }).code).toBe('rate_limited');
    }
  });
});
