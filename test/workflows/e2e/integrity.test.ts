// Tampering and the transparency log: a record altered in Postgres is reported at its stage, a tampered
// package fails, log proofs from the API verify offline (and fail when tampered), appends are serialized
// and a package is never appended twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkConsistencyProof,
  checkInclusionProof,
  verifyTreeHead,
} from '../../../shared/platform/translog/tree-head';
import { publishWorkflowPackage } from '../../../shared/workflows/publish';
import { testApp } from '../../helpers';
import type { TestApp } from '../../helpers';
import { drive, prepare, testProver, waitForPackage } from './helpers';
import type { TestProver } from './helpers';

let app: TestApp;
let prover: TestProver;
let publicKey: string;
/** The log's own key: tree heads are signed with it, packages with the service key. */
let logKey: string;
const finished: Array<{ workflowId: string; proofId: string }> = [];

async function finish(template: string) {
  const ids = await prepare(app.request, template);
  await drive(app.request, ids.workflowId, template);
  await waitForPackage(app.request, ids.proofId);
  finished.push(ids);
  return ids;
}

beforeAll(async () => {
  app = testApp();
  prover = testProver();
  publicKey = (await app.request.get('/api/proof-workflows/status')).body.signingKey.publicKey;
  logKey = (await app.request.get('/api/proof-workflows/log')).body.key.publicKey;
  for (const t of ['Vendor Onboarding', 'Internal Audit', 'Grant Review']) await finish(t);
});
afterAll(async () => {
  await prover.close();
  await app.close();
});

const verify = async (body: object) =>
  (await app.request.post('/api/proof-workflows/verify').send(body).expect(200)).body;
const flip = (hex: string) => (hex[0] === '0' ? '1' : '0') + hex.slice(1);

describe('records altered directly in Postgres', () => {
  it('make verify report `altered` at that stage, with every fact false', async () => {
    const { workflowId, proofId } = await finish('Compliance Review');
    expect((await verify({ proofId })).notAltered).toBe(true);
    await app.deps
      .db('audit_entries')
      .where({ workflow_id: workflowId, stage: 'screening', action: 'approve' })
      .update({ at: '2020-01-01T00:00:00.000Z' });
    const v = await verify({ proofId });
    expect(v).toMatchObject({
      existed: false,
      completed: false,
      approvalsMet: false,
      sequenceRespected: false,
      notAltered: false,
    });
    expect(v.altered.stage).toBe('screening');
    expect(v.reasons.find((r: { check: string }) => r.check === 'notAltered')).toMatchObject({
      stage: 'screening',
    });
  });

  it('catch a stage row changed on its own, after the intact rows were verified (and remembered)', async () => {
    const { workflowId, proofId } = await finish('Vendor Onboarding');
    expect((await verify({ proofId })).notAltered).toBe(true);
    await app.deps
      .db('workflow_stages')
      .where({ workflow_id: workflowId, stage: 'security_review' })
      .update({ status: 'rejected' });
    const v = await verify({ proofId });
    expect(v.notAltered).toBe(false);
    expect(v.altered.stage).toBe('security_review');
  });

  it('catch records that still recompute but differ from the signed package', async () => {
    const { workflowId, proofId } = await finish('Internal Audit');
    expect((await verify({ proofId })).notAltered).toBe(true);
    // Dropping the last entries leaves a shorter chain that is valid on its own; the package disagrees.
    await app.deps.db('audit_entries').where('workflow_id', workflowId).andWhere('stage', 'proof').delete();
    await app.deps
      .db('workflow_stages')
      .where({ workflow_id: workflowId, stage: 'proof' })
      .update({ status: 'pending', actor_commitment: null, timestamp: null, proof_hash: null });
    const v = await verify({ proofId });
    expect(v.notAltered).toBe(false);
    expect(v.completed).toBe(false);
    expect(v.reasons.map((r: { code: string }) => r.code)).toContain('package_mismatch');
  });
});

describe('a tampered package', () => {
  it('fails verification with the reason', async () => {
    const { proofId } = finished[0]!;
    const pkg = (await verify({ proofId })).package;
    expect((await verify({ package: pkg })).notAltered).toBe(true);

    const stageChanged = structuredClone(pkg);
    stageChanged.stages[1].actorCommitments = [flip(stageChanged.stages[1].actorCommitments[0])];
    const a = await verify({ package: stageChanged });
    expect(a).toMatchObject({ notAltered: false, signatureValid: false, completed: false });
    expect(a.reasons.map((r: { code: string }) => r.code)).toContain('bad_signature');

    const logChanged = structuredClone(pkg);
    logChanged.log.inclusion.leafHash = flip(logChanged.log.inclusion.leafHash);
    const b = await verify({ package: logChanged });
    expect(b).toMatchObject({ notAltered: false, signatureValid: true, inclusionValid: false });
    expect(b.reasons[0]).toMatchObject({ check: 'inclusionValid', code: 'leaf_mismatch' });

    const c = await verify({ package: { kind: 'workflow', proofId: 'prf_x' } });
    expect(c.notAltered).toBe(false);
    expect(c.reasons[0]).toMatchObject({ check: 'format', code: 'malformed' });
  });
});

describe('the transparency log', () => {
  it('serves a signed head, and inclusion and consistency proofs that verify offline', async () => {
    const head = (await app.request.get('/api/proof-workflows/log/head').expect(200)).body;
    expect(head.treeSize).toBeGreaterThanOrEqual(finished.length);
    expect(verifyTreeHead(head.treeHead, logKey)).toBe(true);
    expect(verifyTreeHead(head.treeHead, publicKey)).toBe(false);

    for (let from = 0; from <= head.treeSize; from++) {
      const res = await app.request
        .get(`/api/proof-workflows/log/consistency?from=${from}&to=${head.treeSize}`)
        .expect(200);
      expect(checkConsistencyProof(res.body.proof), `from ${from}`).toBe(true);
      expect(res.body.proof.secondRoot).toBe(head.treeHead.rootHash);
      if (from > 0) {
        expect(verifyTreeHead(res.body.firstTreeHead, logKey)).toBe(true);
        expect(res.body.proof.firstRoot).toBe(res.body.firstTreeHead.rootHash);
      }
      if (res.body.proof.path.length) {
        const tampered = structuredClone(res.body.proof);
        tampered.path[0] = flip(tampered.path[0]);
        expect(checkConsistencyProof(tampered)).toBe(false);
      }
      const wrongRoot = { ...res.body.proof, firstRoot: flip(res.body.proof.firstRoot) };
      if (from > 0) expect(checkConsistencyProof(wrongRoot)).toBe(false);
    }

    // An early package's leaf is included in the latest tree too.
    const { proofId } = finished[0]!;
    const inc = (await app.request.get(`/api/proof-workflows/log/inclusion?proofId=${proofId}`).expect(200))
      .body;
    expect(inc.inclusion.treeSize).toBe(head.treeSize);
    expect(checkInclusionProof(inc.inclusion, head.treeHead.rootHash)).toBe(true);
    const tampered = structuredClone(inc.inclusion);
    tampered.leafHash = flip(tampered.leafHash);
    expect(checkInclusionProof(tampered, head.treeHead.rootHash)).toBe(false);
  });

  it('rejects sizes it does not have', async () => {
    const res = await app.request.get('/api/proof-workflows/log/consistency?from=0&to=100000').expect(422);
    expect(res.body.code).toBe('tree_size_unknown');
    const bad = await app.request.get('/api/proof-workflows/log/consistency?from=3&to=1').expect(400);
    expect(bad.body.code).toBe('invalid_range');
  });

  it('leaves no leaf behind when a job dies after appending, and appends once on retry', async () => {
    const leaves = async () => Number((await app.deps.db('translog_leaves').count({ n: '*' }))[0]!.n);
    await prover.worker.pause();
    const w = await prepare(app.request, 'Internal Audit');
    try {
      await drive(app.request, w.workflowId, 'Internal Audit');
      const before = await leaves();
      // The last write of the job fails, after its leaf, nodes and tree head were written.
      await app.deps.db.raw(`
        create function px_fail_package() returns trigger language plpgsql as $$
        begin raise exception 'simulated crash'; end $$;
        create trigger px_fail_package before update on proof_packages
          for each row when (new.status = 'logged') execute function px_fail_package();`);
      await expect(publishWorkflowPackage(app.deps.db, w.proofId)).rejects.toThrow(/simulated crash/);
      expect(await leaves()).toBe(before);
      await app.deps.db.raw(
        'drop trigger px_fail_package on proof_packages; drop function px_fail_package()',
      );
      expect((await publishWorkflowPackage(app.deps.db, w.proofId)).status).toBe('logged');
      expect(await leaves()).toBe(before + 1);
    } finally {
      prover.worker.resume();
    }
    const v = await waitForPackage(app.request, w.proofId);
    expect(v).toMatchObject({ notAltered: true, inclusionValid: true });
  });

  it('never appends a package twice, and serializes concurrent appends', async () => {
    const leaves = async () => Number((await app.deps.db('translog_leaves').count({ n: '*' }))[0]!.n);
    const before = await leaves();
    const { proofId } = finished[0]!;
    const again = await publishWorkflowPackage(app.deps.db, proofId);
    expect(again.status).toBe('already_logged');
    expect(await leaves()).toBe(before);

    // Several closed workflows whose packages are published at once (and twice each).
    const ids = [];
    for (let i = 0; i < 4; i++) {
      const w = await prepare(app.request, 'Vendor Onboarding');
      ids.push(w);
    }
    await prover.worker.pause();
    try {
      for (const w of ids) await drive(app.request, w.workflowId, 'Vendor Onboarding');
      const outcomes = await Promise.all(
        ids.flatMap((w) => [
          publishWorkflowPackage(app.deps.db, w.proofId),
          publishWorkflowPackage(app.deps.db, w.proofId),
        ]),
      );
      expect(outcomes.filter((o) => o.status === 'logged')).toHaveLength(ids.length);
    } finally {
      prover.worker.resume();
    }
    const rows = (await app.deps.db('translog_leaves').select('leaf_index').orderBy('leaf_index')) as Array<{
      leaf_index: string;
    }>;
    expect(rows.map((r) => Number(r.leaf_index))).toEqual(rows.map((_, i) => i));
    expect(rows).toHaveLength(before + ids.length);
    for (const w of ids) {
      const v = await waitForPackage(app.request, w.proofId);
      expect(v).toMatchObject({ notAltered: true, signatureValid: true, inclusionValid: true });
    }
    const heads = await app.deps.db('tree_heads').count({ n: '*' });
    expect(Number(heads[0]!.n)).toBe(before + ids.length);
  });
});
