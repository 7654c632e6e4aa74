// A worker killed with SIGKILL mid-job loses nothing and doubles nothing: the stalled jobs are handed
// to the next worker and each completes exactly once.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../shared/platform/crypto';
import { createJob } from '../../shared/jobs/jobs';
import { eventually, testApp, testQueueWorker } from '../helpers';
import { jobsProcessor } from '../../workers/processors/jobs';
import type { TestApp } from '../helpers';
import { processArgs } from '../processes';

let app: TestApp;
const children: ChildProcess[] = [];

function startWorkerProcess(extra: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, processArgs('worker'), {
    env: { ...process.env, WORKER_CONCURRENCY: '16', SWEEP_INTERVAL_MS: '60000', ...extra },
    stdio: 'ignore',
  });
  children.push(child);
  return child;
}

beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await app.close();
});

const count = async (where: Record<string, string>) =>
  Number((await app.deps.db('jobs').where(where).count({ n: '*' }))[0]!.n);

describe('SIGKILL mid-job', () => {
  it('completes every job exactly once after the worker dies holding jobs', async () => {
    const total = 400;
    const ids: string[] = [];
    for (let i = 0; i < total; i++) {
      const { row } = await createJob(app.deps.db, app.deps.queues, {
        service: 'attest.timestamp',
        input: { digest: sha256Hex(`crash ${i}`) },
      });
      ids.push(row.id);
    }
    // Kill a worker the moment it holds claimed, unfinished work. A fast job can still finish between
    // the look and the kill, leaving nothing mid-job: then a worker is started and killed again.
    let leftRunning: string[] = [];
    for (let attempt = 0; attempt < 3 && leftRunning.length === 0; attempt++) {
      const worker = startWorkerProcess();
      const runningAtKill = await eventually(
        async () => {
          const running = await count({ status: 'running' });
          if (running > 0) {
            worker.kill('SIGKILL');
            return running;
          }
          return (await count({ status: 'succeeded' })) === total ? -1 : 0;
        },
        30_000,
        2,
      );
      expect(runningAtKill, 'the worker finished everything before it could be killed').toBeGreaterThan(0);
      await new Promise((r) => worker.once('exit', r));
      // A statement the worker sent just before it died still runs to its end in Postgres (a completion
      // among them): what it held is read once nothing of it runs there any more. Nothing else uses this
      // file's database now.
      await eventually(
        async () =>
          Number(
            (
              await app.deps.db.raw(
                `select count(*) as n from pg_stat_activity
                  where datname = current_database() and state <> 'idle' and pid <> pg_backend_pid()`,
              )
            ).rows[0].n,
          ) === 0,
        10_000,
        20,
      );
      leftRunning = await app.deps.db('jobs').where({ status: 'running' }).pluck('id');
    }
    expect(leftRunning.length).toBeGreaterThan(0);

    startWorkerProcess();
    await eventually(async () => (await count({ status: 'succeeded' })) === total, 60_000, 100);

    const succeededEvents = await app.deps
      .db('job_events')
      .where({ type: 'succeeded' })
      .whereIn('job_id', ids)
      .select('job_id')
      .count({ n: '*' })
      .groupBy('job_id');
    expect(succeededEvents).toHaveLength(total);
    expect(succeededEvents.every((r) => Number(r.n) === 1)).toBe(true);
    // The jobs the dead worker held were claimed again and still have one result each.
    const reclaimed = await app.deps
      .db('job_events')
      .where({ type: 'running' })
      .whereIn('job_id', leftRunning)
      .count({ n: '*' });
    expect(Number(reclaimed[0]!.n)).toBeGreaterThanOrEqual(leftRunning.length * 2);
    const results = await app.deps.db('jobs').whereIn('id', leftRunning).select('result', 'status');
    expect(results.every((r) => r.status === 'succeeded' && r.result.signature)).toBe(true);
  }, 120_000);
});

describe('a SIGKILLed worker: its jobs', () => {
  it('run again on another worker within one WORKER_LOCK_DURATION_MS', async () => {
    const lockMs = 4000;
    // The workers of the test above stop first: the one killed here is alone with these jobs.
    await Promise.all(
      children
        .filter((c) => c.exitCode === null && c.signalCode === null)
        .map((c) => new Promise((r) => c.once('exit', r).kill('SIGTERM'))),
    );
    const queue = app.deps.queues.get('jobs');
    const ids: string[] = [];
    for (let i = 0; i < 400; i++) {
      const { row } = await createJob(app.deps.db, app.deps.queues, {
        service: 'attest.timestamp',
        input: { digest: sha256Hex(`lock period ${i}`) },
      });
      ids.push(row.id);
    }
    // A worker killed while it holds jobs. Its status writes are group-committed, so the rows it was
    // seen running may all have been written done by the time the signal lands: then another worker
    // is killed, until one dies holding jobs.
    let killedAt = 0;
    let held: string[] = [];
    for (let attempt = 0; attempt < 5 && held.length === 0; attempt++) {
      const doomed = startWorkerProcess({ WORKER_LOCK_DURATION_MS: String(lockMs) });
      killedAt = await eventually(
        async () => {
          const running = await app.deps.db('jobs').whereIn('id', ids).where({ status: 'running' }).first();
          if (!running) return undefined;
          doomed.kill('SIGKILL');
          return Date.now();
        },
        60_000,
        2,
      );
      await new Promise((r) => doomed.once('exit', r));
      held = await app.deps.db('jobs').whereIn('id', ids).where({ status: 'running' }).pluck('id');
    }
    expect(held.length).toBeGreaterThan(0);
    // The survivor starts at once, in this process, with the same period.
    const survivor = testQueueWorker('jobs', jobsProcessor, { lockDurationMs: lockMs });
    try {
      const rerun = await eventually(
        async () => {
          const jobs = await Promise.all(held.map((id) => queue.getJob(id)));
          if (!jobs.every((j) => j?.finishedOn)) return undefined;
          return jobs.map((j) => j!.processedOn! - killedAt);
        },
        30_000,
        50,
      );
      // Each was taken again within the period (at most 5/6 of it: workers/pool.ts, lockTimings).
      expect(Math.max(...rerun)).toBeLessThanOrEqual(lockMs);
      const rows = await app.deps.db('jobs').whereIn('id', held).select('status');
      expect(rows.every((r) => r.status === 'succeeded')).toBe(true);
    } finally {
      await survivor.close();
    }
  }, 120_000);
});
