// The public verification pages (server-rendered, no JavaScript needed) and the sweeper picking up a
// package whose job was lost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queues } from '../../../shared/platform/queues';
import { createRedis } from '../../../shared/platform/redis';
import { sweepTargets } from '../../../workers/main';
import { Sweeper } from '../../../workers/sweeper';
import { testApp } from '../../helpers';
import type { TestApp } from '../../helpers';
import { drive, prepare, testProver, waitForPackage } from './helpers';
import type { Body, TestProver } from './helpers';

let app: TestApp;
let prover: TestProver;
let done: { workflowId: string; proofId: string; package: Body };

beforeAll(async () => {
  app = testApp();
  prover = testProver();
  const ids = await prepare(app.request, 'Grant Review');
  await drive(app.request, ids.workflowId, 'Grant Review');
  done = { ...ids, package: (await waitForPackage(app.request, ids.proofId)).package };
});
afterAll(async () => {
  await prover.close();
  await app.close();
});

const facts = (html: string) =>
  Object.fromEntries(
    [...html.matchAll(/data-fact="(\w+)"><span class="(yes|no)">/g)].map((m) => [m[1], m[2]]),
  );

describe('/proof-workflows/verify/', () => {
  it('serves the form as HTML', async () => {
    const res = await app.request.get('/proof-workflows/verify/').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html; charset=utf-8/);
    expect(res.text).toContain('<form method="get" action="/proof-workflows/verify/"');
    expect(res.text).toContain('name="proofId"');
    expect(res.text).toContain('name="package"');
    expect(res.text).not.toMatch(/<(script|link|img)[^>]+src=|href="http/);
  });

  it('redirects a submitted proof id to its result page', async () => {
    const res = await app.request.get(`/proof-workflows/verify/?proofId=${done.proofId}`).expect(303);
    expect(res.headers.location).toBe(`/proof-workflows/verify/${done.proofId}/`);
    const bad = await app.request
      .get('/proof-workflows/verify/?proofId=%3Cscript%3Ealert(1)%3C/script%3E')
      .expect(400);
    expect(bad.text).not.toContain('<script>alert');
  });

  it('shows the facts, timeline, chain head, signature and log inclusion — and nothing private', async () => {
    const res = await app.request.get(`/proof-workflows/verify/${done.proofId}/`).expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(facts(res.text)).toEqual({
      existed: 'yes',
      completed: 'yes',
      approvalsMet: 'yes',
      sequenceRespected: 'yes',
      notAltered: 'yes',
    });
    for (const stage of done.package.stages) {
      expect(res.text).toContain(`data-stage="${stage.key}"`);
      expect(res.text).toContain(stage.proofHash);
      expect(res.text).toContain(stage.timestamp);
    }
    expect(res.text).toContain(done.package.chain.head);
    expect(res.text).toContain(done.package.signature);
    expect(res.text).toContain(`Included as leaf ${done.package.log.inclusion.leafIndex}`);
    expect(res.text).not.toContain(done.workflowId);
    expect(res.text).not.toContain('salt');
  });

  it('answers an unknown proof id with a 404 page', async () => {
    for (const id of ['prf_01jd3zzzzzzzzzzzzzzzzzzzzz', 'nope']) {
      const res = await app.request.get(`/proof-workflows/verify/${id}/`).expect(404);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('Proof not found');
    }
  });

  it('verifies a pasted package, and shows why a tampered one fails', async () => {
    const ok = await app.request
      .post('/proof-workflows/verify/')
      .send({ package: JSON.stringify(done.package) })
      .expect(200);
    expect(facts(ok.text).notAltered).toBe('yes');
    const tampered = structuredClone(done.package);
    tampered.stages[0].status = 'rejected';
    tampered.subject.template = 'Grant Review<script>alert(1)</script>';
    const bad = await app.request
      .post('/proof-workflows/verify/')
      .send({ package: JSON.stringify(tampered) })
      .expect(200);
    expect(facts(bad.text)).toMatchObject({ existed: 'no', notAltered: 'no' });
    expect(bad.text).not.toContain('<script>alert');
    const junk = await app.request
      .post('/proof-workflows/verify/')
      .send({ package: '{not json' })
      .expect(400);
    expect(junk.text).toContain('not valid JSON');
  });

  it('verifies a pasted package posted as a plain HTML form (no scripts)', async () => {
    const res = await app.request
      .post('/proof-workflows/verify/')
      .type('form')
      .send({ package: JSON.stringify(done.package) })
      .expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(facts(res.text).notAltered).toBe('yes');
  });
});

describe('the sweeper', () => {
  it('re-enqueues a package whose job was lost, and the prover logs it once', async () => {
    await prover.worker.pause();
    const ids = await prepare(app.request, 'Vendor Onboarding');
    await drive(app.request, ids.workflowId, 'Vendor Onboarding');
    const redis = createRedis('api');
    const queues = new Queues(redis);
    try {
      await queues.get('proofs').remove(ids.proofId);
      expect(await queues.get('proofs').getJob(ids.proofId)).toBeUndefined();
      await new Promise((r) => setTimeout(r, 250)); // past the sweeper's grace period
      const report = await new Sweeper(app.deps.db, queues, redis, sweepTargets).sweep();
      expect(report.requeued).toBeGreaterThanOrEqual(1);
      expect(await queues.get('proofs').getJob(ids.proofId)).toBeDefined();
    } finally {
      prover.worker.resume();
      await queues.close();
      redis.disconnect();
    }
    const v = await waitForPackage(app.request, ids.proofId);
    expect(v).toMatchObject({ notAltered: true, completed: true, inclusionValid: true });
  });
});
