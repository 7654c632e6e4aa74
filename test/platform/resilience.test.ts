// Postgres is the truth: a job accepted while Redis is down runs once Redis is back (through the
// sweeper); with Postgres down the API answers 503 rather than accepting what it cannot keep.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../shared/platform/db/knex';
import { Queues } from '../../shared/platform/queues';
import { createRedis } from '../../shared/platform/redis';
import { sweepTargets } from '../../workers/main';
import { Sweeper } from '../../workers/sweeper';
import { sha256Of, testApp, testJobsWorker, waitForJob } from '../helpers';
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
