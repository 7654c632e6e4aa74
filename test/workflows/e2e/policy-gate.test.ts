// Policy proofs bound to their stage, over HTTP: a proof counts as a stage's blind policy proof only
// when it is of the stage's policy, commits to the parameters the workflow fixed at prepare, carries
// this stage's context, verifies, and was never used before. Every refusal writes nothing.
import * as snarkjs from 'snarkjs';
import { utils as ffUtils } from 'ffjavascript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitValue, provePolicy, snarkjsBackend, stageContext, terminateCurves } from '../../../shared/zk';
import { policyProofHash } from '../../../shared/workflows/policy-gate';
import { dumpDatabase, waitForProof } from '../../zk/helpers';
import { testApp } from '../../helpers';
import type { TestApp } from '../../helpers';
import { OPERATOR, RISK_POLICY, actor, drive, event, prepare, riskProof, testProver } from './helpers';
import type { OfferedPolicyProof, PolicyGate, TestProver } from './helpers';

let app: TestApp;
let prover: TestProver;

beforeAll(() => {
  app = testApp();
  prover = testProver();
});
afterAll(async () => {
  await prover.close();
  await app.close();
  await terminateCurves();
});

const rows = async (table: string) => Number((await app.deps.db(table).count({ n: '*' }))[0]!.n);
const writes = async () => ({
  workflows: await rows('workflows'),
  entries: await rows('audit_entries'),
  uses: await rows('policy_proof_uses'),
  proofs: await rows('proofs'),
});

/** A workflow driven up to its risk stage, with the gate prepare answered. */
async function atRiskStage(parameters?: Record<string, unknown>) {
  const wf = await prepare(app.request, 'Underwriting', parameters);
  await drive(app.request, wf.workflowId, 'Underwriting', { until: 'risk_assessment' });
  return { ...wf, gate: wf.policyGates[0]! };
}

const offer = (workflowId: string, policyProof: unknown, extra: Record<string, unknown> = {}) =>
  app.request
    .post('/api/proof-workflows/event')
    .set('Authorization', OPERATOR)
    .send({
      workflowId,
      stage: 'risk_assessment',
      action: 'attach_evidence',
      actorCommitment: actor('applicant'),
      policyProof,
      ...extra,
    });

/**
 * Another valid proof of the same statement, as anyone holding a Groth16 proof can make one:
 * A' = A·r⁻¹, B' = B·r, C' = C leaves the pairing equation (and every public signal) unchanged.
 */
async function rerandomized(offered: OfferedPolicyProof): Promise<OfferedPolicyProof> {
  interface Group {
    fromObject(o: unknown): unknown;
    timesFr(p: unknown, s: unknown): unknown;
    toAffine(p: unknown): unknown;
    toObject(p: unknown): unknown;
  }
  const curve = (await snarkjs.curves.getCurveFromName('bn128')) as unknown as {
    G1: Group;
    G2: Group;
    Fr: { e(v: bigint): unknown; inv(v: unknown): unknown };
  };
  const proof = offered.proof as { pi_a: string[]; pi_b: string[][]; pi_c: string[] };
  const r = curve.Fr.e(982451653n);
  const out = (g: Group, p: unknown) =>
    JSON.parse(JSON.stringify(g.toObject(g.toAffine(p)), (_, v) => (typeof v === 'bigint' ? String(v) : v)));
  const a = curve.G1.timesFr(curve.G1.fromObject(ffUtils.unstringifyBigInts(proof.pi_a)), curve.Fr.inv(r));
  const b = curve.G2.timesFr(curve.G2.fromObject(ffUtils.unstringifyBigInts(proof.pi_b)), r);
  return { ...offered, proof: { ...proof, pi_a: out(curve.G1, a), pi_b: out(curve.G2, b) } };
}

describe('prepare fixes the parameters of every policy stage', () => {
  it('commits plain parameters, keeps only the commitments and returns the salts once', async () => {
    const threshold = '6504217913';
    const res = await app.request
      .post('/api/proof-workflows/prepare')
      .set('Authorization', OPERATOR)
      .send({ template: 'Underwriting', policyParameters: { risk_assessment: { threshold } } })
      .expect(201);
    expect(res.headers['cache-control']).toBe('no-store');
    const [gate] = res.body.policyGates as PolicyGate[];
    expect(gate).toMatchObject({ index: 2, stage: 'risk_assessment', policy: 'threshold' });
    const salt = gate!.salts!.thresholdSalt!;
    expect(gate!.commitments.thresholdCommitment).toBe(
      String(await commitValue(BigInt(threshold), BigInt(salt))),
    );
    expect(gate!.context).toBe(await stageContext(res.body.proofId, 2));
    const dump = await dumpDatabase(app.deps.db);
    expect(dump).toContain(gate!.commitments.thresholdCommitment);
    expect(dump).not.toContain(threshold);
    expect(dump).not.toContain(salt);
    const state = await app.request.get(`/api/proof-workflows/status?proofId=${res.body.proofId}`);
    expect(state.text).not.toContain(gate!.commitments.thresholdCommitment);
  });

  it('takes the commitments as given, without salts', async () => {
    const thresholdCommitment = String(await commitValue(650n, 77n));
    const { policyGates } = await prepare(app.request, 'Underwriting', {
      risk_assessment: { thresholdCommitment },
    });
    expect(policyGates).toEqual([
      expect.objectContaining({ stage: 'risk_assessment', commitments: { thresholdCommitment } }),
    ]);
    expect(policyGates[0]!.salts).toBeUndefined();
  });

  it('refuses missing, misplaced or malformed parameters, naming the field and writing nothing', async () => {
    const before = await writes();
    const send = (policyParameters?: unknown) =>
      app.request
        .post('/api/proof-workflows/prepare')
        .set('Authorization', OPERATOR)
        .send({ template: 'Underwriting', ...(policyParameters ? { policyParameters } : {}) });
    const missing = await send();
    expect(missing.status).toBe(422);
    expect(missing.body.code).toBe('policy_parameters_required');
    expect(missing.body.stages).toEqual([
      { stage: 'risk_assessment', policy: 'threshold', commitments: ['thresholdCommitment'] },
    ]);
    const misplaced = await send({ risk_assessment: RISK_POLICY, document_review: { threshold: '1' } });
    expect(misplaced.status).toBe(400);
    expect(misplaced.body.errors[0].path).toBe('policyParameters.document_review');
    const bad = await send({ risk_assessment: { threshold: '98765432109876543210987' } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].path).toBe('policyParameters.risk_assessment.threshold');
    expect(bad.text).not.toContain('98765432109876543210987');
    const badCommitment = await send({ risk_assessment: { thresholdCommitment: `9${'9'.repeat(77)}` } });
    expect(badCommitment.status).toBe(400);
    expect((await send({ risk_assessment: { threshold: '5' } }).then(() => writes())).workflows).toBe(
      before.workflows + 1,
    );
    // Grant Review has no policy stage: parameters for it are refused too.
    const foreign = await app.request
      .post('/api/proof-workflows/prepare')
      .set('Authorization', OPERATOR)
      .send({ template: 'Grant Review', policyParameters: { panel_review: RISK_POLICY } });
    expect(foreign.status).toBe(400);
  });
});

describe('the gate at Underwriting’s risk stage', () => {
  let a: Awaited<ReturnType<typeof atRiskStage>>;
  let b: Awaited<ReturnType<typeof atRiskStage>>;
  let right: OfferedPolicyProof;

  beforeAll(async () => {
    // Two workflows with the same lender policy (threshold and salt): only their contexts differ.
    [a, b] = [await atRiskStage(), await atRiskStage()];
    expect(a.gate.commitments).toEqual(b.gate.commitments);
    right = await riskProof(a.gate.context);
  });

  const expectRefused = async (policyProof: unknown, status: number, code: string) => {
    const before = await writes();
    const res = await offer(a.workflowId, policyProof);
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body.code).toBe(code);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(await writes()).toEqual(before);
    return res;
  };

  it('refuses a threshold-0 or weaker proof, another workflow’s, the wrong policy’s, an unbound and a forged one', async () => {
    // The applicant's own, weaker policy: value 742 ≥ 0 (and ≥ 600) proves nothing about the lender's.
    for (const threshold of ['0', '600']) {
      const weak = await riskProof(a.gate.context, {
        value: '742',
        threshold,
        thresholdSalt: RISK_POLICY.thresholdSalt,
      });
      await expectRefused(weak, 409, 'policy_parameters_mismatch');
    }
    // A valid proof of the right policy and parameters, made for the same stage of workflow B.
    await expectRefused(await riskProof(b.gate.context), 409, 'policy_proof_wrong_context');
    // Made for no stage at all.
    await expectRefused(await riskProof('0'), 409, 'policy_proof_wrong_context');
    // A range proof (650 ≤ 742 ≤ 900) bound to this very stage is still not a threshold proof.
    const range = await provePolicy(
      snarkjsBackend(),
      'range',
      { value: '742', low: '650', high: '900' },
      undefined,
      { context: BigInt(a.gate.context) },
    );
    await expectRefused(
      { policy: 'range', proof: range.proof, publicSignals: range.publicSignals },
      409,
      'policy_proof_wrong_policy',
    );
    // Claiming it is a threshold proof does not make its signals one.
    await expectRefused(
      { policy: 'threshold', proof: range.proof, publicSignals: range.publicSignals },
      409,
      'policy_proof_invalid',
    );
    // The right signals with a proof that does not hold for them.
    const forged = JSON.parse(JSON.stringify(right)) as { proof: { pi_c: string[] } };
    forged.proof.pi_c = (right.proof as { pi_a: string[] }).pi_a;
    await expectRefused(forged, 409, 'policy_proof_invalid');
    await expectRefused({ ...right, proof: 'not a proof' }, 400, 'invalid_proof_format');
    await expectRefused({ ...right, publicSignals: ['x'] }, 400, 'invalid_proof_format');
    // None of them was recorded: the stage still has no evidence at all.
    const approve = await event(app.request, {
      workflowId: a.workflowId,
      stage: 'risk_assessment',
      action: 'approve',
      actorCommitment: actor('risk'),
    });
    expect(approve.body.code).toBe('evidence_required');
  });

  it('refuses a proof on a stage that takes none, and a proof beside an evidence hash', async () => {
    const before = await writes();
    const other = await event(app.request, {
      workflowId: a.workflowId,
      stage: 'approval',
      action: 'attach_evidence',
      actorCommitment: actor('applicant'),
      policyProof: right,
    });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe('policy_proof_not_expected');
    const both = await offer(a.workflowId, right, { evidenceHash: 'ab'.repeat(32) });
    expect(both.status).toBe(400);
    // Without the owner's credential nothing is checked or written.
    const foreign = await app.request
      .post('/api/proof-workflows/event')
      .set('Authorization', 'Bearer op_wrong_token_0123456789')
      .send({
        workflowId: a.workflowId,
        stage: 'risk_assessment',
        action: 'attach_evidence',
        actorCommitment: actor('x'),
        policyProof: right,
      });
    expect(foreign.status).toBe(401);
    expect(await writes()).toEqual(before);
  });

  it('accepts the right proof once; the same statement again, even re-randomized, is refused', async () => {
    const verified = await app.request
      .post('/api/proof-workflows/blind-policy/verify')
      .send({ policy: 'threshold', proof: right.proof, publicSignals: right.publicSignals })
      .expect(200);
    expect(verified.body).toEqual({
      valid: true,
      policy: 'threshold',
      context: a.gate.context,
      insecureSetup: true,
    });

    const before = await writes();
    const res = await offer(a.workflowId, right);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.policyProof).toEqual({
      policy: 'threshold',
      context: a.gate.context,
      verified: true,
      insecureSetup: true,
    });
    expect(res.body.entry.evidenceKind).toBe('blind_policy_proof');
    expect(await writes()).toEqual({ ...before, entries: before.entries + 1, uses: before.uses + 1 });
    // Stored as a salted commitment only: the plain evidence hash of the proof is in no table or reply.
    const evidenceHash = policyProofHash({ policyId: 'threshold', ...right });
    expect(res.text).not.toContain(evidenceHash);
    expect(await dumpDatabase(app.deps.db)).not.toContain(evidenceHash);

    await expectRefused(right, 409, 'policy_proof_reused');
    const twin = await rerandomized(right);
    expect(JSON.stringify(twin.proof)).not.toBe(JSON.stringify(right.proof));
    const twinValid = await app.request
      .post('/api/proof-workflows/blind-policy/verify')
      .send({ policy: 'threshold', proof: twin.proof, publicSignals: twin.publicSignals });
    expect(twinValid.body.valid).toBe(true);
    await expectRefused(twin, 409, 'policy_proof_reused');

    const approved = await event(app.request, {
      workflowId: a.workflowId,
      stage: 'risk_assessment',
      action: 'approve',
      actorCommitment: actor('risk'),
    });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(approved.body.stage.status).toBe('completed');
    expect(approved.body.currentStage).toBe('approval');
  });
});

describe('prove for a stage', () => {
  const prove = (body: Record<string, unknown>) =>
    app.request.post('/api/proof-workflows/blind-policy/prove').send(body);

  it('binds the proof to the stage, which then accepts it; wrong parameters or policy are refused first', async () => {
    const c = await atRiskStage();
    const workflow = { proofId: c.proofId, stage: 'risk_assessment' };
    const before = await writes();
    const weaker = await prove({
      policy: 'threshold',
      inputs: { value: '742', threshold: '0', thresholdSalt: RISK_POLICY.thresholdSalt },
      workflow,
    });
    expect(weaker.status).toBe(422);
    expect(weaker.body.code).toBe('policy_parameters_mismatch');
    const range = await prove({ policy: 'range', inputs: { value: '742', low: '1', high: '900' }, workflow });
    expect(range.status).toBe(422);
    expect(range.body.code).toBe('policy_proof_wrong_policy');
    const ungated = await prove({
      policy: 'threshold',
      inputs: { value: '742', ...RISK_POLICY },
      workflow: { ...workflow, stage: 'approval' },
    });
    expect(ungated.status).toBe(422);
    const unknown = await prove({
      policy: 'threshold',
      inputs: { value: '742', ...RISK_POLICY },
      workflow: { ...workflow, proofId: 'prf_01jd3zzzzzzzzzzzzzzzzzzzzz' },
    });
    expect(unknown.status).toBe(404);
    const both = await prove({
      policy: 'threshold',
      inputs: { value: '742', ...RISK_POLICY },
      workflow,
      context: '5',
    });
    expect(both.status).toBe(400);
    expect(await writes()).toEqual(before);

    const queued = await prove({ policy: 'threshold', inputs: { value: '742', ...RISK_POLICY }, workflow });
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    const proof = await waitForProof(app.request, queued.body.proof.id);
    expect(proof.status).toBe('succeeded');
    expect(proof.publicSignals!.at(-1)).toBe(c.gate.context);
    expect(proof.publicSignals).toContain(c.gate.commitments.thresholdCommitment);

    const offered = { policy: 'threshold', proof: proof.proof, publicSignals: proof.publicSignals };
    expect((await offer(c.workflowId, offered)).status).toBe(200);
  });
});
