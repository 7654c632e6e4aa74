// A job that reports progress ends at 100 in its queue, as its row does: Bull Board shows a finished
// job full, not at its last report (a small attest.batch reports 10, then 30, then is done).
import { afterAll, describe, expect, it } from 'vitest';
import { sha256Of, testApp, testJobsWorker, waitForJob, grantLicense } from '../helpers';

const app = testApp();
const worker = testJobsWorker();
afterAll(async () => {
  await worker.close();
  await app.close();
});

describe('a finished job in its queue', () => {
  it('is at 100 once it succeeded, after reporting less on the way', async () => {
    // Paid from a license's credit, so it runs at once.
    const license = await grantLicense(app.deps.db, 'Business');
    const created = await app.request
      .post('/api/jobs')
      .set(license.auth)
      .send({ service: 'attest.batch', input: { digests: [await sha256Of('a'), await sha256Of('b')] } });
    expect([201, 202], JSON.stringify(created.body)).toContain(created.status);
    const id = created.body.job.id as string;
    expect((await waitForJob(app.request, id, license.token)).status).toBe('succeeded');
    expect(Number((await app.deps.db('jobs').where({ id }).first()).progress)).toBe(100);
    const queued = await app.deps.queues.get('jobs').getJob(id);
    expect(await queued!.getState()).toBe('completed');
    expect(queued!.progress).toBe(100);
  });
});
