// Blind policy proofs end to end over HTTP: prove through the `proofs` queue and a real prover worker,
// verify (and refuse tampered, swapped and foreign proofs), and no private input anywhere after.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBackend, policyIds, terminateCurves } from '../../shared/zk/index';
import { createPolicyProof } from '../../shared/zk/create';
import { proveStoredProof } from '../../shared/zk/proving';
import { loadNativeProver } from '../../native-prover';
import type { PolicyId } from '../../shared/zk/index';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import {
  captureLogs,
  dumpDatabase,
  privateInputs,
  secretValues,
  testProofsWorker,
  waitForProof,
} from './helpers';
import type { ProofBody, ProofsWorker } from './helpers';

const base = '/api/proof-workflows/blind-policy';
let app: TestApp;
let prover: ProofsWorker;
let logs: ReturnType<typeof captureLogs>;
const responses: string[] = [];
const proved = {} as Record<PolicyId, { proof: ProofBody; salts: Record<string, string> }>;

beforeAll(() => {
  logs = captureLogs();
  app = testApp();
  prover = testProofsWorker();
});

afterAll(async () => {
  logs.stop();
  await prover.close();
  await app.close();
  await terminateCurves();
});

const copy = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const count = async () => Number((await app.deps.db('proofs').count({ n: '*' }))[0]!.n);

async function verify(body: unknown) {
  const res = await app.request.post(`${base}/verify`).send(body as object);
  responses.push(res.text);
  return res;
}

describe('prove through the queue, then verify, over HTTP', () => {
  it.each(policyIds)('%s: 202 queued, proved by the worker, verifies', async (policy) => {
    const res = await app.request
      .post(`${base}/prove`)
      .send({ policy, inputs: privateInputs[policy] })
      .expect(202);
    responses.push(res.text);
    expect(res.body.proof.status).toBe('queued');
    expect(res.body.proof.id).toMatch(/^prf_/);
    expect(res.headers.location).toContain(`proofId=${res.body.proof.id}`);
    expect(Object.keys(res.body.salts).length).toBeGreaterThan(0);
    expect(res.body.commitments).toEqual(res.body.proof.commitments);
    // The sealed input travels in Postgres, not in the BullMQ payload.
    const job = await app.deps.queues.get('proofs').getJob(res.body.proof.id);
    expect(job?.data).toEqual({ proofId: res.body.proof.id, kind: 'blind_policy' });

    const proof = await waitForProof(app.request, res.body.proof.id);
    expect(proof.status, JSON.stringify(proof.error)).toBe('succeeded');
    expect(proof.backend).toBe('snarkjs');
    expect(proof.timings.witnessMs).toBeGreaterThan(0);
    expect(proof.timings.provingMs).toBeGreaterThan(0);
    expect(proof.timings.totalMs).toBeGreaterThanOrEqual(proof.timings.provingMs!);
    expect(proof.timings.queueMs).toBeGreaterThanOrEqual(0);
    for (const c of Object.values(proof.commitments)) expect(proof.publicSignals).toContain(c);
    proved[policy] = { proof, salts: res.body.salts };

    const check = await verify({ policy, proof: proof.proof, publicSignals: proof.publicSignals });
    expect(check.status).toBe(200);
    // Unbound (context 0), checked under the development keys, and nothing stored.
    expect(check.body).toEqual({ valid: true, policy, context: '0', insecureSetup: true });
  });

  it('refuses a tampered proof, swapped public signals and another policy’s proof', async () => {
    const { proof, publicSignals } = proved.threshold.proof;
    const tampered = copy(proof!) as { pi_a: string[] };
    tampered.pi_a[0] = (BigInt(tampered.pi_a[0]!) + 1n).toString();
    const r1 = await verify({ policy: 'threshold', proof: tampered, publicSignals });
    expect(r1.status).toBeLessThan(500);
    expect(r1.body.valid ?? false).toBe(false);

    const swapped = [...publicSignals!];
    [swapped[1], swapped[2]] = [swapped[2]!, swapped[1]!];
    const r2 = await verify({ policy: 'threshold', proof, publicSignals: swapped }).then((r) => r.body);
    expect(r2).toMatchObject({ valid: false, reason: 'proof_invalid' });

    const other = proved.range.proof;
    const r3 = await verify({ policy: 'threshold', proof: other.proof, publicSignals: other.publicSignals });
    expect(r3.status).toBe(200);
    expect(r3.body.valid).toBe(false);
    const r4 = await verify({ policy: 'membership', proof, publicSignals }).then((r) => r.body);
    expect(r4.valid).toBe(false);
  });

  it('answers malformed verify input with 4xx or valid:false, never 500', async () => {
    const { proof, publicSignals } = proved.membership.proof;
    const cases: unknown[] = [
      {},
      { policy: 'membership' },
      { policy: 'nope', proof, publicSignals },
      { policy: 'membership', proof: 'not a proof', publicSignals },
      { policy: 'membership', proof: { pi_a: [], pi_b: [], pi_c: [] }, publicSignals },
      { policy: 'membership', proof, publicSignals: 'x' },
      { policy: 'membership', proof, publicSignals: [] },
      { policy: 'membership', proof, publicSignals: publicSignals!.slice(1) },
      { policy: 'membership', proof, publicSignals: publicSignals!.map(() => '-1') },
      { policy: 'membership', proof, publicSignals: publicSignals!.map(() => `9${'9'.repeat(80)}`) },
      { policy: 'membership', proof: { ...proof, pi_a: ['1', '2', '1'] }, publicSignals },
      { policy: 'membership', proof, publicSignals, extra: true },
    ];
    for (const body of cases) {
      const res = await verify(body);
      expect(res.status, JSON.stringify(body).slice(0, 120)).toBeLessThan(500);
      if (res.status === 200) expect(res.body.valid).toBe(false);
      else expect(res.headers['content-type']).toContain('application/problem+json');
    }
  });

  it('refuses a policy violation with 422 before anything is written or queued', async () => {
    const before = await count();
    const counts = await app.deps.queues
      .get('proofs')
      .getJobCounts('waiting', 'active', 'completed', 'failed');
    const bad = [
      { policy: 'threshold', inputs: { value: '10', threshold: '11' } },
      { policy: 'range', inputs: { value: '5', low: '6', high: '9' } },
      { policy: 'membership', inputs: { value: '4', set: ['1', '2', '3'] } },
    ];
    for (const body of bad) {
      const res = await app.request.post(`${base}/prove`).send(body).expect(422);
      expect(res.body.code).toBe('policy_not_satisfied');
    }
    const invalid = await app.request
      .post(`${base}/prove`)
      .send({ policy: 'threshold', inputs: { value: 'x', threshold: '1' } })
      .expect(400);
    expect(invalid.body.code).toBe('validation_failed');
    await app.request.post(`${base}/prove`).send({ policy: 'nope', inputs: {} }).expect(400);
    expect(await count()).toBe(before);
    expect(
      await app.deps.queues.get('proofs').getJobCounts('waiting', 'active', 'completed', 'failed'),
    ).toEqual(counts);
  });

  it('reports policies, the prover and recent proving times; readiness checks the artifacts', async () => {
    const res = await app.request.get(`${base}/status`).expect(200);
    expect(res.body.setup).toMatchObject({
      insecure: true,
      allowInsecureCircuits: false,
      ptau: { file: 'dev-INSECURE-pot14.ptau', power: 14 },
    });
    expect(res.body.policies.map((p: { id: string }) => p.id)).toEqual([...policyIds]);
    for (const p of res.body.policies) {
      expect(p.constraints).toBeGreaterThan(0);
      expect(p.publicSignals).toContain('result');
      expect(p.insecureSetup).toBe(true);
    }
    expect(res.body.prover.lastBackend).toBe('snarkjs');
    expect(res.body.prover.queue).toMatchObject({ waiting: 0 });
    const times = res.body.provingTimes as Array<{
      policy: string;
      count: number;
      provingMs: { p50: number };
    }>;
    expect(times.map((t) => t.policy).sort()).toEqual([...policyIds].sort());
    expect(times.every((t) => t.count === 1 && t.provingMs.p50 > 0)).toBe(true);
    await app.request.get(`${base}/status?proofId=prf_nope`).expect(400);
    await app.request.get(`${base}/status?proofId=prf_01jd3zzzzzzzzzzzzzzzzzzzzz`).expect(404);

    const ready = await app.request.get('/api/v1/readiness');
    expect(ready.body.checks.circuitArtifacts).toMatchObject({
      ok: true,
      insecureSetup: true,
      allowInsecureCircuits: false,
    });
    expect(ready.body.checks.circuitArtifacts.detail).toMatch(/sha256 match the manifest; INSECURE/);
  });

  it('keeps an idempotent prove answer sealed under the caller’s key: its salts are in no table in clear', async () => {
    const key = `prove-${Date.now()}-7f3a9c`;
    const body = { policy: 'threshold', inputs: { value: '9182736450', threshold: '8172635490' } };
    const first = await app.request.post(`${base}/prove`).set('Idempotency-Key', key).send(body).expect(202);
    const salts = Object.values(first.body.salts as Record<string, string>);
    // An anonymous caller is only an address: the salts are not replayed, the proof is named.
    const again = await app.request.post(`${base}/prove`).set('Idempotency-Key', key).send(body).expect(409);
    expect(again.body.code).toBe('idempotency_reply_withheld');
    expect(again.headers.location).toBe(first.headers.location);
    for (const salt of salts) expect(again.text).not.toContain(salt);
    await waitForProof(app.request, first.body.proof.id);
    const db = await dumpDatabase(app.deps.db);
    for (const secret of [...salts, '9182736450', '8172635490', key]) expect(db).not.toContain(secret);
  });

  it('leaves no private input in any response, log line or table; salts only in the prove answer', async () => {
    const db = await dumpDatabase(app.deps.db);
    expect(db).toContain(proved.threshold.proof.id);
    const sealed = await app.deps.db('proofs').whereNotNull('input_sealed').count({ n: '*' });
    expect(Number(sealed[0]!.n)).toBe(0);
    const status = await Promise.all(
      policyIds.map((p) =>
        app.request.get(`${base}/status?proofId=${proved[p].proof.id}`).then((r) => r.text),
      ),
    );
    const logText = logs.lines.join('');
    expect(logs.lines.length).toBeGreaterThan(0);
    for (const policy of policyIds) {
      for (const value of secretValues(policy)) {
        expect(db, `${policy} input in the database`).not.toContain(value);
        expect(logText, `${policy} input in the logs`).not.toContain(value);
        expect(responses.join('\n'), `${policy} input in a response`).not.toContain(value);
        expect(status.join('\n')).not.toContain(value);
      }
      for (const salt of Object.values(proved[policy].salts)) {
        expect(db, `${policy} salt in the database`).not.toContain(salt);
        expect(logText, `${policy} salt in the logs`).not.toContain(salt);
        expect(status.join('\n')).not.toContain(salt);
      }
    }
  });
});

describe('waiting for a proof', () => {
  const inputs = { value: '7391402590', threshold: '6173051947' };
  // The tests above spent this network's anonymous proving budget.
  beforeAll(() => {
    app.deps.rateLimit = { ...app.deps.rateLimit, proveAnonPerMinute: 10_000 };
  });

  it('a long poll answers as the prover stores the proof, woken by its hint, not at its deadline', async () => {
    const res = await app.request.post(`${base}/prove`).send({ policy: 'threshold', inputs });
    expect(res.status, res.text).toBe(202);
    const started = Date.now();
    const waited = await app.request.get(`${base}/status?proofId=${res.body.proof.id}&wait=25`).expect(200);
    const answered = Date.now();
    expect(waited.body.proof.status).toBe('succeeded');
    expect(waited.body.proof.proof).not.toBeNull();
    // A wait left to run out takes 25 s; the hint answers it within moments of the proof's storing.
    expect(answered - started).toBeLessThan(20_000);
    expect(answered - new Date(waited.body.proof.finishedAt as string).getTime()).toBeLessThan(2_000);
    // An ended proof is answered at once.
    const again = Date.now();
    await app.request.get(`${base}/status?proofId=${res.body.proof.id}&wait=25`).expect(200);
    expect(Date.now() - again).toBeLessThan(2_000);
  });

  it('refuses a wait without a proof, or past 30 s', async () => {
    const alone = await app.request.get(`${base}/status?wait=5`);
    expect(alone.status).toBe(400);
    expect(alone.body.code).toBe('validation_failed');
    const long = await app.request.get(`${base}/status?proofId=prf_01JAAAAAAAAAAAAAAAAAAAAAAA&wait=31`);
    expect(long.status).toBe(400);
    expect(long.body.code).toBe('validation_failed');
  });

  it('writes the stages of a proof that runs past the progress delay, and none of a shorter one', async () => {
    const native = loadNativeProver();
    if (!native) throw new Error('the native prover is not built');
    const backend = nativeBackend(native, { precompute: 'off' });
    const stagesWith = async (progressAfterMs: number) => {
      // Held, so no worker takes it; queued by hand for this call alone.
      const { row } = await createPolicyProof(app.deps.db, app.deps.queues, {
        policy: 'threshold',
        inputs,
        hold: true,
      });
      await app.deps.db('proofs').where({ id: row.id }).update({ status: 'queued' });
      const stages: string[] = [];
      const { outcome } = await proveStoredProof(
        app.deps.db,
        row.id,
        backend,
        async (_percent, stage) => {
          stages.push(stage);
        },
        { progressAfterMs },
      );
      expect(outcome).toBe('succeeded');
      return stages;
    };
    // With no delay, the stage it is in when the timer fires (the witness may be done by then) and each after.
    expect(['witness,proving', 'proving']).toContain((await stagesWith(0)).join());
    expect(await stagesWith(60_000)).toEqual([]);
  });
});
