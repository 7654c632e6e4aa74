// Proof packages and stored records: built from a finished workflow, verified offline, and every kind
// of tampering caught with the reason; nothing private ever reaches a package.
import { describe, expect, it } from 'vitest';
import { MemoryLog } from '../../shared/platform/translog/memory-log';
import { toHex } from '../../shared/platform/translog/merkle';
import { signTreeHead } from '../../shared/platform/translog/tree-head';
import { chainGenesis } from '../../shared/proofs/chain';
import { checkRecords } from '../../shared/workflows/chain';
import { genesisOf } from '../../shared/workflows/engine';
import { attachLogProof, packageLeafData, packageLeafHash, signPackage } from '../../shared/proofs/envelope';
import { buildWorkflowPackage, verifyPackage, verifyRecords } from '../../shared/workflows/package';
import type { WorkflowPackage } from '../../shared/workflows/package';
import type { StageRecord } from '../../shared/workflows/records';
import { findTemplate, workflowTemplates } from '../../shared/workflows/templates';
import type { WorkflowTemplate } from '../../shared/workflows/templates';
import { Run, actor, completeWorkflow, evidence, logKey, otherKey, serviceKey } from './helpers';

const underwriting = findTemplate('Underwriting') as WorkflowTemplate;
const keys = { publicKey: serviceKey.publicKey };
const issuedAt = '2025-03-01T12:00:00.000Z';

function finishedPackage(
  template = underwriting,
  proofId = 'prf_01jd3testpackage0000000000',
): WorkflowPackage {
  const run = completeWorkflow(template, proofId);
  return buildWorkflowPackage({ template, proofId, stages: run.stages, issuedAt }, serviceKey);
}

/** A package appended to a log that already holds some others, with its inclusion proof attached. */
function loggedPackage(): { pkg: WorkflowPackage; log: MemoryLog } {
  const log = new MemoryLog();
  for (let i = 0; i < 6; i++) log.append(Buffer.from(`earlier package ${i}`));
  const pkg = finishedPackage();
  const { index } = log.append(packageLeafData(pkg));
  for (let i = 0; i < 3; i++) log.append(Buffer.from(`later package ${i}`));
  const treeHead = signTreeHead({ treeSize: log.size, rootHash: log.root(), timestamp: issuedAt }, logKey);
  const logged = attachLogProof(pkg, {
    leafIndex: index,
    treeSize: log.size,
    path: log.inclusionProof(index).map(toHex),
    treeHead,
    leafHash: packageLeafHash(pkg),
  });
  return { pkg: logged, log };
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const allTrue = {
  existed: true,
  completed: true,
  approvalsMet: true,
  sequenceRespected: true,
  notAltered: true,
};

/** Every leaf path of a JSON value, for tampering with each field in turn. */
function leafPaths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (value !== null && typeof value === 'object') {
    return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) =>
      leafPaths(v, [...prefix, Array.isArray(value) ? Number(k) : k]),
    );
  }
  return [prefix];
}

function tamper(pkg: unknown, path: (string | number)[]): unknown {
  const copy = clone(pkg) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path[path.length - 1] as string | number;
  const v = node[last];
  if (typeof v === 'boolean') node[last] = !v;
  else if (typeof v === 'number') node[last] = v + 1;
  else if (v === null) node[last] = 'f'.repeat(64);
  else if (typeof v === 'string') {
    // Keep the shape valid where we can, so the check that fails is the integrity check, not the parser.
    const flip = (c: string) => (c === '0' ? '1' : c === 'a' ? 'b' : c === 'A' ? 'B' : '0');
    const i = /^[0-9a-f]{64}$/.test(v) ? 10 : /^\d{4}-/.test(v) ? 18 : v.length - 1;
    node[last] = v.slice(0, i) + flip(v[i] ?? 'x') + v.slice(i + 1);
  }
  return copy;
}

describe('proof packages', () => {
  for (const t of workflowTemplates) {
    it(`verify offline for a finished ${t.name}`, () => {
      const pkg = finishedPackage(t);
      expect(pkg.kind).toBe('workflow');
      expect(pkg.subject.template).toBe(t.name);
      expect(pkg.facts).toEqual({
        existed: true,
        completed: true,
        approvalsMet: true,
        sequenceRespected: true,
      });
      expect(verifyPackage(clone(pkg), keys)).toEqual({ ...allTrue, signatureValid: true, reasons: [] });
    });
  }

  it('carry a public timeline: status, time, proof hash and actor commitments per stage', () => {
    const pkg = finishedPackage();
    const approval = pkg.stages.find((s) => s.key === 'approval');
    expect(approval).toMatchObject({ status: 'completed', approvals: 2 });
    expect(approval?.actorCommitments.sort()).toEqual(
      [actor('approval-reviewer-0'), actor('approval-reviewer-1')].sort(),
    );
    expect(pkg.chain.genesis).toBe(
      chainGenesis({ kind: 'workflow', subjectId: pkg.proofId, label: 'Underwriting' }),
    );
    expect(pkg.chain.head).toBe(pkg.auditTrail[pkg.auditTrail.length - 1]?.entryHash);
  });

  it('fail verification when any single field is changed', () => {
    const { pkg } = loggedPackage();
    const logKeys = { ...keys, logPublicKey: logKey.publicKey };
    expect(verifyPackage(clone(pkg), logKeys)).toMatchObject({
      ...allTrue,
      signatureValid: true,
      inclusionValid: true,
    });
    const paths = leafPaths(pkg);
    expect(paths.length).toBeGreaterThan(100);
    for (const path of paths) {
      const verdict = verifyPackage(tamper(pkg, path), logKeys);
      const where = path.join('.');
      expect(verdict.notAltered, where).toBe(false);
      expect(
        verdict.existed && verdict.completed && verdict.approvalsMet && verdict.sequenceRespected,
        where,
      ).toBe(false);
      expect(verdict.reasons.length, where).toBeGreaterThan(0);
      for (const check of [
        'existed',
        'completed',
        'approvalsMet',
        'sequenceRespected',
        'notAltered',
      ] as const) {
        if (!verdict[check])
          expect(
            verdict.reasons.some((r) => r.check === check),
            `${where} ${check}`,
          ).toBe(true);
      }
    }
  });

  it('name the broken check: signature, log, or a stage', () => {
    const { pkg } = loggedPackage();
    const logKeys = { ...keys, logPublicKey: logKey.publicKey };

    const wrongKey = verifyPackage(pkg, { publicKey: otherKey.publicKey, logPublicKey: logKey.publicKey });
    expect(wrongKey.signatureValid).toBe(false);
    expect(wrongKey.reasons[0]).toMatchObject({ check: 'signatureValid', code: 'unknown_key' });

    const badHead = verifyPackage(
      { ...pkg, log: { ...pkg.log, treeHead: { ...pkg.log?.treeHead, treeSize: 11 } } },
      logKeys,
    );
    expect(badHead).toMatchObject({ signatureValid: true, inclusionValid: false, notAltered: false });
    expect(badHead.reasons[0]).toMatchObject({ check: 'inclusionValid', code: 'bad_tree_head' });

    // A stage's stated status rewritten and re-signed by someone holding another key: the signature fails.
    const forged = clone(pkg);
    (forged.stages[2] as { status: string }).status = 'rejected';
    expect(verifyPackage(forged, logKeys).reasons.map((r) => r.code)).toContain('bad_signature');
  });

  it('recompute the chain even under a valid signature, and say which stage is wrong', () => {
    // Re-signing with the service key shows the content checks hold on their own, not only through the signature.
    const pkg = finishedPackage();
    const body = clone(pkg) as Partial<WorkflowPackage>;
    delete body.signature;
    delete body.issuer;
    (body.auditTrail?.[3] as { at: string }).at = '2025-03-01T09:04:30.000Z';
    const resigned = buildResigned(body);
    const verdict = verifyPackage(resigned, keys);
    expect(verdict.signatureValid).toBe(true);
    expect(verdict.notAltered).toBe(false);
    expect(verdict.reasons[0]).toMatchObject({
      check: 'notAltered',
      code: 'entry_hash_mismatch',
      stage: 'document_review',
    });
  });

  it('report an unsupported kind and malformed input without throwing', () => {
    const pkg = finishedPackage();
    expect(verifyPackage({ ...pkg, kind: 'auction' }, keys).reasons[0]?.code).toBe('unsupported_kind');
    expect(verifyPackage('not json', keys).reasons[0]?.code).toBe('malformed');
    expect(verifyPackage({ ...pkg, notes: 'x' }, keys).reasons[0]?.code).toBe('malformed');
  });

  it('refuse to build from an open workflow or altered records', () => {
    const run = new Run({ template: underwriting, proofId: 'prf_x' });
    run.event('application', 'submit', 'a', { evidenceHash: evidence('form') });
    expect(() =>
      buildWorkflowPackage(
        { template: underwriting, proofId: 'prf_x', stages: run.stages, issuedAt },
        serviceKey,
      ),
    ).toThrow(/closed/);
    const done = completeWorkflow(underwriting, 'prf_y');
    const stages = clone(done.stages);
    (stages[1]?.auditTrail[0] as { actorCommitment: string }).actorCommitment = actor('someone else');
    expect(() =>
      buildWorkflowPackage({ template: underwriting, proofId: 'prf_y', stages, issuedAt }, serviceKey),
    ).toThrow(/recompute/);
  });

  it('verify a rejected workflow as existed but not completed', () => {
    const run = new Run({ template: underwriting, proofId: 'prf_rej' });
    run.event('application', 'submit', 'a', { evidenceHash: evidence('form') });
    run.event('document_review', 'reject', 'reviewer');
    const pkg = buildWorkflowPackage(
      { template: underwriting, proofId: 'prf_rej', stages: run.stages, issuedAt },
      serviceKey,
    );
    const verdict = verifyPackage(pkg, keys);
    expect(verdict).toMatchObject({
      existed: true,
      completed: false,
      approvalsMet: false,
      sequenceRespected: true,
      notAltered: true,
    });
    expect(verdict.reasons.map((r) => r.code).sort()).toEqual(['not_approvalsMet', 'not_completed']);
  });
});

/** Re-signs a modified body with the service key, as a compromised builder would. */
function buildResigned(body: Partial<WorkflowPackage>): WorkflowPackage {
  return signPackage<WorkflowPackage>(body as never, serviceKey);
}

describe('stored records', () => {
  const template = findTemplate('Internal Audit') as WorkflowTemplate;
  const proofId = 'prf_records';
  const fresh = () => clone(completeWorkflow(template, proofId).stages);

  it('verify when untouched', () => {
    expect(verifyRecords({ template, proofId, records: fresh() })).toEqual({ ...allTrue, reasons: [] });
  });

  const cases: Array<[string, string, (s: StageRecord[]) => void]> = [
    [
      'an entry changed',
      'fieldwork',
      (s) => ((s[1]?.auditTrail[0] as { at: string }).at = '2025-03-02T00:00:00.000Z'),
    ],
    ['an entry removed', 'findings_review', (s) => s[2]?.auditTrail.splice(1, 1)],
    ['a stage status changed', 'sign_off', (s) => ((s[3] as { status: string }).status = 'rejected')],
    [
      'a proof hash replaced',
      'findings_review',
      (s) => ((s[2] as { proofHash: string }).proofHash = 'e'.repeat(64)),
    ],
    [
      'an actor swapped',
      'application',
      (s) => ((s[0] as { actorCommitment: string }).actorCommitment = actor('x')),
    ],
    [
      'a timestamp moved',
      'proof',
      (s) => ((s[4] as { timestamp: string }).timestamp = '2030-01-01T00:00:00.000Z'),
    ],
  ];
  for (const [what, stage, change] of cases) {
    it(`report ${what} at stage ${stage}`, () => {
      const records = fresh();
      change(records);
      const verdict = verifyRecords({ template, proofId, records });
      expect(verdict.notAltered).toBe(false);
      expect(verdict.altered?.stage).toBe(stage);
      expect(verdict.existed || verdict.completed).toBe(false);
    });
  }

  it('report the first altered stage when several are', () => {
    const records = fresh();
    (records[3]?.auditTrail[0] as { actorCommitment: string }).actorCommitment = actor('y');
    (records[1]?.auditTrail[0] as { actorCommitment: string }).actorCommitment = actor('z');
    const check = checkRecords(
      genesisOf({ template, proofId }),
      template.stages.map((s) => s.key),
      records,
    );
    expect(check.ok).toBe(false);
    expect(!check.ok && check.altered.stage).toBe('fieldwork');
  });

  it('report an open workflow as existed, not completed', () => {
    const run = new Run({ template, proofId });
    run.event('application', 'submit', 'auditor', { evidenceHash: evidence('plan') });
    const verdict = verifyRecords({ template, proofId, records: run.stages });
    expect(verdict).toMatchObject({
      existed: true,
      completed: false,
      sequenceRespected: true,
      notAltered: true,
    });
  });
});

describe('privacy', () => {
  it('never puts documents, thresholds, notes or their plain hashes into a package', () => {
    const secrets = [
      'Applicant SSN 078-05-1120',
      'credit score 712 >= threshold 680',
      'reviewer note: income looks inflated, methodology v3 weights',
      'payslip-2024-12.pdf',
    ];
    const template = underwriting;
    const run = completeWorkflow(template, 'prf_private', secrets);
    const pkg = buildWorkflowPackage(
      { template, proofId: 'prf_private', stages: run.stages, issuedAt },
      serviceKey,
    );
    assertNoPrivateData(pkg, [...secrets, ...secrets.map(evidence)]);
    // The stored rows keep the salted commitments too, never the evidence hash itself.
    assertNoPrivateData(run.stages, [...secrets, ...secrets.map(evidence)]);
    expect(verifyPackage(pkg, keys).notAltered).toBe(true);
  });
});

function assertNoPrivateData(value: unknown, privateStrings: string[]): void {
  const json = JSON.stringify(value).toLowerCase();
  for (const s of privateStrings) expect(json.includes(s.toLowerCase()), `package contains ${s}`).toBe(false);
}
