// The six proof workflow templates as data: ordered stages, each with its required approvals and
// allowed actions, on the core shape Application → Review → Approval → Proof.
import { z } from 'zod';
import type { CredentialSchema } from '../credentials/format';
import type { QueryTerm } from '../credentials/query';
import { creditReportSchema } from '../credentials/schemas';
import type { PolicyId } from '../zk/policies';

export const stageActions = [
  'submit',
  'approve',
  'reject',
  'request_changes',
  'attach_evidence',
  'finalize',
] as const;
export type StageAction = (typeof stageActions)[number];

/** Where a stage sits in the core shape; templates add stages, never reorder the phases. */
export const stagePhases = ['application', 'review', 'approval', 'proof'] as const;
export type StagePhase = (typeof stagePhases)[number];

export const templateNames = [
  'Underwriting',
  'Compliance Review',
  'Grant Review',
  'Treasury Approval',
  'Vendor Onboarding',
  'Internal Audit',
] as const;
export type TemplateName = (typeof templateNames)[number];

export interface StageTemplate {
  key: string;
  name: string;
  phase: StagePhase;
  /** Distinct actor commitments that must approve before the stage completes (0: completes on submit/finalize). */
  requiredApprovals: number;
  actions: readonly StageAction[];
  /** At least one evidence hash must be attached before the stage can complete. */
  evidenceRequired: boolean;
  /** The evidence must include a verified blind policy proof (e.g. a credit threshold proven without the score). */
  requiresBlindPolicyProof?: boolean;
  /**
   * The policy that proof must be of. Its parameters (the threshold, the range, the set) are fixed per
   * workflow at prepare, and the proof must be bound to this stage of that workflow.
   */
  policy?: PolicyId;
  /**
   * What the stage takes instead when the workflow is prepared for it: a credential query proof over
   * a credential an issuer the owner accepts signed for the applicant (shared/credentials).
   */
  credential?: CredentialRequirement;
}

/** A stage's credential requirement: the schema, the query's shape, and how fresh its facts must be. */
export interface CredentialRequirement {
  /** The credential in words, for the verify page: "a credit report". */
  what: string;
  schema: CredentialSchema;
  /** The query's fields and operators; the owner fixes the parameters at prepare. */
  query: readonly QueryTerm[];
  /**
   * How the owner's parameters are published: `committed` (salted commitments; the page says "a value
   * the organization fixed"), `plain` (on the page and in the package: "score ≥ 700"), or `either`, the
   * owner's choice at prepare (`plain: true`). Default `committed`.
   */
  parameters?: 'committed' | 'plain' | 'either';
  /** The revocation root a proof uses was published at most this long before the proof's time (s). */
  maxRevocationAge: number;
  /** A proof's time is at most this long before it is presented (s). */
  maxProofAge: number;
}

export interface WorkflowTemplate {
  key: string;
  name: TemplateName;
  /** Bumped when the stages change, so packages made under an older shape still verify against theirs. */
  version: number;
  description: string;
  stages: readonly StageTemplate[];
}

const application = (name: string, evidenceRequired = true): StageTemplate => ({
  key: 'application',
  name,
  phase: 'application',
  requiredApprovals: 0,
  actions: ['submit', 'attach_evidence'],
  evidenceRequired,
});

const review = (
  key: string,
  name: string,
  requiredApprovals: number,
  extra: Partial<Pick<StageTemplate, 'evidenceRequired' | 'policy' | 'phase' | 'credential'>> = {},
): StageTemplate => ({
  key,
  name,
  phase: extra.phase ?? 'review',
  requiredApprovals,
  actions: ['attach_evidence', 'approve', 'reject', 'request_changes'],
  evidenceRequired: extra.evidenceRequired ?? extra.policy !== undefined,
  ...(extra.policy ? { requiresBlindPolicyProof: true, policy: extra.policy } : {}),
  ...(extra.credential ? { credential: extra.credential } : {}),
});

/** A bureau's credit report: score at least, debt-to-income at most, what the lender fixes. */
const creditCheck: CredentialRequirement = {
  what: 'a credit report',
  schema: creditReportSchema,
  query: [
    { field: 'score', op: 'gte' },
    { field: 'debtToIncome', op: 'lte' },
  ],
  // A lender may keep its cut-offs private or publish them with the decision.
  parameters: 'either',
  maxRevocationAge: 7 * 24 * 3600,
  maxProofAge: 24 * 3600,
};

const approval = (
  key: string,
  name: string,
  requiredApprovals: number,
  evidenceRequired = false,
): StageTemplate => review(key, name, requiredApprovals, { phase: 'approval', evidenceRequired });

/** The closing stage: the service seals the record and the proof package is built. */
const proof: StageTemplate = {
  key: 'proof',
  name: 'Proof',
  phase: 'proof',
  requiredApprovals: 0,
  actions: ['finalize'],
  evidenceRequired: false,
};

export const workflowTemplates: readonly WorkflowTemplate[] = [
  {
    key: 'underwriting',
    name: 'Underwriting',
    version: 1,
    description:
      'A credit or insurance decision: documents checked, risk assessed against a private policy, approved.',
    stages: [
      application('Application'),
      review('document_review', 'Document Review', 1, { evidenceRequired: true }),
      // A credit score at or above the lender's private threshold, proven without the score: from a
      // value the lender states, or, prepared for it, from a bureau's signed credit report.
      review('risk_assessment', 'Risk Assessment', 1, { policy: 'threshold', credential: creditCheck }),
      approval('approval', 'Approval', 2),
      proof,
    ],
  },
  {
    key: 'compliance_review',
    name: 'Compliance Review',
    version: 1,
    description: 'A counterparty or transaction screened and reviewed against compliance policy.',
    stages: [
      application('Case Intake'),
      review('screening', 'Screening', 1, { evidenceRequired: true }),
      review('compliance_review', 'Compliance Review', 1, { evidenceRequired: true }),
      approval('approval', 'Compliance Officer Approval', 1),
      proof,
    ],
  },
  {
    key: 'grant_review',
    name: 'Grant Review',
    version: 1,
    description: 'A grant application checked for eligibility, scored by a panel and awarded.',
    stages: [
      application('Application'),
      review('eligibility_check', 'Eligibility Check', 1),
      review('panel_review', 'Panel Review', 3, { evidenceRequired: true }),
      approval('award_decision', 'Award Decision', 1),
      proof,
    ],
  },
  {
    key: 'treasury_approval',
    name: 'Treasury Approval',
    version: 1,
    description:
      'A treasury movement requested, reviewed against budget, approved by m-of-n signers, executed.',
    stages: [
      application('Request'),
      review('budget_review', 'Budget Review', 1),
      approval('signer_approval', 'Signer Approval', 2),
      approval('execution', 'Execution', 1, true),
      proof,
    ],
  },
  {
    key: 'vendor_onboarding',
    name: 'Vendor Onboarding',
    version: 1,
    description: 'A vendor checked for due diligence and security before procurement approves it.',
    stages: [
      application('Vendor Application'),
      review('due_diligence', 'Due Diligence', 1, { evidenceRequired: true }),
      review('security_review', 'Security Review', 1, { evidenceRequired: true }),
      approval('approval', 'Procurement Approval', 1),
      proof,
    ],
  },
  {
    key: 'internal_audit',
    name: 'Internal Audit',
    version: 1,
    description: 'An audit planned, performed, its findings reviewed and signed off by the audit committee.',
    stages: [
      application('Audit Plan'),
      review('fieldwork', 'Fieldwork', 1, { evidenceRequired: true }),
      review('findings_review', 'Findings Review', 2, { evidenceRequired: true }),
      approval('sign_off', 'Audit Committee Sign-off', 1),
      proof,
    ],
  },
];

export const templateNameSchema = z.enum(templateNames);

/** The template with this exact name (or key), or undefined. */
export function findTemplate(nameOrKey: string): WorkflowTemplate | undefined {
  return workflowTemplates.find((t) => t.name === nameOrKey || t.key === nameOrKey);
}

/** The stages that need a blind policy proof, with their index in the template and the policy. */
export function policyStages(
  template: WorkflowTemplate,
): Array<{ index: number; stage: StageTemplate; policy: PolicyId }> {
  return template.stages.flatMap((stage, index) =>
    stage.policy ? [{ index, stage, policy: stage.policy }] : [],
  );
}

/** The public requirements a package carries so it can be checked without our catalog. */
export function stageRequirements(template: WorkflowTemplate) {
  return template.stages.map((s) => ({
    key: s.key,
    name: s.name,
    phase: s.phase,
    requiredApprovals: s.requiredApprovals,
    actions: [...s.actions],
    evidenceRequired: s.evidenceRequired,
    requiresBlindPolicyProof: s.requiresBlindPolicyProof ?? false,
  }));
}
