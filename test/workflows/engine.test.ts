// The workflow state machine: every template completes, and every sequence/approval rule is enforced.
import { describe, expect, it } from 'vitest';
import { AppError } from '../../shared/platform/errors';
import { countedApprovers, currentStageIndex, workflowStatus } from '../../shared/workflows/engine';
import { stageRecordSchema, workflowEventSchema } from '../../shared/workflows/records';
import { findTemplate, templateNames, workflowTemplates } from '../../shared/workflows/templates';
import type { WorkflowTemplate } from '../../shared/workflows/templates';
import { Run, actor, completeWorkflow, evidence } from './helpers';

const template = (name: string): WorkflowTemplate => {
  const t = findTemplate(name);
  if (!t) throw new Error(`no template ${name}`);
  return t;
};

function rule(fn: () => unknown): { status: number; code: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return { status: err.status, code: err.code };
    throw err;
  }
  throw new Error('expected the event to be refused');
}

describe('templates', () => {
  it('are the six exact names, each on the core shape Application → Review → Approval → Proof', () => {
    expect(workflowTemplates.map((t) => t.name)).toEqual([...templateNames]);
    expect(templateNames).toEqual([
      'Underwriting',
      'Compliance Review',
      'Grant Review',
      'Treasury Approval',
      'Vendor Onboarding',
      'Internal Audit',
    ]);
    const order = ['application', 'review', 'approval', 'proof'];
    for (const t of workflowTemplates) {
      const phases = t.stages.map((s) => s.phase);
      expect(new Set(phases)).toEqual(new Set(order));
      expect([...phases].sort((a, b) => order.indexOf(a) - order.indexOf(b))).toEqual(phases);
      expect(new Set(t.stages.map((s) => s.key)).size).toBe(t.stages.length);
    }
  });

  it('Underwriting runs Application → Document Review → Risk Assessment → Approval → Proof', () => {
    const t = template('Underwriting');
    expect(t.stages.map((s) => s.name)).toEqual([
      'Application',
      'Document Review',
      'Risk Assessment',
      'Approval',
      'Proof',
    ]);
    expect(t.stages.find((s) => s.key === 'risk_assessment')?.requiresBlindPolicyProof).toBe(true);
  });
});

describe('engine', () => {
  for (const t of workflowTemplates) {
    it(`runs ${t.name} to completion`, () => {
      const run = completeWorkflow(t);
      expect(workflowStatus(run.stages)).toBe('completed');
      expect(currentStageIndex(run.stages)).toBe(-1);
      for (const [i, record] of run.stages.entries()) {
        expect(stageRecordSchema.parse(record)).toEqual(record);
        expect(Object.keys(record).sort()).toEqual([
          'actorCommitment',
          'auditTrail',
          'proofHash',
          'stage',
          'status',
          'timestamp',
        ]);
        expect(record.status).toBe('completed');
        expect(record.proofHash).toMatch(/^[0-9a-f]{64}$/);
        expect(countedApprovers(record.auditTrail).length).toBeGreaterThanOrEqual(
          t.stages[i]?.requiredApprovals ?? 0,
        );
      }
      const seqs = run.stages.flatMap((s) => s.auditTrail.map((e) => e.seq));
      expect(seqs).toEqual(seqs.map((_, i) => i));
    });
  }

  it('completes a stage only when its required approvals are in', () => {
    const run = new Run({ template: template('Treasury Approval'), proofId: 'prf_t' });
    run.event('application', 'submit', 'requester', { evidenceHash: evidence('payment request') });
    run.event('budget_review', 'approve', 'controller');
    const first = run.event('signer_approval', 'approve', 'signer-a');
    expect(first.stage.status).toBe('in_progress');
    expect(first.stageClosed).toBe(false);
    expect(first.stage.proofHash).toBeNull();
    const second = run.event('signer_approval', 'approve', 'signer-b');
    expect(second.stage.status).toBe('completed');
    expect(second.stage.actorCommitment).toBe(actor('signer-b'));
  });

  it('refuses an event for a later stage: out_of_sequence', () => {
    const run = new Run({ template: template('Underwriting'), proofId: 'prf_a' });
    expect(rule(() => run.event('approval', 'approve', 'officer'))).toEqual({
      status: 409,
      code: 'out_of_sequence',
    });
  });

  it('refuses an event for a stage already completed: out_of_sequence', () => {
    const run = new Run({ template: template('Grant Review'), proofId: 'prf_b' });
    run.event('application', 'submit', 'applicant', { evidenceHash: evidence('proposal') });
    expect(
      rule(() => run.event('application', 'submit', 'applicant', { evidenceHash: evidence('x') })),
    ).toEqual({
      status: 409,
      code: 'out_of_sequence',
    });
  });

  it('refuses a second approval by the same actor commitment: duplicate_approval', () => {
    const run = new Run({ template: template('Internal Audit'), proofId: 'prf_c' });
    run.event('application', 'submit', 'auditor', { evidenceHash: evidence('audit plan') });
    run.event('fieldwork', 'attach_evidence', 'auditor', { evidenceHash: evidence('workpapers') });
    run.event('fieldwork', 'approve', 'lead');
    run.event('findings_review', 'attach_evidence', 'auditor', { evidenceHash: evidence('findings') });
    run.event('findings_review', 'approve', 'reviewer-1');
    expect(rule(() => run.event('findings_review', 'approve', 'reviewer-1'))).toEqual({
      status: 409,
      code: 'duplicate_approval',
    });
    expect(run.event('findings_review', 'approve', 'reviewer-2').stage.status).toBe('completed');
  });

  it('refuses every event once the workflow completed: workflow_completed', () => {
    const run = completeWorkflow(template('Vendor Onboarding'));
    expect(rule(() => run.event('proof', 'finalize', 'service'))).toEqual({
      status: 409,
      code: 'workflow_completed',
    });
    expect(rule(() => run.event('approval', 'approve', 'x'))).toEqual({
      status: 409,
      code: 'workflow_completed',
    });
  });

  it('refuses every event once a stage rejected: workflow_rejected', () => {
    const run = new Run({ template: template('Compliance Review'), proofId: 'prf_d' });
    run.event('application', 'submit', 'analyst', { evidenceHash: evidence('case file') });
    const t = run.event('screening', 'reject', 'screener');
    expect(t.workflowStatus).toBe('rejected');
    expect(t.stage.status).toBe('rejected');
    expect(t.stage.proofHash).toMatch(/^[0-9a-f]{64}$/);
    expect(rule(() => run.event('screening', 'approve', 'other'))).toEqual({
      status: 409,
      code: 'workflow_rejected',
    });
    expect(rule(() => run.event('compliance_review', 'approve', 'other'))).toEqual({
      status: 409,
      code: 'workflow_rejected',
    });
  });

  it('refuses an action the stage does not allow: action_not_allowed', () => {
    const run = new Run({ template: template('Underwriting'), proofId: 'prf_e' });
    expect(rule(() => run.event('application', 'approve', 'applicant'))).toEqual({
      status: 409,
      code: 'action_not_allowed',
    });
    run.event('application', 'submit', 'applicant', { evidenceHash: evidence('application form') });
    expect(rule(() => run.event('document_review', 'finalize', 'x'))).toEqual({
      status: 409,
      code: 'action_not_allowed',
    });
  });

  it('refuses completing an evidence stage without evidence: evidence_required', () => {
    const run = new Run({ template: template('Underwriting'), proofId: 'prf_f' });
    expect(rule(() => run.event('application', 'submit', 'applicant'))).toEqual({
      status: 409,
      code: 'evidence_required',
    });
    expect(rule(() => run.event('application', 'attach_evidence', 'applicant'))).toEqual({
      status: 409,
      code: 'evidence_required',
    });
    run.event('application', 'submit', 'applicant', { evidenceHash: evidence('form') });
    expect(rule(() => run.event('document_review', 'approve', 'reviewer'))).toEqual({
      status: 409,
      code: 'evidence_required',
    });
  });

  it('refuses Risk Assessment without a verified blind policy proof: blind_policy_proof_required', () => {
    const run = new Run({ template: template('Underwriting'), proofId: 'prf_g' });
    run.event('application', 'submit', 'applicant', { evidenceHash: evidence('form') });
    run.event('document_review', 'attach_evidence', 'applicant', { evidenceHash: evidence('payslips') });
    run.event('document_review', 'approve', 'reviewer');
    run.event('risk_assessment', 'attach_evidence', 'analyst', { evidenceHash: evidence('a spreadsheet') });
    expect(rule(() => run.event('risk_assessment', 'approve', 'risk'))).toEqual({
      status: 409,
      code: 'blind_policy_proof_required',
    });
    run.event('risk_assessment', 'attach_evidence', 'analyst', {
      evidenceHash: evidence('groth16 proof'),
      evidenceKind: 'blind_policy_proof',
    });
    expect(run.event('risk_assessment', 'approve', 'risk').stage.status).toBe('completed');
  });

  it('voids approvals on a change request and wants new evidence first: changes_pending', () => {
    const run = new Run({ template: template('Grant Review'), proofId: 'prf_h' });
    run.event('application', 'submit', 'applicant', { evidenceHash: evidence('proposal') });
    run.event('eligibility_check', 'approve', 'officer');
    run.event('panel_review', 'attach_evidence', 'applicant', { evidenceHash: evidence('budget') });
    run.event('panel_review', 'approve', 'panelist-1');
    run.event('panel_review', 'approve', 'panelist-2');
    expect(run.event('panel_review', 'request_changes', 'panelist-3').stage.status).toBe('changes_requested');
    expect(rule(() => run.event('panel_review', 'approve', 'panelist-3'))).toEqual({
      status: 409,
      code: 'changes_pending',
    });
    run.event('panel_review', 'attach_evidence', 'applicant', { evidenceHash: evidence('revised budget') });
    run.event('panel_review', 'approve', 'panelist-1');
    run.event('panel_review', 'approve', 'panelist-2');
    expect(run.stages[2]?.status).toBe('in_progress'); // the two earlier approvals no longer count
    expect(run.event('panel_review', 'approve', 'panelist-3').stage.status).toBe('completed');
  });

  it('answers an unknown stage with 422 unknown_stage', () => {
    const run = new Run({ template: template('Grant Review'), proofId: 'prf_i' });
    expect(rule(() => run.event('no_such_stage', 'approve', 'x'))).toEqual({
      status: 422,
      code: 'unknown_stage',
    });
  });

  it('is deterministic: the same events give the same records and hashes', () => {
    const a = completeWorkflow(template('Underwriting'), 'prf_same');
    const b = completeWorkflow(template('Underwriting'), 'prf_same');
    expect(b.stages).toEqual(a.stages);
    const c = completeWorkflow(template('Underwriting'), 'prf_other');
    expect(c.stages[0]?.proofHash).not.toBe(a.stages[0]?.proofHash); // the chain is bound to its proof id
  });

  it('validates posted events: hashes only, no extra members', () => {
    const ok = {
      workflowId: 'wf_1',
      stage: 'application',
      action: 'submit',
      actorCommitment: actor('a').toUpperCase(),
      evidenceHash: evidence('x'),
    };
    expect(workflowEventSchema.parse(ok).actorCommitment).toBe(actor('a'));
    expect(workflowEventSchema.safeParse({ ...ok, notes: 'the reviewer thinks…' }).success).toBe(false);
    expect(workflowEventSchema.safeParse({ ...ok, evidenceHash: 'my salary is 90k' }).success).toBe(false);
    expect(workflowEventSchema.safeParse({ ...ok, action: 'delete' }).success).toBe(false);
  });
});
