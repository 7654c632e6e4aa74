// Credentialed approvers, end to end against the real Postgres and the committed circuit: an approver
// set whose root statement requires each approver to hold a staff-role credential from an issuer the
// organization accepts; each approval proves, in one Groth16 proof of circuits/approval.circom, that
// its author is a member and holds such a credential about that same identity, unrevoked and valid,
// naming neither. Every way of approving without it is refused with nothing written; the verdict and
// the offline bundle check say "credentialed", and refuse each part of it changed; the snarkjs CLI
// verifies an approval with the served key.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CredentialDocument } from '../../shared/credentials/format';
import {
  emptyRevocations,
  issueCredential,
  issuerPublication,
  newIssuerKey,
  revoke,
} from '../../shared/credentials/issuer';
import type { IssuerKeyFile, Revocations } from '../../shared/credentials/issuer';
import { staffRoleSchema } from '../../shared/credentials/schemas';
import { AppError } from '../../shared/platform/errors';
import {
  createIdentity,
  loadCredentialedApprovalArtifacts,
  loadMembershipArtifacts,
  makeApproval,
  makeCredentialedApproval,
} from '../../shared/workflows/approval-client';
import type { Approval, ApprovalTarget, Identity } from '../../shared/workflows/approval-client';
import { verifyBundle } from '../../shared/platform/translog/bundle';
import { parseTrustRoot } from '../../shared/platform/trust';
import { CREDENTIALED_APPROVAL_PUBLIC_SIGNALS } from '../../shared/workflows/approval-protocol';
import { verifyPackageApprovals, workflowPackageChecker } from '../../shared/workflows/package';
import { terminateCurves } from '../../shared/zk';
import { loadVerificationKey } from '../../shared/zk/verify';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import {
  OPERATOR,
  actor,
  drive,
  event,
  evidence,
  prepare,
  testProver,
  waitForPackage,
} from '../workflows/e2e/helpers';
import type { Body, TestProver } from '../workflows/e2e/helpers';

const exec = promisify(execFile);
const TEMPLATE = 'Treasury Approval';
const STAGE = 'signer_approval';
const artifactsDir = join(process.cwd(), 'circuits', 'artifacts');
const requirement = { schema: 'staff-role', terms: [{ field: 'role', op: 'eq', value: 'treasury_signer' }] };

let app: TestApp;
let prover: TestProver;
let directory: IssuerKeyFile;
let revocations: Revocations;
let alice: Identity;
let bob: Identity;
let carol: Identity;
const dir = mkdtempSync(join(tmpdir(), 'px-approvers-'));

const post = (path: string, body: object) => app.request.post(path).set('Authorization', OPERATOR).send(body);

async function staffCredential(
  key: IssuerKeyFile,
  identity: Identity,
  role = 'treasury_signer',
): Promise<CredentialDocument> {
  return issueCredential(key, {
    schema: staffRoleSchema,
    subject: identity.commitment,
    validFrom: new Date(Date.now() - 60_000).toISOString(),
    validUntil: '2030-01-01T00:00:00Z',
    fields: { role, since: '2024-05-01' },
  });
}

const target = async (proofId: string): Promise<ApprovalTarget> => {
  const res = await app.request.get('/api/proof-workflows/approvals/target').query({ proofId, stage: STAGE });
  expect(res.status, res.text).toBe(200);
  return res.body as ApprovalTarget;
};

async function credentialed(
  identity: Identity,
  t: ApprovalTarget,
  credential: CredentialDocument,
  revoked: readonly string[] = revocations.revoked.map((r) => r.nonce),
): Promise<Approval> {
  const { timings: _t, ...approval } = await makeCredentialedApproval({
    identity,
    target: t,
    credential,
    revocation: { revoked },
    artifacts: await loadCredentialedApprovalArtifacts(artifactsDir),
  });
  return approval;
}

async function written(workflowId: string) {
  const db = app.deps.db;
  const [entries, approvals] = await Promise.all([
    db('audit_entries').where('workflow_id', workflowId).count({ n: '*' }).first(),
    db('workflow_approvals').count({ n: '*' }).first(),
  ]);
  return { entries: Number(entries!.n), approvals: Number(approvals!.n) };
}

async function refused(workflowId: string, approval: Approval, code: string, status = 409) {
  const before = await written(workflowId);
  const res = await app.request.post('/api/proof-workflows/approvals').send(approval);
  expect(res.status, res.text).toBe(status);
  expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
  expect(res.body.code).toBe(code);
  expect(await written(workflowId)).toEqual(before);
}

/** An anonymous membership approval of a stage whose set requires no credential. */
async function plainApproval(identity: Identity, proofId: string, stage: string): Promise<void> {
  const res = await app.request.get('/api/proof-workflows/approvals/target').query({ proofId, stage });
  expect(res.status, res.text).toBe(200);
  const { timings: _t, ...approval } = await makeApproval({
    identity,
    target: res.body as ApprovalTarget,
    artifacts: await loadMembershipArtifacts(artifactsDir),
  });
  const posted = await app.request.post('/api/proof-workflows/approvals').send(approval);
  expect(posted.status, posted.text).toBe(200);
}

/** A Treasury Approval workflow prepared now, its budget review approved anonymously: signing is open. */
async function opened() {
  const ids = await prepare(app.request, TEMPLATE);
  await drive(app.request, ids.workflowId, TEMPLATE, { until: 'budget_review' });
  await plainApproval(carol, ids.proofId, 'budget_review');
  return ids;
}

beforeAll(async () => {
  app = testApp();
  prover = testProver();
  directory = await newIssuerKey('Example Treasury staff directory');
  revocations = emptyRevocations(directory.keyId);
  const accepted = await post('/api/proof-workflows/issuers', {
    publication: await issuerPublication(directory, revocations, [staffRoleSchema], new Date()),
  });
  expect(accepted.status, accepted.text).toBe(201);
  [alice, bob, carol] = await Promise.all([createIdentity(), createIdentity(), createIdentity()]);
}, 60_000);

afterAll(async () => {
  await prover.close();
  await app.close();
  await terminateCurves();
  rmSync(dir, { recursive: true, force: true });
});

describe('a credentialed approver set', () => {
  it('is registered with what each approver must hold, in its logged root statement; a change is a new root', async () => {
    for (const stage of ['budget_review', 'execution']) {
      const plain = await post('/api/proof-workflows/approver-sets', {
        template: TEMPLATE,
        stage,
        identityCommitments: [alice, bob, carol].map((i) => i.commitment),
      });
      expect(plain.status, plain.text).toBe(201);
      expect(plain.body.credential).toBeUndefined();
    }
    const res = await post('/api/proof-workflows/approver-sets', {
      template: TEMPLATE,
      stage: STAGE,
      identityCommitments: [alice, bob, carol].map((i) => i.commitment),
      credential: requirement,
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.credential).toMatchObject({
      what: 'a staff-role credential',
      schema: { name: 'staff-role' },
      terms: requirement.terms,
      maxRevocationAge: 7 * 86_400,
    });
    const tree = (await app.request.get(`/api/proof-workflows/approver-sets/${res.body.setId}`).expect(200))
      .body;
    expect(tree.credential).toEqual(res.body.credential);
    // The same members and requirement again: nothing new. Another requirement: a new root, same size.
    const again = await post('/api/proof-workflows/approver-sets', {
      template: TEMPLATE,
      stage: STAGE,
      identityCommitments: [alice.commitment],
      credential: requirement,
    });
    expect(again.body).toMatchObject({ seq: res.body.seq, added: 0 });
    for (const [credential, status, code] of [
      [{ schema: 'no-such', terms: requirement.terms }, 422, 'unknown_schema'],
      [{ schema: 'staff-role', terms: [{ field: 'salary', op: 'gte', value: 1 }] }, 400, 'validation_failed'],
      [{ schema: 'staff-role', terms: [{ field: 'role', op: 'gte', value: 1 }] }, 400, 'validation_failed'],
    ] as const) {
      const bad = await post('/api/proof-workflows/approver-sets', {
        template: TEMPLATE,
        stage: STAGE,
        identityCommitments: [alice.commitment],
        credential,
      });
      expect(bad.status, bad.text).toBe(status);
      expect(bad.body.code).toBe(code);
    }
  });

  let approved: { proofId: string; approval: Approval };

  it('takes approvals only as proofs of membership and a credential in one, refusing each way around it', async () => {
    const { workflowId, proofId } = await opened();
    const t = await target(proofId);
    expect(t).toMatchObject({ circuit: 'approval', credential: { terms: requirement.terms } });

    // A bare membership proof: the set requires a credential.
    const { timings: _t, ...plain } = await makeApproval({
      identity: alice,
      target: t,
      artifacts: await loadMembershipArtifacts(artifactsDir),
    });
    await refused(workflowId, plain, 'approval_credential_required');

    // A credential of another role cannot be proven at all (the holder's side says so).
    await expect(credentialed(carol, t, await staffCredential(directory, carol, 'reviewer'))).rejects.toThrow(
      /does not satisfy eq/,
    );
    // A credential about another identity cannot be proven as this one's.
    await expect(credentialed(carol, t, await staffCredential(directory, alice))).rejects.toThrow(
      /another identity/,
    );
    // Another query (role = reviewer) proven honestly is not the set's.
    const reviewer = await credentialed(
      carol,
      { ...t, credential: { ...t.credential!, terms: [{ field: 'role', op: 'eq', value: 'reviewer' }] } },
      await staffCredential(directory, carol, 'reviewer'),
    );
    await refused(workflowId, reviewer, 'approval_credential_query_mismatch');
    // An issuer the organization does not accept.
    const stranger = await newIssuerKey('A directory nobody accepted');
    await refused(
      workflowId,
      await credentialed(carol, t, await staffCredential(stranger, carol)),
      'credential_issuer_not_accepted',
    );

    // Revoked: the holder cannot prove against the list that revokes it; against the list from before,
    // the service refuses the superseded root (an approval's root is the issuer's newest when posted).
    const revokedOne = await staffCredential(directory, carol);
    const before = revocations.revoked.map((r) => r.nonce);
    revocations = revoke(revocations, revokedOne.credentialStatus.revocationNonce, new Date());
    const published = await post(`/api/proof-workflows/issuers/${directory.keyId}/revocations`, {
      publication: await issuerPublication(directory, revocations, [staffRoleSchema], new Date()),
    });
    expect(published.status, published.text).toBe(201);
    await expect(credentialed(carol, t, revokedOne)).rejects.toSatisfy(
      (err) => err instanceof AppError && err.code === 'credential_revoked',
    );
    await refused(workflowId, await credentialed(carol, t, revokedOne, before), 'revocation_root_superseded');

    // A proof with a signal changed: the credential's time.
    const good = await credentialed(alice, t, await staffCredential(directory, alice));
    const now = CREDENTIALED_APPROVAL_PUBLIC_SIGNALS.indexOf('now');
    const shifted = good.publicSignals.map((v, i) => (i === now ? String(BigInt(v) - 5n) : v));
    await refused(workflowId, { ...good, publicSignals: shifted }, 'approval_proof_invalid');

    // Two credentialed signers: the stage completes.
    const first = await app.request.post('/api/proof-workflows/approvals').send(good);
    expect(first.status, first.text).toBe(200);
    await refused(workflowId, good, 'approval_nullifier_used');
    const second = await credentialed(bob, await target(proofId), await staffCredential(directory, bob));
    const done = await app.request.post('/api/proof-workflows/approvals').send(second);
    expect(done.status, done.text).toBe(200);
    expect(done.body.stage.status).toBe('completed');
    approved = { proofId, approval: good };

    // The execution, approved anonymously too (its set requires no credential).
    const executed = await event(app.request, {
      workflowId,
      stage: 'execution',
      action: 'attach_evidence',
      actorCommitment: actor('treasurer'),
      evidenceHash: evidence('executed transfer'),
    });
    expect(executed.status, executed.text).toBe(200);
    await plainApproval(carol, proofId, 'execution');
  }, 240_000);

  it('verifies as credentialed approvals, through the route and offline, and not once a part is changed', async () => {
    const verdict = await waitForPackage(app.request, approved.proofId);
    const sets = verdict.approverSets as Body[];
    expect(sets.find((s: Body) => s.stage === STAGE)).toMatchObject({
      size: 3,
      credential: {
        what: 'a staff-role credential',
        query: 'role = treasury_signer',
        issuers: ['Example Treasury staff directory'],
      },
    });
    expect(verdict.approvalStages.find((s: Body) => s.stage === STAGE)).toMatchObject({
      counted: 2,
      proven: 2,
    });

    const pkg = verdict.package as Body;
    expect(pkg.log.statements).toHaveLength(4);
    expect(JSON.stringify(verdict)).not.toContain(alice.secret);

    // The bundle: the package, its log proof, and both approvals' issuer and revocation root statements
    // in the log, checked as a third party would, with the keys it carries for snarkjs.
    const bundle = (await app.request.get(`/api/proof-workflows/bundle/${approved.proofId}`).expect(200))
      .body;
    expect(Object.keys(bundle.verificationKeys).sort()).toEqual(['approval', 'ballot']);
    const trust = parseTrustRoot((await app.request.get('/api/proof-workflows/trust-root').expect(200)).body);
    const none = async () => ({ valid: false, summary: '', reasons: ['not under test'] });
    const checked = await verifyBundle(
      bundle,
      trust,
      {
        workflow_package: workflowPackageChecker(
          () => loadVerificationKey('ballot'),
          async () => undefined,
          undefined,
          () => loadVerificationKey('approval'),
        ),
        governance_package: none,
        auction_package: none,
        treasury_package: none,
      },
      (c) => loadVerificationKey(c),
    );
    expect(checked.ok, JSON.stringify(checked.findings)).toBe(true);
    const found = checked.findings.map((f) => f.text).join('\n');
    expect(found).toContain('required approvals met yes, approvals proven');
    expect(found).toContain(
      'signer_approval 3 members, each holding a staff-role credential showing role = treasury_signer (from Example Treasury staff directory)',
    );
    const [ballotKey, approvalKey] = await Promise.all([
      loadVerificationKey('ballot'),
      loadVerificationKey('approval'),
    ]);
    const offline = await verifyPackageApprovals(pkg, ballotKey, {
      credentialKey: approvalKey,
      logVerified: true,
    });
    expect(offline.approvalReasons).toEqual([]);
    expect(offline.approverSets.find((s) => s.stage === STAGE)?.credential?.issuers).toEqual([
      'Example Treasury staff directory',
    ]);
    const signer = (pkg.approvals as Body[]).findIndex((a: Body) => a.stage === STAGE);
    const check = async (changed: Body) =>
      (
        await verifyPackageApprovals(changed, ballotKey, { credentialKey: approvalKey, logVerified: true })
      ).approvalReasons.map((r) => r.code);
    const copy = () => JSON.parse(JSON.stringify(pkg)) as Body;
    // Without the key, without the facts, with another issuer statement, with the requirement weakened.
    expect(
      await verifyPackageApprovals(pkg, ballotKey, {}).then((v) => v.approvalReasons.map((r) => r.code)),
    ).toContain('approval_proof_invalid');
    const noFacts = copy();
    delete noFacts.approvals[signer].credential;
    expect(await check(noFacts)).toContain('approval_credential_missing');
    const otherIssuer = copy();
    otherIssuer.approvals[signer].credential.issuer.statement.name = 'Someone else';
    expect(await check(otherIssuer)).toContain('approval_credential_invalid');
    const weaker = copy();
    const fixedSet = weaker.approvers.sets.find((s: Body) => s.stage === STAGE);
    fixedSet.credential.terms = [{ field: 'role', op: 'ne', value: 'treasury_signer' }];
    expect(await check(weaker)).toContain('approver_set_statement_mismatch');
    const skewed = copy();
    skewed.approvals[signer].credential.revocation.statement.publishedAt = '2020-01-01T00:00:00.000Z';
    expect(await check(skewed)).toContain('approval_credential_invalid');

    // The verify page says it in words, naming no one.
    const page = await app.request.get(`/proof-workflows/verify/${approved.proofId}/`).expect(200);
    expect(page.text).toMatch(
      /<tr data-stage="signer_approval"><td>signer_approval<\/td><td data-size="3">3<\/td><td class="held">a staff-role credential showing role = treasury_signer, from Example Treasury staff directory, proven inside each approval<\/td>/,
    );
    expect(page.text).toContain('<td class="held">no credential required</td>');
    for (const who of [alice, bob]) expect(page.text).not.toContain(who.commitment);

    // The stock snarkjs CLI verifies the approval with the key the service serves.
    const vkey = await app.request.get('/circuits/approval.vkey.json').expect(200);
    writeFileSync(join(dir, 'vkey.json'), vkey.text);
    writeFileSync(join(dir, 'public.json'), JSON.stringify(approved.approval.publicSignals));
    writeFileSync(join(dir, 'proof.json'), JSON.stringify(approved.approval.proof));
    const cli = await exec(process.execPath, [
      join(process.cwd(), 'node_modules', 'snarkjs', 'build', 'cli.cjs'),
      'groth16',
      'verify',
      join(dir, 'vkey.json'),
      join(dir, 'public.json'),
      join(dir, 'proof.json'),
    ]);
    expect(cli.stdout).toContain('OK!');
  }, 120_000);
});
