// The whole path for one real service: createJob → BullMQ → worker → Postgres → jobStatus.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyTimestamp } from '../../shared/jobs/attest';
import type { TimestampAttestation } from '../../shared/jobs/attest';
import { bearer, sha256Of, testApp, testJobsWorker, waitForJob } from '../helpers';
import type { TestApp, TestWorker } from '../helpers';

let app: TestApp;
let worker: TestWorker;

beforeAll(() => {
  app = testApp();
  worker = testJobsWorker();
});
afterAll(async () => {
  await worker.close();
  await app.close();
});

describe('attest.timestamp through the queue', () => {
  it('runs a job to succeeded and the attestation verifies offline with the published key', async () => {
    const digest = await sha256Of('contract v1');
    const created = await app.request
      .post('/api/jobs')
      .send({ service: 'attest.timestamp', input: { digest } })
      .expect(202);
    expect(created.body.job.status).toBe('queued');
    expect(created.headers.location).toMatch(/\/api\/jobs\/job_/);

    const done = await waitForJob(app.request, created.body.job.id, created.body.accessToken);
    expect(done.status).toBe('succeeded');
    expect(done.progress.percent).toBe(100);
    const attestation = done.result as TimestampAttestation;
    expect(attestation.digest).toBe(digest);
    expect(attestation.jobId).toBe(created.body.job.id);

    const health = await app.request.get('/api/health').expect(200);
    const { publicKey, keyId } = health.body.signingKey;
    expect(attestation.keyId).toBe(keyId);
    expect(verifyTimestamp(attestation, publicKey)).toBe(true);
    expect(verifyTimestamp({ ...attestation, digest: await sha256Of('contract v2') }, publicKey)).toBe(false);
    expect(verifyTimestamp({ ...attestation, time: new Date(0).toISOString() }, publicKey)).toBe(false);

    const services = await app.request.get('/api/services').expect(200);
    expect(services.body.signingKey.publicKey).toBe(publicKey);
  });

  it('records each state change once, in order, and streams them as server-sent events', async () => {
    const digest = await sha256Of('events');
    const created = await app.request
      .post('/api/jobs')
      .send({ service: 'attest.timestamp', input: { digest } })
      .expect(202);
    const id = created.body.job.id as string;
    const stream = await app.request
      .get(`/api/jobs/${id}/events`)
      .set(bearer(created.body.accessToken))
      .buffer(true)
      .parse((res, cb) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => cb(null, text));
      });
    expect(stream.headers['content-type']).toMatch(/text\/event-stream/);
    const events = [...(stream.body as string).matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
    expect(events).toEqual(['queued', 'running', 'succeeded']);
  });

  it('long-polls: wait returns as soon as the job ends, and without wait answers at once', async () => {
    const digest = await sha256Of('long poll');
    await worker.worker.pause();
    const created = await app.request
      .post('/api/jobs')
      .send({ service: 'attest.timestamp', input: { digest } })
      .expect(202);
    const id = created.body.job.id as string;
    const auth = bearer(created.body.accessToken);
    const now = await app.request.get(`/api/jobs/${id}`).set(auth).expect(200);
    expect(now.body.job.status).toBe('queued');
    const waiting = app.request.get(`/api/jobs/${id}?wait=20`).set(auth);
    const started = Date.now();
    setTimeout(() => worker.worker.resume(), 300);
    const res = await waiting.expect(200);
    expect(['running', 'succeeded']).toContain(res.body.job.status);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('stores, queues and runs each of many jobs created at once (grouped into shared statements)', async () => {
    const digests = await Promise.all(Array.from({ length: 60 }, (_, i) => sha256Of(`together ${i}`)));
    const created = await Promise.all(
      digests.map((digest) =>
        app.request.post('/api/jobs').send({ service: 'attest.timestamp', input: { digest } }),
      ),
    );
    const ids = created.map((r) => {
      expect(r.status).toBe(202);
      return r.body.job.id as string;
    });
    expect(new Set(ids).size).toBe(60);
    // Each job of a shared statement has a capability of its own.
    const tokens = created.map((r) => r.body.accessToken as string);
    expect(new Set(tokens).size).toBe(60);
    const done = await Promise.all(ids.map((id, i) => waitForJob(app.request, id, tokens[i]!)));
    done.forEach((job, i) => {
      expect(job.status).toBe('succeeded');
      expect((job.result as TimestampAttestation).digest).toBe(digests[i]);
    });
    const events = await app.deps
      .db('job_events')
      .whereIn('job_id', ids)
      .select('type')
      .count({ n: '*' })
      .groupBy('type');
    const byType = events as unknown as Array<{ type: string; n: string }>;
    expect(Object.fromEntries(byType.map((e) => [e.type, Number(e.n)]))).toEqual({
      queued: 60,
      running: 60,
      succeeded: 60,
    });
  });

  it('refuses a wait longer than 30 seconds', async () => {
    const res = await app.request.get('/api/jobs/job_01m7ycenb0y37det98dds34qjx?wait=31').expect(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors[0].path).toBe('query.wait');
  });
});
