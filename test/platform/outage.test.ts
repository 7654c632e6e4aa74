// An outage of our own infrastructure never fails a user's job: with Postgres unreachable for longer
// than a job's whole attempt budget, every job waits and then succeeds exactly once, and the outage
// spends none of its attempts. The background loops tell the outage once, not a line a round.
import { UnrecoverableError, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJob } from '../../shared/jobs/jobs';
import { sha256Hex } from '../../shared/platform/crypto';
import { createDb } from '../../shared/platform/db/knex';
import { env } from '../../shared/platform/env';
import { logger } from '../../shared/platform/log';
import { Queues } from '../../shared/platform/queues';
import type { Payload, QueueName } from '../../shared/platform/queues';
import { createRedis } from '../../shared/platform/redis';
import { startLogSequencer } from '../../shared/platform/translog/sequencer';
import { OutageBackoff, startWorker } from '../../workers/pool';
import { sweepTargets } from '../../workers/main';
import { jobsProcessor } from '../../workers/processors/jobs';
import { Sweeper } from '../../workers/sweeper';
import { eventually, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { captureLogs } from '../logs';
import { tcpProxy } from '../proxy';
import type { TcpProxy } from '../proxy';

let app: TestApp;
let pg: TcpProxy;
beforeAll(async () => {
  app = testApp();
  pg = await tcpProxy(Number(new URL(env.DATABASE_URL!).port || 5432));
});
afterAll(async () => {
  await pg.close();
  await app.close();
});

const count = async (ids: string[], status: string) =>
  Number((await app.deps.db('jobs').whereIn('id', ids).where({ status }).count({ n: '*' }))[0]!.n);

describe('Postgres unreachable for longer than the attempt budget', () => {
  it('holds every job back without spending attempts, then runs each exactly once', async () => {
    const total = 300;
    // The whole attempt budget: the backoff before each retry (JOB_BACKOFF_MS, doubling).
    const budgetMs = Array.from(
      { length: env.JOB_ATTEMPTS - 1 },
      (_, i) => env.JOB_BACKOFF_MS * 2 ** i,
    ).reduce((a, b) => a + b, 0);
    const outageMs = Math.max(2000, 3 * budgetMs);

    const db = createDb(pg.url(env.DATABASE_URL!), { poolMax: 4 });
    const redis = createRedis('worker');
    const worker = startWorker('jobs', jobsProcessor(db), redis, {
      concurrency: 16,
      outage: new OutageBackoff(50, 400),
    });
    try {
      await worker.waitUntilReady();
      await pg.cut();
      const ids: string[] = [];
      for (let i = 0; i < total; i++) {
        const { row } = await createJob(app.deps.db, app.deps.queues, {
          service: 'attest.timestamp',
          input: { digest: sha256Hex(`outage ${i}`) },
        });
        ids.push(row.id);
      }
      const queue = app.deps.queues.get('jobs');
      // The worker keeps taking jobs during the outage and holds each back.
      await eventually(async () => {
        const jobs = await queue.getJobs(['delayed', 'wait', 'active']);
        return jobs.filter((j) => j.attemptsStarted > 1).length >= 16;
      }, 10_000);
      const started = Date.now();
      await new Promise((r) => setTimeout(r, outageMs - (Date.now() - started)));
      expect(await queue.getJobCountByTypes('failed')).toBe(0);
      expect(await count(ids, 'succeeded')).toBe(0);
      await pg.restore();

      await eventually(async () => (await count(ids, 'succeeded')) === total, 60_000, 100);
      await eventually(async () => (await queue.getJobCountByTypes('completed')) === total, 10_000, 50);
      expect(await count(ids, 'failed')).toBe(0);
      expect(await queue.getJobCountByTypes('failed')).toBe(0);
      const succeeded = await app.deps
        .db('job_events')
        .where({ type: 'succeeded' })
        .whereIn('job_id', ids)
        .select('job_id')
        .count({ n: '*' })
        .groupBy('job_id');
      expect(succeeded).toHaveLength(total);
      expect(succeeded.every((r) => Number(r.n) === 1)).toBe(true);
      // attemptsMade counts the one run that finished; the held-back runs are not attempts.
      const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
      expect(jobs.every((j) => j?.finishedOn)).toBe(true);
      expect(jobs.every((j) => j!.attemptsMade === 1)).toBe(true);
      const heldBack = jobs.filter((j) => j!.attemptsStarted > 1).length;
      expect(heldBack).toBeGreaterThanOrEqual(16);
    } finally {
      await worker.close();
      redis.disconnect();
      await db.destroy();
    }
  });
});

describe('Postgres and Redis unreachable together, past the lock', () => {
  it('leaves the jobs in flight to the stalled check, which runs them again without an attempt', async () => {
    const redisProxy = await tcpProxy(Number(new URL(env.REDIS_URL!).port || 6379));
    const db = createDb(pg.url(env.DATABASE_URL!), { poolMax: 4 });
    const redis = createRedis('worker', redisProxy.url(env.REDIS_URL!));
    const queue = app.deps.queues.get('jobs');
    const ids: string[] = [];
    for (let i = 0; i < 300; i++) {
      const { row } = await createJob(app.deps.db, app.deps.queues, {
        service: 'attest.timestamp',
        input: { digest: sha256Hex(`both down ${i}`) },
      });
      ids.push(row.id);
    }
    const lockMs = 1000;
    const worker = startWorker('jobs', jobsProcessor(db), redis, {
      concurrency: 16,
      lockDurationMs: lockMs,
      outage: new OutageBackoff(50, 400),
    });
    try {
      await eventually(async () => (await count(ids, 'succeeded')) >= 20, 30_000, 5);
      await Promise.all([pg.cut(), redisProxy.cut()]);
      // Three lock periods: every lock the worker held has lapsed by the time Redis answers.
      await new Promise((r) => setTimeout(r, 3 * lockMs));
      await Promise.all([pg.restore(), redisProxy.restore()]);
      await eventually(async () => (await count(ids, 'succeeded')) === 300, 60_000, 100);
      const jobs = await eventually(
        async () => {
          const all = await Promise.all(ids.map((id) => queue.getJob(id)));
          return all.every((j) => j?.finishedOn) && all;
        },
        10_000,
        50,
      );
      expect(await count(ids, 'failed')).toBe(0);
      expect(await queue.getJobCountByTypes('failed')).toBe(0);
      expect(jobs.map((j) => j!.attemptsMade).filter((n) => n !== 1)).toEqual([]);
      // Some were in flight when both went: their locks lapsed and the stalled check handed them on.
      expect(jobs.filter((j) => j!.stalledCounter > 0).length).toBeGreaterThan(0);
      const succeeded = await app.deps
        .db('job_events')
        .where({ type: 'succeeded' })
        .whereIn('job_id', ids)
        .select('job_id')
        .count({ n: '*' })
        .groupBy('job_id');
      expect(succeeded.every((r) => Number(r.n) === 1)).toBe(true);
    } finally {
      await worker.close();
      redis.disconnect();
      await db.destroy();
      await redisProxy.close();
    }
  }, 90_000);
});

describe('the sweeper and a job an outage failed', () => {
  it('runs it again instead of marking the row failed; a failure of the job itself is marked', async () => {
    const make = async (text: string) =>
      (
        await createJob(app.deps.db, app.deps.queues, {
          service: 'attest.timestamp',
          input: { digest: sha256Hex(text) },
        })
      ).row.id;
    const byOutage = await make('failed by an outage');
    const byItself = await make('failed by itself');
    // A bare BullMQ worker fails both: one with the error an outage of Postgres gives, one with its own.
    const redis = createRedis('worker');
    const bare = new Worker(
      'jobs',
      async (job) => {
        throw new UnrecoverableError(
          (job.data as { jobId: string }).jobId === byOutage
            ? 'connect ECONNREFUSED 127.0.0.1:5432'
            : 'bad input',
        );
      },
      { connection: redis, prefix: app.deps.queues.prefix },
    );
    const queue = app.deps.queues.get('jobs');
    try {
      await eventually(async () => (await queue.getJobCountByTypes('failed')) === 2);
    } finally {
      await bare.close();
      redis.disconnect();
    }
    const sweeper = new Sweeper(app.deps.db, app.deps.queues, app.deps.redis, sweepTargets, {
      intervalMs: 1000,
      graceMs: 0,
    });
    const report = await sweeper.sweep();
    expect(report.markedFailed).toBe(1);
    expect(report.requeued).toBeGreaterThanOrEqual(1);
    expect(await queue.getJob(byOutage).then((j) => j?.getState())).toBe('waiting');
    const rows = await app.deps.db('jobs').whereIn('id', [byOutage, byItself]).select('id', 'status');
    expect(Object.fromEntries(rows.map((r) => [r.id, r.status]))).toEqual({
      [byOutage]: 'queued',
      [byItself]: 'failed',
    });
  });
});

/** Queues that count their bulk adds: how the test sees one round trip per batch. */
class CountingQueues extends Queues {
  bulks: Array<{ queue: QueueName; n: number }> = [];

  override async enqueueMany<Q extends QueueName>(name: Q, payloads: Payload<Q>[], timeoutMs?: number) {
    if (payloads.length) this.bulks.push({ queue: name, n: payloads.length });
    await super.enqueueMany(name, payloads, timeoutMs);
  }
}

describe('recovery after a Redis outage', () => {
  it('enqueues every stranded row in batches, as soon as Redis answers again', async () => {
    const redisProxy = await tcpProxy(Number(new URL(env.REDIS_URL!).port || 6379));
    const redis = createRedis('api', redisProxy.url(env.REDIS_URL!));
    const queues = new CountingQueues(redis, app.deps.queues.prefix);
    // A period far longer than the test: only Redis's return can start the sweep that recovers.
    const sweeper = new Sweeper(app.deps.db, queues, redis, sweepTargets, {
      intervalMs: 120_000,
      graceMs: 0,
      batchSize: 100,
    });
    sweeper.start();
    try {
      await eventually(async () => (await redis.ping().catch(() => '')) === 'PONG');
      await redisProxy.cut();
      const total = 250;
      const ids: string[] = [];
      for (let i = 0; i < total; i++) {
        // Redis is down: the row is kept and its enqueue left to the sweeper.
        const { row } = await createJob(app.deps.db, queues, {
          service: 'attest.timestamp',
          input: { digest: sha256Hex(`stranded ${i}`) },
        });
        ids.push(row.id);
      }
      const queue = app.deps.queues.get('jobs');
      expect((await Promise.all(ids.map((id) => queue.getJob(id)))).filter(Boolean)).toHaveLength(0);
      queues.bulks = [];
      await redisProxy.restore();
      const restored = Date.now();
      await eventually(
        async () => (await Promise.all(ids.map((id) => queue.getJob(id)))).every(Boolean),
        15_000,
        50,
      );
      expect(Date.now() - restored).toBeLessThan(15_000);
      // One addBulk per batch of 100, and every batch in the one sweep Redis's return started.
      // (Rows of the tests above that are still open share the batches, with live jobs.)
      expect(queues.bulks.every((b) => b.queue === 'jobs' && b.n <= 100)).toBe(true);
      expect(queues.bulks.reduce((n, b) => n + b.n, 0)).toBe(total);
      expect(queues.bulks).toHaveLength(3);
    } finally {
      await sweeper.stop();
      await queues.close();
      redis.disconnect();
      await redisProxy.close();
    }
  });
});

describe('the log of a background loop through an outage', () => {
  it('says the first failed round at warn and the recovery once, never a line a round', async () => {
    const db = createDb(pg.url(env.DATABASE_URL!), { poolMax: 2 });
    const logs = captureLogs(logger);
    const sequencer = startLogSequencer(db, 20);
    type Line = { level: number; msg: string; failedRounds?: number };
    const read = () =>
      logs.lines.map((l) => JSON.parse(l) as Line).filter((l) => l.msg.startsWith('log sequencer round'));
    try {
      await db.raw('select 1'); // the pool reaches Postgres before the cut
      await pg.cut();
      // Fifty rounds or more fail while Postgres is away: one line says so.
      await new Promise((r) => setTimeout(r, 1500));
      await pg.restore();
      const recovered = await eventually(
        async () => read().find((l) => l.msg.endsWith('succeeds again')),
        10_000,
        50,
      );
      expect(recovered).toMatchObject({ level: 30 });
      expect(recovered.failedRounds).toBeGreaterThan(5);
      const lines = read();
      expect(lines.filter((l) => l.level === 40)).toHaveLength(1);
      expect(lines).toHaveLength(2);
      expect(logs.lines.join('\n')).not.toMatch(/"stack"/);
    } finally {
      logs.stop();
      await sequencer.stop();
      await db.destroy();
    }
  }, 30_000);
});
