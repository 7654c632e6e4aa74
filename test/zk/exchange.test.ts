// zk.blind_policy on the agent exchange: a held proof is released by a job (paid from a license's prepaid
// credit), proved
// by the prover worker and returned as the job's result; the job's input holds only the proof id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { creditPrepayment } from '../../shared/licensing/entitlements';
import { createJob } from '../../shared/jobs/jobs';
import { closeBlindPolicyStores } from '../../shared/jobs/services/blind-policy';
import { terminateCurves, verifyPolicyProof } from '../../shared/zk/index';
import { expireHeldProofs } from '../../shared/zk/holds';
import { grantLicense, testApp, testJobsWorker, waitForJob } from '../helpers';
import type { TestApp, TestWorker } from '../helpers';
import { dumpDatabase, privateInputs, secretValues, testProofsWorker } from './helpers';
import type { ProofsWorker } from './helpers';

const base = '/api/proof-workflows/blind-policy';
let app: TestApp;
let jobs: TestWorker;
let prover: ProofsWorker;

beforeAll(() => {
  app = testApp();
  jobs = testJobsWorker();
  prover = testProofsWorker(1);
});
afterAll(async () => {
  await jobs.close();
  await prover.close();
  await closeBlindPolicyStores();
  await app.close();
  await terminateCurves();
});

const hold = async (policy: 'range' | 'membership') => {
  const res = await app.request
    .post(`${base}/prove`)
    .send({ policy, inputs: privateInputs[policy], hold: true })
    .expect(202);
  expect(res.body.proof.status).toBe('held');
  expect(res.body.proof.links.purchase).toMatch(/\/api\/jobs$/);
  return res.body.proof.id as string;
};

/** A Business license that pays the job from its prepaid credit, as createJob is given one by its route. */
async function prepaidBy(db: typeof app.deps.db) {
  const licenseId = (await grantLicense(db, 'Business')).id;
  return { licenseId, prepayment: creditPrepayment(licenseId) };
}

describe('zk.blind_policy on the exchange', () => {
  it('is listed with its price', async () => {
    const res = await app.request.get('/api/services').expect(200);
    const service = res.body.services.find((s: { id: string }) => s.id === 'zk.blind_policy');
    expect(service).toMatchObject({ name: 'Blind policy proof', price: { usdCents: 200, free: false } });
  });

  it('waits for payment with only the proof id as input, then proves the held proof', async () => {
    const proofId = await hold('membership');
    const { row: unpaid } = await createJob(app.deps.db, app.deps.queues, {
      service: 'zk.blind_policy',
      input: { proofId },
    });
    expect(unpaid.status).toBe('awaiting_payment');
    expect(unpaid.input).toEqual({ proofId });
    // Nothing happens to a held proof until a job runs.
    expect((await app.deps.db('proofs').where({ id: proofId }).first()).status).toBe('held');

    const { row, accessToken } = await createJob(app.deps.db, app.deps.queues, {
      service: 'zk.blind_policy',
      input: { proofId },
      ...(await prepaidBy(app.deps.db)),
    });
    const job = await waitForJob(app.request, row.id, accessToken, 30_000);
    expect(job.status, JSON.stringify(job)).toBe('succeeded');
    const result = (job as unknown as { result: Record<string, unknown> }).result;
    expect(result).toMatchObject({ proofId, policy: 'membership', backend: 'snarkjs' });
    expect(await verifyPolicyProof('membership', result.proof, result.publicSignals)).toEqual({
      valid: true,
    });

    // A second job naming the same proof is refused: the proof is no longer held.
    const again = await createJob(app.deps.db, app.deps.queues, {
      service: 'zk.blind_policy',
      input: { proofId },
      ...(await prepaidBy(app.deps.db)),
    });
    expect((await waitForJob(app.request, again.row.id, again.accessToken)).status).toBe('failed');

    const dump = await dumpDatabase(app.deps.db);
    for (const value of secretValues('membership')) expect(dump).not.toContain(value);
  });

  it('expires held proofs nobody released: failed, input wiped', async () => {
    const proofId = await hold('range');
    await app.deps
      .db('proofs')
      .where({ id: proofId })
      .update({ hold_expires_at: new Date(Date.now() - 1000) });
    expect(await expireHeldProofs(app.deps.db)).toBe(1);
    const row = await app.deps.db('proofs').where({ id: proofId }).first();
    expect(row).toMatchObject({ status: 'failed', input_sealed: null, error: { code: 'hold_expired' } });
    const job = await createJob(app.deps.db, app.deps.queues, {
      service: 'zk.blind_policy',
      input: { proofId },
      ...(await prepaidBy(app.deps.db)),
    });
    expect((await waitForJob(app.request, job.row.id, job.accessToken)).status).toBe('failed');
  });
});
