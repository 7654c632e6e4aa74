// Postgres is the truth: a job accepted while Redis is down runs once Redis is back (through the
// sweeper); with Postgres down the API answers 503 rather than accepting what it cannot keep.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../shared/platform/db/knex';
import { Queues } from '../../shared/platform/queues';
import { createRedis } from '../../shared/platform/redis';
import { sweepTargets } from '../../workers/main';
import { Sweeper } from '../../workers/sweeper';
import { logger } from '../../shared/platform/log';
import { captureLogs } from '../logs';
import { eventually, sha256Of, testApp, testJobsWorker, waitForJob } from '../helpers';
import type { TestApp } from '../helpers';

let live: TestApp;
beforeAll(() => {
  live = testApp();
});
afterAll(() => live.close());

describe('Redis unavailable at createJob', () => {
  it('accepts the job into Postgres, and the sweeper runs it once Redis is back', async () => {
    const deadRedis = createRedis('api', 'redis://127.0.0.1:1');
    const down = testApp({ redis: deadRedis, queues: new Queues(deadRedis, live.deps.queues.prefix) });
    try {
      const digest = await sha256Of('redis was down');
      const res = await down.request
        .post('/api/jobs')
        .send({ service: 'attest.timestamp', input: { digest } })
        .expect(202);
      const id = res.body.job.id as string;
      expect(res.body.job.status).toBe('queued');
      expect(await live.deps.queues.get('jobs').getJob(id)).toBeUndefined();

      const sweeper = new Sweeper(live.deps.db, live.deps.queues, live.deps.redis, sweepTargets, {
        intervalMs: 1000,
        graceMs: 0,
      });
      const report = await sweeper.sweep();
      expect(report.requeued).toBeGreaterThanOrEqual(1);
      expect(await live.deps.queues.get('jobs').getJob(id)).toBeDefined();
      // A second sweep does not enqueue it twice: the job id is the row id.
      await sweeper.sweep();
      expect(await live.deps.queues.get('jobs').getJobCounts('waiting')).toMatchObject({ waiting: 1 });

      const worker = testJobsWorker();
      try {
        const done = await waitForJob(live.request, id, res.body.accessToken);
        expect(done.status).toBe('succeeded');
        const succeeded = await live.deps.db('job_events').where({ job_id: id, type: 'succeeded' });
        expect(succeeded).toHaveLength(1);
      } finally {
        await worker.close();
      }
    } finally {
      await down.close();
    }
  });
});

// Before any other test here answers 503: the outage lines are the process logger's, shared by the apps.
describe('the log of an outage', () => {
  it('says it once at warn when the 503s start and once when they stop, never a line per request', async () => {
    const down = testApp({ db: createDb('postgres://postgres@127.0.0.1:1/none') });
    const logs = captureLogs(logger);
    try {
      for (let i = 0; i < 30; i++) {
        const res = await down.request.get('/api/jobs/job_01m7ycenb0y37det98dds34qjx');
        expect(res.status).toBe(503);
        await down.request.get('/api/v1/readiness').expect(503);
      }
      type Line = { level: number; msg: string; code?: string; answered?: number; err?: unknown };
      const read = () => logs.lines.map((l) => JSON.parse(l) as Line);
      const started = read().filter((l) => l.msg === 'answering 503 until the backing service is back');
      expect(started).toHaveLength(1);
      expect(started[0]).toMatchObject({ level: 40, code: 'service_unavailable' });
      // Nothing at error level and no stack anywhere; each request's own line is at debug.
      expect(read().filter((l) => l.level >= 50)).toEqual([]);
      expect(logs.lines.join('\n')).not.toMatch(/"stack"|\n\s+at /);
      expect(read().filter((l) => l.level >= 40)).toHaveLength(1);
      // Quiet for the Retry-After period: one more line, with what was answered.
      const ended = await eventually(
        async () => read().find((l) => l.msg === 'no more 503s: the backing service answers again'),
        10_000,
        100,
      );
      expect(ended).toMatchObject({ level: 40, answered: 60 });
      expect(read().filter((l) => l.level >= 40)).toHaveLength(2);
    } finally {
      logs.stop();
      await down.close();
    }
  }, 20_000);
});

describe('Postgres unavailable', () => {
  it('answers 503 service_unavailable with Retry-After, and health says degraded', async () => {
    const down = testApp({ db: createDb('postgres://postgres@127.0.0.1:1/none') });
    try {
      const digest = await sha256Of('pg down');
      const res = await down.request
        .post('/api/jobs')
        .send({ service: 'attest.timestamp', input: { digest } });
      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
      expect(res.body.code).toBe('service_unavailable');
      expect(res.headers['retry-after']).toBeDefined();
      const status = await down.request.get('/api/jobs/job_01m7ycenb0y37det98dds34qjx');
      expect(status.status).toBe(503);
      const health = await down.request.get('/api/health').expect(200);
      expect(health.body.status).toBe('degraded');
      expect(health.body.checks.db.ok).toBe(false);
      await down.request.get('/api/v1/readiness').expect(503);
    } finally {
      await down.close();
    }
  });
});
