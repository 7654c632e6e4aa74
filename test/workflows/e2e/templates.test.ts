// Every template end to end over HTTP: prepare, events, the prover builds and logs the package, and
// the verify route and the offline verifier both confirm the four facts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { terminateCurves } from '../../../shared/zk';
import { checkInclusionProof, verifyTreeHead } from '../../../shared/platform/translog/tree-head';
import { verifyPackage } from '../../../shared/workflows/package';
import { templateNames } from '../../../shared/workflows/templates';
import { testApp } from '../../helpers';
import type { TestApp } from '../../helpers';
import { drive, prepare, riskProof, testProver, waitForPackage } from './helpers';
import type { TestProver } from './helpers';

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

describe('GET /api/proof-workflows/status', () => {
  it('lists the six templates by their exact names, with stages and global totals', async () => {
    const res = await app.request.get('/api/proof-workflows/status').expect(200);
    expect(res.body.templates.map((t: { name: string }) => t.name)).toEqual([...templateNames]);
    const underwriting = res.body.templates[0];
    expect(underwriting.stages.map((s: { name: string }) => s.name)).toEqual([
      'Application',
      'Document Review',
      'Risk Assessment',
      'Approval',
      'Proof',
    ]);
    expect(underwriting.counts).toBeUndefined();
    expect(res.body.totals).toEqual({ active: 0, completed: 0, rejected: 0, total: 0 });
    expect(res.body.signingKey.publicKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('rejects an unknown template and unknown query fields', async () => {
    const bad = await app.request
      .post('/api/proof-workflows/prepare')
      .set('Authorization', 'Bearer op_test_token_0123456789')
      .send({ template: 'Mortgage' });
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe('unknown_template');
    await app.request.get('/api/proof-workflows/status?x=1').expect(400);
    await app.request.get('/api/proof-workflows/status?proofId=prf_01jd3zzzzzzzzzzzzzzzzzzzzz').expect(404);
  });

  it('needs the operator token or a license to prepare', async () => {
    const res = await app.request.post('/api/proof-workflows/prepare').send({ template: 'Underwriting' });
    expect(res.status).toBe(401);
  });
});

describe('each template end to end', () => {
  const publicKey = async () =>
    (await app.request.get('/api/proof-workflows/status')).body.signingKey.publicKey as string;

  it.each(templateNames)('%s runs to a verified, logged proof', async (name) => {
    const { workflowId, proofId, policyGates } = await prepare(app.request, name);
    expect(workflowId).toMatch(/^wf_/);
    expect(proofId).toMatch(/^prf_/);
    // A real Groth16 threshold proof (a score of 742 against the lender's 650), made for this stage.
    const gate = policyGates[0];
    const policyProof = gate ? await riskProof(gate.context) : undefined;
    const replies = await drive(app.request, workflowId, name, policyProof ? { policyProof } : {});
    const last = replies[replies.length - 1];
    expect(last.workflowStatus).toBe('completed');
    expect(last.currentStage).toBeNull();
    // The stage record has exactly the spec's fields.
    expect(Object.keys(last.stage).sort()).toEqual(
      ['actorCommitment', 'auditTrail', 'proofHash', 'stage', 'status', 'timestamp'].sort(),
    );

    const verdict = await waitForPackage(app.request, proofId);
    expect(verdict).toMatchObject({
      proofId,
      existed: true,
      completed: true,
      approvalsMet: true,
      sequenceRespected: true,
      notAltered: true,
      signatureValid: true,
      inclusionValid: true,
      reasons: [],
      template: name,
    });
    expect(verdict.stages.at(-1)).toMatchObject({ key: 'proof', status: 'completed' });

    // The same package checks offline with only the public keys: the package key and the log key.
    const key = await publicKey();
    const logKey = (await app.request.get('/api/proof-workflows/log')).body.key.publicKey as string;
    expect(verifyPackage(verdict.package, { publicKey: key, logPublicKey: logKey })).toMatchObject({
      existed: true,
      completed: true,
      approvalsMet: true,
      sequenceRespected: true,
      notAltered: true,
      signatureValid: true,
      inclusionValid: true,
    });
    const log = verdict.package.log;
    expect(verifyTreeHead(log.treeHead, logKey)).toBe(true);
    expect(checkInclusionProof(log.inclusion, log.treeHead.rootHash)).toBe(true);
    // A pasted package gets the same verdict from the API.
    const pasted = await app.request
      .post('/api/proof-workflows/verify')
      .send({ package: verdict.package })
      .expect(200);
    expect(pasted.body).toMatchObject({
      notAltered: true,
      completed: true,
      signatureValid: true,
      inclusionValid: true,
    });

    const state = await app.request.get(`/api/proof-workflows/status?proofId=${proofId}`).expect(200);
    expect(state.body.workflow).toMatchObject({
      proofId,
      status: 'completed',
      package: { status: 'logged' },
    });
    expect(JSON.stringify(state.body)).not.toContain(workflowId);
  });

  it('counts the finished workflows in global totals only, never per template (no tenant’s figure)', async () => {
    const res = await app.request.get('/api/proof-workflows/status').expect(200);
    expect(res.body.totals).toMatchObject({
      completed: res.body.templates.length,
      total: res.body.templates.length,
    });
    for (const t of res.body.templates) expect(t.counts).toBeUndefined();
  });

  it('lists the routes in the platform OpenAPI document', async () => {
    const doc = (await app.request.get('/openapi/platform.json').expect(200)).body;
    for (const path of [
      '/api/proof-workflows/status',
      '/api/proof-workflows/prepare',
      '/api/proof-workflows/event',
      '/api/proof-workflows/verify',
      '/api/proof-workflows/log/head',
      '/api/proof-workflows/log/consistency',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
  });
});
