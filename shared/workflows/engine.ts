// The workflow state machine: given a template, the stage records and one event, the next records or
// an AppError(409) naming the rule broken. Pure and deterministic, so it runs inside a DB transaction
// and, replayed over a published trail, inside the offline verifier.
import { AppError, conflict, unprocessable } from '../errors';
import {
  chainEntry,
  chainGenesis,
  chainHead,
  evidenceCommitment,
  flattenTrail,
  isClosed,
  recordProofHash,
} from './chain';
import type {
  AuditEntry,
  ChainedEntry,
  EvidenceKind,
  StageRecord,
  WorkflowEvent,
  WorkflowStatus,
} from './records';
import type { StageTemplate, WorkflowTemplate } from './templates';

/** Every rule the engine enforces, by the code its 409 (or 422) carries. */
export const ruleCodes = [
  'unknown_stage',
  'workflow_completed',
  'workflow_rejected',
  'out_of_sequence',
  'action_not_allowed',
  'evidence_required',
  'blind_policy_proof_required',
  'duplicate_approval',
  'changes_pending',
] as const;
export type RuleCode = (typeof ruleCodes)[number];

export interface WorkflowContext {
  template: WorkflowTemplate;
  /** The public id the chain is bound to. */
  proofId: string;
}

export interface EventOptions {
  now: Date | string;
  /** Required with an evidence hash: the salt of its commitment, stored privately by the caller. */
  evidenceSalt?: string;
  /** Set to 'blind_policy_proof' only after the caller has verified the proof the evidence hash names. */
  evidenceKind?: EvidenceKind;
}

export interface Transition {
  entry: ChainedEntry;
  /** The event's stage after the event. */
  stage: StageRecord;
  /** Every stage record after the event (unchanged records are the same objects). */
  stages: StageRecord[];
  stageClosed: boolean;
  workflowStatus: WorkflowStatus;
}

export const genesisOf = (ctx: WorkflowContext): string =>
  chainGenesis({ kind: 'workflow', subjectId: ctx.proofId, label: ctx.template.name });

export function initialStages(template: WorkflowTemplate): StageRecord[] {
  return template.stages.map((s) => ({
    stage: s.key,
    status: 'pending',
    actorCommitment: null,
    timestamp: null,
    proofHash: null,
    auditTrail: [],
  }));
}

export function workflowStatus(stages: readonly StageRecord[]): WorkflowStatus {
  if (stages.some((s) => s.status === 'rejected')) return 'rejected';
  return stages.length > 0 && stages.every((s) => s.status === 'completed') ? 'completed' : 'active';
}

/** Index of the open stage: the first not completed (-1 once all are). */
export const currentStageIndex = (stages: readonly StageRecord[]): number =>
  stages.findIndex((s) => s.status !== 'completed');

/** The entries of a stage since its last change request: the round whose approvals count. */
function currentRound(trail: readonly AuditEntry[]): AuditEntry[] {
  const last = trail.map((e) => e.action).lastIndexOf('request_changes');
  return trail.slice(last + 1);
}

/** Distinct actor commitments whose approvals count toward the stage now. */
export function countedApprovers(trail: readonly AuditEntry[]): string[] {
  return [
    ...new Set(
      currentRound(trail)
        .filter((e) => e.action === 'approve')
        .map((e) => e.actorCommitment),
    ),
  ];
}

const ruleError = (code: RuleCode, detail: string, extra?: Record<string, unknown>): AppError =>
  code === 'unknown_stage' ? unprocessable(code, detail, extra) : conflict(code, detail, extra);

/**
 * Decides one audit entry (without its seq and links) against the records: the core both the live
 * event path and the verifier's replay go through, so they cannot disagree.
 */
export function decide(
  ctx: WorkflowContext,
  stages: readonly StageRecord[],
  draft: Omit<AuditEntry, 'seq'>,
): Transition {
  const { template } = ctx;
  const index = template.stages.findIndex((s) => s.key === draft.stage);
  if (index < 0) {
    throw ruleError('unknown_stage', `${template.name} has no stage '${draft.stage}'.`, {
      stages: template.stages.map((s) => s.key),
    });
  }
  if (stages.length !== template.stages.length)
    throw new TypeError('stage records do not match the template');
  const status = workflowStatus(stages);
  if (status === 'completed')
    throw ruleError('workflow_completed', 'The workflow is complete; its record is sealed.');
  if (status === 'rejected')
    throw ruleError('workflow_rejected', 'The workflow was rejected; no further events are accepted.');

  const current = currentStageIndex(stages);
  const spec = template.stages[index] as StageTemplate;
  const currentKey = template.stages[current]?.key;
  if (index !== current) {
    const when = index < current ? 'is already complete' : 'is not open yet';
    throw ruleError('out_of_sequence', `Stage '${spec.key}' ${when}; the open stage is '${currentKey}'.`, {
      stage: spec.key,
      currentStage: currentKey,
    });
  }
  if (!spec.actions.includes(draft.action)) {
    throw ruleError('action_not_allowed', `Stage '${spec.key}' does not accept '${draft.action}'.`, {
      allowed: [...spec.actions],
    });
  }
  const record = stages[index] as StageRecord;
  const hasEvidence = draft.evidenceCommitment !== undefined;
  if (draft.action === 'attach_evidence' && !hasEvidence) {
    throw ruleError('evidence_required', 'attach_evidence needs an evidenceHash.');
  }
  if (draft.action === 'approve') {
    if (record.status === 'changes_requested') {
      throw ruleError(
        'changes_pending',
        `Changes were requested at '${spec.key}'; attach new evidence before approving.`,
      );
    }
    if (countedApprovers(record.auditTrail).includes(draft.actorCommitment)) {
      throw ruleError('duplicate_approval', `This actor commitment has already approved '${spec.key}'.`);
    }
  }
  const closing = draft.action === 'approve' || draft.action === 'submit' || draft.action === 'finalize';
  if (closing) {
    const evidence = [...record.auditTrail, draft].filter((e) => e.evidenceCommitment !== undefined);
    if (spec.evidenceRequired && evidence.length === 0) {
      throw ruleError('evidence_required', `Stage '${spec.key}' needs evidence before '${draft.action}'.`);
    }
    if (spec.requiresBlindPolicyProof && !evidence.some((e) => e.evidenceKind === 'blind_policy_proof')) {
      throw ruleError(
        'blind_policy_proof_required',
        `Stage '${spec.key}' needs a verified blind policy proof as evidence.`,
      );
    }
  }

  const entry = chainEntry(chainHead(genesisOf(ctx), stages), { ...draft, seq: flattenTrail(stages).length });
  const trail = [...record.auditTrail, entry];
  let nextStatus = record.status;
  switch (draft.action) {
    case 'reject':
      nextStatus = 'rejected';
      break;
    case 'request_changes':
      nextStatus = 'changes_requested';
      break;
    case 'approve':
      nextStatus = countedApprovers(trail).length >= spec.requiredApprovals ? 'completed' : 'in_progress';
      break;
    case 'submit':
    case 'finalize':
      nextStatus = countedApprovers(trail).length >= spec.requiredApprovals ? 'completed' : 'in_progress';
      break;
    case 'attach_evidence':
      nextStatus = 'in_progress';
      break;
  }
  const next: StageRecord = {
    stage: record.stage,
    status: nextStatus,
    actorCommitment: draft.actorCommitment,
    timestamp: draft.at,
    proofHash: null,
    auditTrail: trail,
  };
  if (isClosed(nextStatus)) {
    const prevStageHash = index === 0 ? genesisOf(ctx) : (stages[index - 1]?.proofHash ?? genesisOf(ctx));
    next.proofHash = recordProofHash(next, index, prevStageHash);
  }
  const all = stages.map((s, i) => (i === index ? next : s));
  return {
    entry,
    stage: next,
    stages: all,
    stageClosed: isClosed(nextStatus),
    workflowStatus: workflowStatus(all),
  };
}

/** Applies a client's event: turns its evidence hash into a salted commitment and decides it. */
export function applyEvent(
  ctx: WorkflowContext,
  stages: readonly StageRecord[],
  event: Omit<WorkflowEvent, 'workflowId'> & { workflowId?: string },
  options: EventOptions,
): Transition {
  const at = typeof options.now === 'string' ? options.now : options.now.toISOString();
  const draft: Omit<AuditEntry, 'seq'> = {
    stage: event.stage,
    action: event.action,
    actorCommitment: event.actorCommitment.toLowerCase(),
    at,
  };
  if (event.evidenceHash !== undefined) {
    if (!options.evidenceSalt) throw new TypeError('an evidence hash needs an evidenceSalt');
    draft.evidenceCommitment = evidenceCommitment(event.evidenceHash, options.evidenceSalt);
    draft.evidenceKind = options.evidenceKind ?? 'document';
  }
  return decide(ctx, stages, draft);
}

export type ReplayResult =
  | { ok: true; stages: StageRecord[] }
  | { ok: false; seq: number; stage: string; code: string; detail: string; stages: StageRecord[] };

/**
 * Rebuilds the stage records from a trail by running every entry through the rules again. A trail
 * that breaks a rule, or whose recomputed hashes differ from the recorded ones, stops at that entry.
 */
export function replay(ctx: WorkflowContext, trail: readonly ChainedEntry[]): ReplayResult {
  let stages = initialStages(ctx.template);
  for (const recorded of trail) {
    const { prevHash: _p, entryHash: _h, seq, ...draft } = recorded;
    let t: Transition;
    try {
      t = decide(ctx, stages, draft);
    } catch (err) {
      if (err instanceof AppError)
        return { ok: false, seq, stage: draft.stage, code: err.code, detail: err.message, stages };
      throw err;
    }
    if (
      t.entry.seq !== seq ||
      t.entry.entryHash !== recorded.entryHash ||
      t.entry.prevHash !== recorded.prevHash
    ) {
      return {
        ok: false,
        seq,
        stage: draft.stage,
        code: 'entry_hash_mismatch',
        detail: `entry ${seq} does not recompute`,
        stages,
      };
    }
    stages = t.stages;
  }
  return { ok: true, stages };
}
