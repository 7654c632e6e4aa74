// Each sequence and approval rule broken once over HTTP (409 with the rule's code, nothing written),
// and concurrent events on one workflow serialized into one unforked chain.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyRecords } from '../../../shared/workflows/package';
import { loadRecords } from '../../../shared/workflows/load';
import { findTemplate } from '../../../shared/workflows/templates';
import type { WorkflowTemplate } from '../../../shared/workflows/templates';
import { testApp } from '../../helpers';
import type { TestApp } from '../../helpers';
import { OPERATOR, actor, drive, event, evidence, prepare } from './helpers';

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(() => app.close());

const entryCount = async (workflowId: string) =>
  Number((await app.deps.db('audit_entries').where('workflow_id', workflowId).count({ n: '*' }))[0]!.n);

async function expectRule(
  workflowId: string,
  body: { stage: string; action: string; who: string; evidenceHash?: string },
  status: number,
  code: string,
) {
  const before = await entryCount(workflowId);
  const res = await event(app.request, {
    workflowId,
    stage: body.stage,
    action: body.action,
    actorCommitment: actor(body.who),
    ...(body.evidenceHash ? { evidenceHash: body.evidenceHash } : {}),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.code).toBe(code);
  expect(await entryCount(workflowId)).toBe(before);
}

describe('the engine’s rules over HTTP', () => {
  it('out_of_sequence: a later stage before the open one, and a completed stage again', async () => {
    const { workflowId } = await prepare(app.request, 'Vendor Onboarding');
    await expectRule(
      workflowId,
      { stage: 'approval', action: 'approve', who: 'buyer' },
      409,
      'out_of_sequence',
    );
    await drive(app.request, workflowId, 'Vendor Onboarding', { until: 'due_diligence' });
    await expectRule(
      workflowId,
      { stage: 'application', action: 'submit', who: 'vendor' },
      409,
      'out_of_sequence',
    );
  });

  it('duplicate_approval: one actor commitment approving a stage twice', async () => {
    const { workflowId } = await prepare(app.request, 'Grant Review');
    await drive(app.request, workflowId, 'Grant Review', { until: 'panel_review' });
    await event(app.request, {
      workflowId,
      stage: 'panel_review',
      action: 'attach_evidence',
      actorCommitment: actor('panel'),
      evidenceHash: evidence('scores'),
    }).expect(200);
    await event(app.request, {
      workflowId,
      stage: 'panel_review',
      action: 'approve',
      actorCommitment: actor('p1'),
    }).expect(200);
    await expectRule(
      workflowId,
      { stage: 'panel_review', action: 'approve', who: 'p1' },
      409,
      'duplicate_approval',
    );
  });

  it('workflow_completed: any event after completion', async () => {
    const { workflowId } = await prepare(app.request, 'Compliance Review');
    await drive(app.request, workflowId, 'Compliance Review');
    await expectRule(
      workflowId,
      { stage: 'proof', action: 'finalize', who: 'anyone' },
      409,
      'workflow_completed',
    );
    await expectRule(
      workflowId,
      { stage: 'approval', action: 'approve', who: 'late' },
      409,
      'workflow_completed',
    );
  });

  it('workflow_rejected: any event after a rejection', async () => {
    const { workflowId } = await prepare(app.request, 'Treasury Approval');
    await drive(app.request, workflowId, 'Treasury Approval', { until: 'budget_review' });
    await event(app.request, {
      workflowId,
      stage: 'budget_review',
      action: 'reject',
      actorCommitment: actor('cfo'),
    }).expect(200);
    await expectRule(
      workflowId,
      { stage: 'budget_review', action: 'approve', who: 'cfo2' },
      409,
      'workflow_rejected',
    );
  });

  it('action_not_allowed, evidence_required, changes_pending, blind_policy_proof_required, unknown_stage', async () => {
    const { workflowId } = await prepare(app.request, 'Underwriting');
    await expectRule(
      workflowId,
      { stage: 'application', action: 'approve', who: 'a' },
      409,
      'action_not_allowed',
    );
    await expectRule(
      workflowId,
      { stage: 'application', action: 'submit', who: 'a' },
      409,
      'evidence_required',
    );
    await expectRule(workflowId, { stage: 'appraisal', action: 'approve', who: 'a' }, 422, 'unknown_stage');
    await drive(app.request, workflowId, 'Underwriting', { until: 'risk_assessment' });
    // A plain document is not a verified blind policy proof.
    await event(app.request, {
      workflowId,
      stage: 'risk_assessment',
      action: 'attach_evidence',
      actorCommitment: actor('analyst'),
      evidenceHash: evidence('credit report'),
    }).expect(200);
    await expectRule(
      workflowId,
      { stage: 'risk_assessment', action: 'approve', who: 'risk' },
      409,
      'blind_policy_proof_required',
    );
    await event(app.request, {
      workflowId,
      stage: 'risk_assessment',
      action: 'request_changes',
      actorCommitment: actor('risk'),
    }).expect(200);
    await expectRule(
      workflowId,
      { stage: 'risk_assessment', action: 'approve', who: 'risk' },
      409,
      'changes_pending',
    );
  });

  it('rejects bad input with 400 and unknown or foreign workflows with 404', async () => {
    const { workflowId } = await prepare(app.request, 'Internal Audit');
    const bad = await event(app.request, {
      workflowId,
      stage: 'application',
      action: 'submit',
      actorCommitment: 'Jane Doe',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('validation_failed');
    const extra = await app.request
      .post('/api/proof-workflows/event')
      .set('Authorization', OPERATOR)
      .send({
        workflowId,
        stage: 'application',
        action: 'submit',
        actorCommitment: actor('a'),
        note: 'private',
      });
    expect(extra.status).toBe(400);
    const unknown = await event(app.request, {
      workflowId: 'wf_01jd3zzzzzzzzzzzzzzzzzzzzz',
      stage: 'application',
      action: 'submit',
      actorCommitment: actor('a'),
    });
    expect(unknown.status).toBe(404);
    const anonymous = await app.request
      .post('/api/proof-workflows/event')
      .send({ workflowId, stage: 'application', action: 'submit', actorCommitment: actor('a') });
    expect(anonymous.status).toBe(401);
    expect(await entryCount(workflowId)).toBe(0);
  });
});

describe('concurrent events on one workflow', () => {
  const template = findTemplate('Treasury Approval') as WorkflowTemplate;

  it('append to one chain, in one order, with no gaps', async () => {
    const { workflowId, proofId } = await prepare(app.request, template.name);
    const n = 24;
    const replies = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        event(app.request, {
          workflowId,
          stage: 'application',
          action: 'attach_evidence',
          actorCommitment: actor(`clerk-${i}`),
          evidenceHash: evidence(`invoice ${i}`),
        }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(n).fill(200));
    const seqs = replies.map((r) => r.body.entry.seq as number).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: n }, (_, i) => i));
    const records = await loadRecords(app.deps.db, workflowId);
    expect(verifyRecords({ template, proofId, records })).toMatchObject({ notAltered: true, existed: true });
    // Every entry links to the one before it: one chain, never two heads.
    const trail = records[0]!.auditTrail;
    for (let i = 1; i < trail.length; i++) expect(trail[i]!.prevHash).toBe(trail[i - 1]!.entryHash);
  });

  it('count exactly the required approvals when approvers race', async () => {
    const { workflowId, proofId } = await prepare(app.request, template.name);
    await drive(app.request, workflowId, template.name, { until: 'signer_approval' });
    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        event(app.request, {
          workflowId,
          stage: 'signer_approval',
          action: 'approve',
          actorCommitment: actor(`signer-${i}`),
        }),
      ),
    );
    const ok = replies.filter((r) => r.status === 200);
    expect(ok).toHaveLength(2);
    for (const r of replies.filter((r) => r.status !== 200)) {
      expect(r.status).toBe(409);
      expect(r.body.code).toBe('out_of_sequence');
    }
    const records = await loadRecords(app.deps.db, workflowId);
    expect(verifyRecords({ template, proofId, records }).notAltered).toBe(true);
    expect(records[2]).toMatchObject({ stage: 'signer_approval', status: 'completed' });
  });
});
