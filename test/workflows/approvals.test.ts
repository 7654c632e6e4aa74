// Anonymous approvals end to end: an organization registers approver sets (identity commitments its
// approvers made), approvers prove membership on their side (the approver's client, real Groth16 proofs
// of the committed ballot circuit) and post the proofs with no credential. Every abuse is refused with
// its code and nothing written (the same approver twice, a replay, a non-member, a proof for another
// stage, another workflow or other content, a stale root, a bare approval where a set exists); a
// workflow approved this way verifies as `approvals: proven` through the route and offline from its
// bundle; workflows approved the old way are reported asserted, never proven — also when proofs from
// another workflow are grafted onto their package.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { verifyBundle } from '../../shared/platform/translog/bundle';
import { parseLogEntry } from '../../shared/platform/translog/entry';
import { leafByKey } from '../../shared/platform/translog/pg-log';
import { parseTrustRoot } from '../../shared/platform/trust';
import { approvalActor, approverRootSha256 } from '../../shared/workflows/approval-protocol';
import {
  createIdentity,
  loadMembershipArtifacts,
  makeApproval,
} from '../../shared/workflows/approval-client';
import type {
  Approval,
  ApprovalTarget,
  Identity,
  MembershipArtifacts,
} from '../../shared/workflows/approval-client';
import {
  verifyPackage,
  verifyPackageApprovals,
  workflowPackageChecker,
} from '../../shared/workflows/package';
import { grantLicense, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR, actor, drive, event, evidence, prepare, testProver, waitForPackage } from './e2e/helpers';
import type { Body, TestProver } from './e2e/helpers';

const TEMPLATE = 'Treasury Approval';
const execFileAsync = promisify(execFile);
const vkey = JSON.parse(
  readFileSync(join(process.cwd(), 'circuits', 'artifacts', 'ballot.vkey.json'), 'utf8'),
) as unknown;

let app: TestApp;
let prover: TestProver;
let artifacts: MembershipArtifacts;
let alice: Identity;
let bob: Identity;
let carol: Identity;
let outsider: Identity;
const setIds: Record<string, string> = {};

const register = async (stage: string, identities: Identity[], template = TEMPLATE) => {
  const res = await app.request
    .post('/api/proof-workflows/approver-sets')
    .set('Authorization', OPERATOR)
    .send({ template, stage, identityCommitments: identities.map((i) => i.commitment) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as Body;
};

const target = async (proofId: string, stage: string): Promise<ApprovalTarget> => {
  const res = await app.request.get('/api/proof-workflows/approvals/target').query({ proofId, stage });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as ApprovalTarget;
};

const prove = async (identity: Identity, t: ApprovalTarget): Promise<Approval> => {
  const { timings: _t, ...approval } = await makeApproval({ identity, target: t, artifacts });
  return approval;
};

const post = (approval: Approval) => app.request.post('/api/proof-workflows/approvals').send(approval);

/** What a refused request must leave as it was: the trail, the kept proofs, the workflow's head. */
async function written(workflowId: string) {
  const db = app.deps.db;
  const [entries, approvals, head] = await Promise.all([
    db('audit_entries').where('workflow_id', workflowId).count({ n: '*' }).first(),
    db('workflow_approvals').count({ n: '*' }).first(),
    db('workflows').where('id', workflowId).first('chain_head', 'entry_count'),
  ]);
  return { entries: Number(entries!.n), approvals: Number(approvals!.n), head };
}

async function refused(workflowId: string, approval: Approval, code: string, status = 409) {
  const before = await written(workflowId);
  const res = await post(approval);
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
  expect(res.body.code).toBe(code);
  expect(await written(workflowId)).toEqual(before);
}

/** A Treasury Approval workflow with its Request submitted: budget_review is open. */
async function opened() {
  const ids = await prepare(app.request, TEMPLATE);
  await drive(app.request, ids.workflowId, TEMPLATE, { until: 'budget_review' });
  return ids;
}

beforeAll(async () => {
  app = testApp();
  prover = testProver();
  artifacts = await loadMembershipArtifacts(join(process.cwd(), 'circuits', 'artifacts'));
  [alice, bob, carol, outsider] = await Promise.all([
    createIdentity(),
    createIdentity(),
    createIdentity(),
    createIdentity(),
  ]);
  for (const stage of ['budget_review', 'signer_approval', 'execution'])
    setIds[stage] = (await register(stage, [alice, bob, carol])).setId as string;
}, 60_000);

afterAll(async () => {
  await prover.close();
  await app.close();
  await (globalThis as { curve_bn128?: { terminate(): Promise<void> } }).curve_bn128?.terminate();
});

describe('approver sets', () => {
  it('put every new root on the log, as a statement of the set, its stage and its size', async () => {
    const setId = setIds.signer_approval!;
    const tree = (await app.request.get(`/api/proof-workflows/approver-sets/${setId}`).expect(200)).body;
    expect(tree).toMatchObject({
      setId,
      template: TEMPLATE,
      stage: 'signer_approval',
      identityCommitments: [alice.commitment, bob.commitment, carol.commitment],
    });
    const leaf = await leafByKey(app.deps.db, `approver_set:${setId}:0`);
    expect(leaf).toBeDefined();
    expect(parseLogEntry(leaf!.entry!)).toMatchObject({
      kind: 'approver_set',
      id: `${setId}:0`,
      sha256: approverRootSha256({
        setId,
        template: TEMPLATE,
        stage: 'signer_approval',
        seq: 0,
        root: tree.root,
        size: 3,
      }),
    });
  });

  it('are only for stages that take approvals, of known templates, with well-formed commitments', async () => {
    const send = (body: object) =>
      app.request.post('/api/proof-workflows/approver-sets').set('Authorization', OPERATOR).send(body);
    const one = [alice.commitment];
    expect(
      (await send({ template: TEMPLATE, stage: 'application', identityCommitments: one })).body.code,
    ).toBe('not_an_approval_stage');
    expect((await send({ template: TEMPLATE, stage: 'nope', identityCommitments: one })).body.code).toBe(
      'unknown_stage',
    );
    expect((await send({ template: 'Nope', stage: 'approval', identityCommitments: one })).body.code).toBe(
      'unknown_template',
    );
    const dup = await send({ template: TEMPLATE, stage: 'execution', identityCommitments: [...one, ...one] });
    expect(dup.status).toBe(422);
    expect(dup.body.code).toBe('duplicate_identity');
    const bad = await send({ template: TEMPLATE, stage: 'execution', identityCommitments: ['0x12'] });
    expect(bad.status).toBe(400);
    // Without a credential nobody registers approvers.
    await app.request
      .post('/api/proof-workflows/approver-sets')
      .send({ template: TEMPLATE, stage: 'execution', identityCommitments: one })
      .expect(401);
  });
});

describe('an approval posted as a membership proof', () => {
  let wf: { workflowId: string; proofId: string };

  beforeAll(async () => {
    wf = await opened();
  }, 30_000);

  it('is refused as a bare actor commitment where the stage has an approver set (the invented approver)', async () => {
    const before = await written(wf.workflowId);
    const res = await event(app.request, {
      workflowId: wf.workflowId,
      stage: 'budget_review',
      action: 'approve',
      actorCommitment: actor('invented-1'),
    });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('approval_proof_required');
    expect(await written(wf.workflowId)).toEqual(before);
  });

  it('is recorded as an approve entry whose actor is the nullifier, and nothing of who', async () => {
    const approval = await prove(alice, await target(wf.proofId, 'budget_review'));
    const res = await post(approval);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.entry).toMatchObject({
      stage: 'budget_review',
      action: 'approve',
      actorCommitment: approvalActor(approval.publicSignals[1]!),
    });
    expect(res.body.currentStage).toBe('signer_approval');
    const rows = JSON.stringify([
      await app.deps.db('workflow_approvals').where('workflow_id', wf.workflowId),
      await app.deps.db('audit_entries').where('workflow_id', wf.workflowId),
    ]);
    for (const text of [JSON.stringify(res.body), rows]) {
      expect(text).not.toContain(alice.secret);
      expect(text).not.toContain(alice.commitment);
    }
  });

  it('from the same approver twice is refused (nullifier reuse), and so is a replay', async () => {
    const t = await target(wf.proofId, 'signer_approval');
    const first = await prove(alice, t);
    expect((await post(first)).status).toBe(200);
    await refused(wf.workflowId, await prove(alice, t), 'approval_nullifier_used');
    await refused(wf.workflowId, first, 'approval_nullifier_used');
  });

  it('from a non-member is refused: its root is not one of the set’s', async () => {
    const t = await target(wf.proofId, 'signer_approval');
    const own = await prove(outsider, { ...t, members: [...t.members, outsider.commitment] });
    await refused(wf.workflowId, own, 'approval_root_unknown');
    // Nor can a member's nullifier be put under a proof the outsider made.
    const forged = { ...own, publicSignals: [...own.publicSignals] };
    forged.publicSignals[0] = (await prove(bob, t)).publicSignals[0]!;
    await refused(wf.workflowId, forged, 'approval_proof_invalid');
  });

  it('made for another stage of the workflow is refused', async () => {
    const t = await target(wf.proofId, 'signer_approval');
    const other = await prove(bob, { ...t, stage: 'execution' });
    await refused(wf.workflowId, { ...other, stage: 'signer_approval' }, 'approval_wrong_scope');
  });

  it('made for another workflow is refused', async () => {
    const second = await opened();
    const t = await target(wf.proofId, 'signer_approval');
    const other = await prove(bob, { ...t, proofId: second.proofId });
    await refused(wf.workflowId, { ...other, proofId: wf.proofId }, 'approval_wrong_scope');
  });

  it('made for other content than the stage shows is refused', async () => {
    const t = await target(wf.proofId, 'signer_approval');
    const flipped = (t.contentHash[0] === '0' ? '1' : '0') + t.contentHash.slice(1);
    await refused(
      wf.workflowId,
      await prove(bob, { ...t, contentHash: flipped }),
      'approval_content_mismatch',
    );
  });

  it('that is not well formed, or for no workflow, stage or set, is a 4xx with nothing written', async () => {
    const t = await target(wf.proofId, 'signer_approval');
    const good = await prove(bob, t);
    await refused(wf.workflowId, { ...good, proofId: 'prf_01jd3zq8y4v6e8k2m0n5p7r9st' }, 'not_found', 404);
    await refused(wf.workflowId, { ...good, stage: 'nope' }, 'unknown_stage', 422);
    await refused(wf.workflowId, { ...good, stage: 'application' }, 'not_an_approval_stage', 422);
    const vendor = await prepare(app.request, 'Vendor Onboarding');
    await refused(
      wf.workflowId,
      { ...good, proofId: vendor.proofId, stage: 'approval' },
      'approver_set_missing',
    );
    await refused(
      wf.workflowId,
      { ...good, publicSignals: good.publicSignals.slice(0, 3) },
      'invalid_proof_format',
      400,
    );
    await refused(
      wf.workflowId,
      { ...good, proof: { ...good.proof, pi_a: ['x', '1', '1'] } },
      'invalid_proof_format',
      400,
    );
  });

  it('against a root the set had before the one the workflow fixed is refused as stale', async () => {
    const t = await target(wf.proofId, 'signer_approval');
    const old = await prove(bob, t);
    // A registration, then a workflow prepared after it: it fixes the new root, not bob's.
    await register('signer_approval', [await createIdentity()]);
    const later = await opened();
    await refused(later.workflowId, { ...old, proofId: later.proofId }, 'approval_wrong_scope');
    const stale = await prove(bob, {
      ...(await target(later.proofId, 'signer_approval')),
      members: t.members,
    });
    await refused(later.workflowId, stale, 'approval_root_stale');
    const opening = await post(await prove(carol, await target(later.proofId, 'budget_review')));
    expect(opening.status, JSON.stringify(opening.body)).toBe(200);
    const res = await post(await prove(bob, await target(later.proofId, 'signer_approval')));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});

describe('an approver set fixed at prepare', () => {
  it('never counts a member added after the workflow was prepared (the license that grew its own set)', async () => {
    // One TRIAL license makes two identities itself; the second joins the set after the workflow started.
    const license = await grantLicense(app.deps.db, 'TRIAL');
    const [first, second] = await Promise.all([createIdentity(), createIdentity()]);
    const registerOwn = (identity: Identity) =>
      app.request
        .post('/api/proof-workflows/approver-sets')
        .set(license.auth)
        .send({ template: TEMPLATE, stage: 'signer_approval', identityCommitments: [identity.commitment] });
    const registered = await registerOwn(first);
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const prepared = await app.request
      .post('/api/proof-workflows/prepare')
      .set(license.auth)
      .send({ template: TEMPLATE });
    expect(prepared.status, JSON.stringify(prepared.body)).toBe(201);
    const { workflowId, proofId } = prepared.body as { workflowId: string; proofId: string };
    expect(prepared.body.approvers).toMatchObject({
      sets: [{ stage: 'signer_approval', setId: registered.body.setId, root: registered.body.root, size: 1 }],
    });
    // Fixed on the log in the prepare transaction, before the workflow had an entry.
    const leaf = await leafByKey(app.deps.db, `workflow_approvers:${proofId}`);
    expect(parseLogEntry(leaf!.entry!)).toMatchObject({ kind: 'workflow_approvers', id: proofId });
    expect(leaf!.index).toBe(prepared.body.approvers.leafIndex);
    await drive(app.request, workflowId, TEMPLATE, { until: 'signer_approval' });
    const grown = await registerOwn(second);
    expect(grown.body).toMatchObject({ size: 2, added: 1 });

    const t = await target(proofId, 'signer_approval');
    expect(t).toMatchObject({ members: [first.commitment], size: 1, root: registered.body.root });
    expect((await post(await prove(first, t))).status).toBe(200);
    // The second identity proves against the set as it is now: refused, nothing written.
    const tree = (await app.request.get(`/api/proof-workflows/approver-sets/${t.setId}`).expect(200)).body;
    expect(tree.roots.map((r: { size: number }) => r.size)).toEqual([2, 1]);
    const late = await prove(second, { ...t, members: tree.identityCommitments });
    await refused(workflowId, late, 'approval_root_after_prepare');
    // Nor as a bare commitment posted with the license.
    const bare = await app.request
      .post('/api/proof-workflows/event')
      .set(license.auth)
      .send({ workflowId, stage: 'signer_approval', action: 'approve', actorCommitment: actor('second') });
    expect(bare.status).toBe(409);
    expect(bare.body.code).toBe('approval_proof_required');
    const state = await app.request.post('/api/proof-workflows/verify').send({ proofId }).expect(200);
    expect(state.body.approvalStages).toContainEqual({
      stage: 'signer_approval',
      required: 2,
      counted: 1,
      proven: 1,
    });

    // A workflow prepared after the second joined fixes the larger set, and counts it.
    const next = await app.request
      .post('/api/proof-workflows/prepare')
      .set(license.auth)
      .send({ template: TEMPLATE })
      .expect(201);
    await drive(app.request, next.body.workflowId, TEMPLATE, { until: 'signer_approval' });
    const t2 = await target(next.body.proofId, 'signer_approval');
    expect(t2.members).toEqual([first.commitment, second.commitment]);
    expect((await post(await prove(second, t2))).status).toBe(200);
  });

  it('is changed only with an admin key: a workflows key is refused, nothing written', async () => {
    const license = await grantLicense(app.deps.db, 'TRIAL');
    const key = await app.request
      .post('/api/v1/organization/keys')
      .set(license.auth)
      .send({ name: 'workflows only', scopes: ['workflows'] });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    const before = await app.deps.db('approver_set_roots').count({ n: '*' }).first();
    const res = await app.request
      .post('/api/proof-workflows/approver-sets')
      .set('Authorization', `Bearer ${key.body.apiKey}`)
      .send({ template: TEMPLATE, stage: 'signer_approval', identityCommitments: [alice.commitment] });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('insufficient_scope');
    expect(await app.deps.db('approver_set_roots').count({ n: '*' }).first()).toEqual(before);
  });
});

describe('approvals posted at once', () => {
  it('count each approver once: two approvers close the stage, the same proof twice is taken once', async () => {
    const wf = await opened();
    expect((await post(await prove(carol, await target(wf.proofId, 'budget_review')))).status).toBe(200);
    const t = await target(wf.proofId, 'signer_approval');
    const [a, b] = await Promise.all([prove(alice, t), prove(bob, t)]);
    const replies = await Promise.all([post(a), post(a), post(b), post(a)]);
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(2);
    expect(statuses.filter((s) => s === 409)).toHaveLength(2);
    expect(replies[2]!.status).toBe(200);
    const rows = await app.deps.db('workflow_approvals').where('workflow_id', wf.workflowId);
    expect(rows.map((r: { stage: string }) => r.stage).sort()).toEqual([
      'budget_review',
      'signer_approval',
      'signer_approval',
    ]);
    const stage = await app.deps
      .db('workflow_stages')
      .where({ workflow_id: wf.workflowId, stage: 'signer_approval' })
      .first('status', 'approvers');
    expect(stage).toMatchObject({ status: 'completed' });
    expect(stage.approvers).toHaveLength(2);
  });
});

describe('a workflow approved with proofs', () => {
  let proofId: string;
  let verdict: Body;

  beforeAll(async () => {
    const wf = await opened();
    proofId = wf.proofId;
    const approve = async (identity: Identity, stage: string) => {
      const res = await post(await prove(identity, await target(proofId, stage)));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    };
    await approve(carol, 'budget_review');
    await approve(alice, 'signer_approval');
    await approve(carol, 'signer_approval');
    const attach = await event(app.request, {
      workflowId: wf.workflowId,
      stage: 'execution',
      action: 'attach_evidence',
      actorCommitment: actor('treasurer'),
      evidenceHash: evidence('the transfer receipt'),
    });
    expect(attach.status).toBe(200);
    await approve(bob, 'execution');
    verdict = await waitForPackage(app.request, proofId);
  }, 60_000);

  it('verifies through the route as proven, stage by stage, with every fact holding', async () => {
    const page = await app.request.get(`/proof-workflows/verify/${proofId}/`).expect(200);
    expect(page.text).toContain('data-approvals="proven"');
    expect(page.text).toContain('id="approver-sets"');
    expect(page.text).toContain(
      '<tr data-stage="signer_approval"><td>signer_approval</td><td data-size="4">4</td>',
    );
    expect(verdict).toMatchObject({
      existed: true,
      completed: true,
      approvalsMet: true,
      sequenceRespected: true,
      notAltered: true,
      approvals: 'proven',
      approvalReasons: [],
    });
    expect(verdict.approvalStages).toEqual([
      { stage: 'budget_review', required: 1, counted: 1, proven: 1 },
      { stage: 'signer_approval', required: 2, counted: 2, proven: 2 },
      { stage: 'execution', required: 1, counted: 1, proven: 1 },
    ]);
    // Each set as the workflow fixed it at prepare: when, and its size then.
    expect(verdict.approverSets.map((s: { stage: string; size: number }) => [s.stage, s.size])).toEqual([
      ['budget_review', 3],
      ['signer_approval', 4],
      ['execution', 3],
    ]);
    expect(verdict.approverSets[0].fixedAt).toBe(verdict.package.approvers.fixedAt);
    expect(Date.parse(verdict.package.approvers.fixedAt)).toBeLessThanOrEqual(
      Date.parse(verdict.package.auditTrail[0].at),
    );
    // The package carries each proof, and nothing that names an approver.
    expect(verdict.package.approvals).toHaveLength(4);
    const text = JSON.stringify(verdict);
    for (const who of [alice, bob, carol]) {
      expect(text).not.toContain(who.secret);
      expect(text).not.toContain(who.commitment);
    }
  });

  it('verifies offline: its bundle with a pinned trust root, and its package with the committed key alone', async () => {
    const bundle = (await app.request.get(`/api/proof-workflows/bundle/${proofId}`).expect(200)).body;
    const trust = parseTrustRoot((await app.request.get('/api/proof-workflows/trust-root').expect(200)).body);
    const none = async () => ({ valid: false, summary: '', reasons: ['not under test'] });
    const checkers = {
      workflow_package: workflowPackageChecker(async () => vkey),
      governance_package: none,
      auction_package: none,
      treasury_package: none,
    };
    const checked = await verifyBundle({ ...bundle, verificationKeys: undefined }, trust, checkers);
    expect(checked.ok, JSON.stringify(checked.findings)).toBe(true);
    const found = checked.findings.map((f) => f.text).join('\n');
    expect(found).toContain('required approvals met yes, approvals proven');
    expect(found).toContain(
      `approver sets fixed at prepare (${verdict.package.approvers.fixedAt}): budget_review 3 members, signer_approval 4 members, execution 3 members`,
    );

    // The bundle carries the key its proofs are checked with, which the verifier holds too.
    expect(bundle.verificationKeys).toEqual({ ballot: vkey });
    const held = async (circuit: string) => (circuit === 'ballot' ? vkey : undefined);
    const withKey = await verifyBundle(bundle, trust, checkers, held);
    expect(withKey.ok, JSON.stringify(withKey.findings)).toBe(true);
    expect(withKey.findings.at(-1)!.text).toMatch(
      /^the bundle's verification key of ballot is the one this verifier holds/,
    );
    const swapped = structuredClone(bundle);
    swapped.verificationKeys.ballot.IC[0][0] = '1';
    const refusedKey = await verifyBundle(swapped, trust, checkers, held);
    expect(refusedKey.ok).toBe(false);
    expect(refusedKey.findings.at(-1)!.text).toContain('is not the one this verifier holds');
    // With what the bundle carries alone, stock snarkjs checks an approval's proof.
    const dir = mkdtempSync(join(tmpdir(), 'px-approval-snarkjs-'));
    try {
      const first = bundle.package.approvals[0];
      writeFileSync(join(dir, 'vkey.json'), JSON.stringify(bundle.verificationKeys.ballot));
      writeFileSync(join(dir, 'proof.json'), JSON.stringify(first.proof));
      writeFileSync(join(dir, 'public.json'), JSON.stringify(first.publicSignals));
      const cli = join(process.cwd(), 'node_modules', 'snarkjs', 'build', 'cli.cjs');
      const { stdout } = await execFileAsync(process.execPath, [
        cli,
        'groth16',
        'verify',
        join(dir, 'vkey.json'),
        join(dir, 'public.json'),
        join(dir, 'proof.json'),
      ]);
      expect(stdout).toContain('OK!');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    expect(await verifyPackageApprovals(verdict.package, vkey)).toMatchObject({ approvals: 'proven' });
    // Without the verification key no proof counts.
    expect((await verifyPackageApprovals(verdict.package, undefined)).approvals).toBe('asserted');
  });

  it('stops being proven when a proof in it is changed', async () => {
    const pkg = structuredClone(verdict.package);
    pkg.approvals[1].proof.pi_a = pkg.approvals[0].proof.pi_a;
    const a = await verifyPackageApprovals(pkg, vkey);
    expect(a.approvals).toBe('asserted');
    expect(a.approvalReasons.map((r: { code: string }) => r.code)).toContain('approval_proof_invalid');
    // Each offline check names what it found: a nullifier counted twice, proofs of one stage naming two
    // sets, signals for another scope, a proof pointing at an entry that is not its approval.
    const codes = async (change: (p: typeof pkg) => void) => {
      const changed = structuredClone(verdict.package);
      change(changed);
      const v = await verifyPackageApprovals(changed, vkey);
      expect(v.approvals).not.toBe('proven');
      return v.approvalReasons.map((r: { code: string }) => r.code);
    };
    expect(await codes((p) => p.approvals.push(p.approvals[3]))).toContain('approval_nullifier_repeated');
    expect(await codes((p) => (p.approvals[2].setId = 'aps_01jd3zq8y4v6e8k2m0n5p7r9st'))).toContain(
      'approval_root_not_fixed',
    );
    // The sets the workflow fixed at prepare are checked too: a size or root changed no longer matches
    // the root's logged statement, and a package without them proves nothing.
    expect(await codes((p) => (p.approvers.sets[1].size += 1))).toContain('approver_set_statement_mismatch');
    expect(await codes((p) => delete p.approvers)).toContain('approval_set_not_fixed');
    expect(await codes((p) => (p.approvals[0].publicSignals[2] = '1'))).toContain(
      'approval_signals_mismatch',
    );
    expect(await codes((p) => (p.approvals[0].seq = 0))).toContain('approval_entry_missing');
    // And the signature no longer holds over it.
    expect(verifyPackage(pkg, { publicKey: verdict.signingKey.publicKey }).signatureValid).toBe(false);
  });
});

describe('approvals recorded the old way', () => {
  it('are reported asserted, never proven — invented commitments included, and proofs grafted from elsewhere', async () => {
    // Vendor Onboarding has no approver sets: a license holder can still post bare commitments.
    const ids = await prepare(app.request, 'Vendor Onboarding');
    await drive(app.request, ids.workflowId, 'Vendor Onboarding');
    const v = await waitForPackage(app.request, ids.proofId);
    expect(v.approvals).toBe('asserted');
    expect(v.approvals).not.toBe('proven');
    expect(v.approvalReasons.map((r: { code: string }) => r.code)).toContain('approvals_asserted');
    expect(v.package.approvals).toBeUndefined();
    const page = await app.request.get(`/proof-workflows/verify/${ids.proofId}/`).expect(200);
    expect(page.text).toContain('data-approvals="asserted"');
    expect(page.text).toContain('asserted, not proven');
    // Never reported as met: not "happened" on the page, "recorded" in the offline summary.
    expect(page.text).not.toContain('Required approvals happened');
    expect(page.text).toContain('Required approvals recorded (asserted by the organization, not proven)');
    expect(page.text).toContain('Its approvals are asserted, not proven');
    expect(await verifyPackageApprovals(v.package, vkey)).toMatchObject({ approvals: 'asserted' });

    // Proofs made for another workflow, copied in, do not make its approvals proven.
    const proven = (
      await app.request
        .post('/api/proof-workflows/verify')
        .send({
          proofId: (
            await app.deps
              .db('workflow_approvals as a')
              .join('workflows as w', 'w.id', 'a.workflow_id')
              .first('w.proof_id')
          ).proof_id,
        })
        .expect(200)
    ).body;
    const grafted = { ...structuredClone(v.package), approvals: proven.package?.approvals ?? [] };
    expect((await verifyPackageApprovals(grafted, vkey)).approvals).not.toBe('proven');
  });
});

describe('the command-line clients', () => {
  it('approve against a real server (npm run approve), and the bundle checks offline (npm run verify)', async () => {
    const server = http.createServer(createApp(app.deps)).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const dir = mkdtempSync(join(tmpdir(), 'px-approve-'));
    const cli = (file: string, ...args: string[]) =>
      execFileAsync(process.execPath, ['--import', 'tsx', file, ...args], {
        env: { ...process.env, LOG_LEVEL: 'silent' },
      });
    try {
      const idFile = join(dir, 'me.json');
      const made = await cli('cli/approve.ts', 'identity', '--out', idFile);
      const commitment = /identity commitment[^:]*: (\d+)/.exec(made.stderr)![1]!;
      await app.request
        .post('/api/proof-workflows/approver-sets')
        .set('Authorization', OPERATOR)
        .send({ template: 'Compliance Review', stage: 'approval', identityCommitments: [commitment] })
        .expect(201);
      const ids = await prepare(app.request, 'Compliance Review');
      await drive(app.request, ids.workflowId, 'Compliance Review', { until: 'approval' });
      const args = ['--url', url, '--proof', ids.proofId, '--stage', 'approval', '--identity', idFile];
      const artifactsDir = join(process.cwd(), 'circuits', 'artifacts');
      const approved = await cli('cli/approve.ts', 'approve', ...args, '--artifacts', artifactsDir);
      expect(JSON.parse(approved.stdout)).toMatchObject({ workflowStatus: 'completed', currentStage: null });
      // The same identity again is refused, and the CLI says so by its exit code.
      await expect(cli('cli/approve.ts', 'approve', ...args, '--artifacts', artifactsDir)).rejects.toThrow(
        /workflow_completed|approval_nullifier_used/,
      );

      const verdict = await waitForPackage(app.request, ids.proofId);
      // Compliance Review's other stages were approved the old way: asserted, not proven.
      expect(verdict.approvals).toBe('asserted');
      expect(verdict.approvalStages).toContainEqual({
        stage: 'approval',
        required: 1,
        counted: 1,
        proven: 1,
      });
      const bundleFile = join(dir, 'bundle.json');
      const trustFile = join(dir, 'trust-root.json');
      const bundle = (await app.request.get(`/api/proof-workflows/bundle/${ids.proofId}`).expect(200)).body;
      writeFileSync(bundleFile, JSON.stringify(bundle));
      writeFileSync(
        trustFile,
        JSON.stringify((await app.request.get('/api/proof-workflows/trust-root').expect(200)).body),
      );
      const checked = await cli('cli/verify.ts', bundleFile, '--trust', trustFile);
      expect(checked.stdout).toContain('approvals asserted, not proven');
      expect(checked.stdout).not.toContain('INVALID');
      // Beside the verdict, what it does not mean: one stage rests on a proof under the development
      // setup's keys, the others on the service's word.
      expect(checked.stdout).toMatch(
        /^WARNING: the zero-knowledge proofs were checked with keys from an insecure development setup \(dev-INSECURE-pot14\.ptau\)/m,
      );
      expect(checked.stdout).toMatch(/^WARNING: approvals are asserted, not proven/m);
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
