// The workflow state machine: given a template, the state of a workflow and one event, the next state
// or an AppError(409) naming the rule broken. Pure and deterministic, so it runs on the live event
// path and, replayed over a published trail, inside the offline verifier. The rules see a compact
// state (the chain head and, per stage, its record and a digest of its entries), so an event is
// decided without reading the trail back.
import { AppError, conflict, unprocessable } from '../platform/errors';
import { chainEntry, chainGenesis } from '../proofs/chain';
import { chainHead, evidenceCommitment, flattenTrail, isClosed, stageProofHash } from './chain';
import type {
  AuditEntry,
  ChainedEntry,
  EvidenceKind,
  StageRecord,
  StageStatus,
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

/** What the rules need to know of one stage: its record without the trail, and a digest of the trail. */
export interface StageState {
  stage: string;
  status: StageStatus;
  actorCommitment: string | null;
  timestamp: string | null;
  proofHash: string | null;
  /** The distinct approvers since the stage's last change request, in order: the approvals that count. */
  approvers: readonly string[];
  /** Whether any entry of the stage carries evidence. */
  evidence: boolean;
  /** Whether any of that evidence is a verified blind policy proof. */
  policyEvidence: boolean;
  /**
   * The stage's entry hashes in order (what its proof hash commits to). Absent where the caller did
   * not load them; only closing the stage needs them.
   */
  entryHashes?: readonly string[];
}

/** A workflow's state: the head and length of its chain and the state of each stage, in template order. */
export interface ChainState {
  head: string;
  length: number;
  stages: readonly StageState[];
}

/** Thrown when an event closes a stage whose entry hashes the state does not hold: load them and retry. */
export class StageTrailNeeded extends Error {
  constructor(readonly stage: string) {
    super(`closing stage ${stage} needs its entry hashes`);
    this.name = 'StageTrailNeeded';
  }
}

export interface StateTransition {
  entry: ChainedEntry;
  /** The state after the event. */
  state: ChainState;
  /** The index of the event's stage. */
  index: number;
  stageClosed: boolean;
  workflowStatus: WorkflowStatus;
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

/** Genesis hashes of recently seen workflows: every replay and every closed stage needs its own. */
const geneses = new Map<string, string>();

export function genesisOf(ctx: WorkflowContext): string {
  const key = `${ctx.template.name}\n${ctx.proofId}`;
  let genesis = geneses.get(key);
  if (genesis === undefined) {
    genesis = chainGenesis({ kind: 'workflow', subjectId: ctx.proofId, label: ctx.template.name });
    if (geneses.size >= 10_000) geneses.clear();
    geneses.set(key, genesis);
  }
  return genesis;
}

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

/** The state of a workflow with no events: every stage pending, the chain at its genesis. */
export function initialState(ctx: WorkflowContext): ChainState {
  return {
    head: genesisOf(ctx),
    length: 0,
    stages: ctx.template.stages.map((s) => ({
      stage: s.key,
      status: 'pending',
      actorCommitment: null,
      timestamp: null,
      proofHash: null,
      approvers: [],
      evidence: false,
      policyEvidence: false,
      entryHashes: [],
    })),
  };
}

export function workflowStatus(stages: readonly { status: StageStatus }[]): WorkflowStatus {
  if (stages.some((s) => s.status === 'rejected')) return 'rejected';
  return stages.length > 0 && stages.every((s) => s.status === 'completed') ? 'completed' : 'active';
}

/** Index of the open stage: the first not completed (-1 once all are). */
export const currentStageIndex = (stages: readonly { status: StageStatus }[]): number =>
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

const hasEvidence = (e: AuditEntry): boolean => e.evidenceCommitment !== undefined;
const isPolicyEvidence = (e: AuditEntry): boolean =>
  hasEvidence(e) && e.evidenceKind === 'blind_policy_proof';

/** The state the records hold: what the rules would have built from the same entries. */
export function stateOf(ctx: WorkflowContext, records: readonly StageRecord[]): ChainState {
  return {
    head: chainHead(genesisOf(ctx), records),
    length: flattenTrail(records).length,
    stages: records.map((r) => ({
      stage: r.stage,
      status: r.status,
      actorCommitment: r.actorCommitment,
      timestamp: r.timestamp,
      proofHash: r.proofHash,
      approvers: countedApprovers(r.auditTrail),
      evidence: r.auditTrail.some(hasEvidence),
      policyEvidence: r.auditTrail.some(isPolicyEvidence),
      entryHashes: r.auditTrail.map((e) => e.entryHash),
    })),
  };
}

/** Stage records from a state and the entries accepted so far (each stage gets its own, in order). */
export function recordsOf(state: ChainState, entries: readonly ChainedEntry[]): StageRecord[] {
  return state.stages.map((s) => ({
    stage: s.stage,
    status: s.status,
    actorCommitment: s.actorCommitment,
    timestamp: s.timestamp,
    proofHash: s.proofHash,
    auditTrail: entries.filter((e) => e.stage === s.stage),
  }));
}

const ruleError = (code: RuleCode, detail: string, extra?: Record<string, unknown>): AppError =>
  code === 'unknown_stage' ? unprocessable(code, detail, extra) : conflict(code, detail, extra);

/**
 * Decides one audit entry (without its seq and links) against a workflow's state: the core both the
 * live event path and the verifier's replay go through, so they cannot disagree.
 */
export function advance(
  ctx: WorkflowContext,
  state: ChainState,
  draft: Omit<AuditEntry, 'seq'>,
): StateTransition {
  return advanceLinked(ctx, state, draft);
}

/**
 * `advance`, with the entry's links given by a caller that has already recomputed them (a replay over a
 * chain verified from its genesis): hashing each entry once is enough.
 */
function advanceLinked(
  ctx: WorkflowContext,
  state: ChainState,
  draft: Omit<AuditEntry, 'seq'>,
  link?: { prevHash: string; entryHash: string },
): StateTransition {
  const { template } = ctx;
  const { stages } = state;
  const index = template.stages.findIndex((s) => s.key === draft.stage);
  if (index < 0) {
    throw ruleError('unknown_stage', `${template.name} has no stage '${draft.stage}'.`, {
      stages: template.stages.map((s) => s.key),
    });
  }
  if (stages.length !== template.stages.length) throw new TypeError('stage states do not match the template');
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
  const stage = stages[index] as StageState;
  if (draft.action === 'attach_evidence' && !hasEvidence(draft as AuditEntry)) {
    throw ruleError('evidence_required', 'attach_evidence needs an evidenceHash.');
  }
  if (draft.action === 'approve') {
    if (stage.status === 'changes_requested') {
      throw ruleError(
        'changes_pending',
        `Changes were requested at '${spec.key}'; attach new evidence before approving.`,
      );
    }
    if (stage.approvers.includes(draft.actorCommitment)) {
      throw ruleError('duplicate_approval', `This actor commitment has already approved '${spec.key}'.`);
    }
  }
  const evidence = stage.evidence || hasEvidence(draft as AuditEntry);
  const policyEvidence = stage.policyEvidence || isPolicyEvidence(draft as AuditEntry);
  const closing = draft.action === 'approve' || draft.action === 'submit' || draft.action === 'finalize';
  if (closing) {
    if (spec.evidenceRequired && !evidence) {
      throw ruleError('evidence_required', `Stage '${spec.key}' needs evidence before '${draft.action}'.`);
    }
    if (spec.requiresBlindPolicyProof && !policyEvidence) {
      throw ruleError(
        'blind_policy_proof_required',
        `Stage '${spec.key}' needs a verified blind policy proof as evidence.`,
      );
    }
  }

  const entry =
    link && link.prevHash === state.head
      ? { ...draft, seq: state.length, prevHash: link.prevHash, entryHash: link.entryHash }
      : chainEntry(state.head, { ...draft, seq: state.length });
  const approvers =
    draft.action === 'request_changes'
      ? []
      : draft.action === 'approve'
        ? [...stage.approvers, draft.actorCommitment]
        : stage.approvers;
  let nextStatus: StageStatus;
  switch (draft.action) {
    case 'reject':
      nextStatus = 'rejected';
      break;
    case 'request_changes':
      nextStatus = 'changes_requested';
      break;
    case 'approve':
    case 'submit':
    case 'finalize':
      nextStatus = approvers.length >= spec.requiredApprovals ? 'completed' : 'in_progress';
      break;
    case 'attach_evidence':
      nextStatus = 'in_progress';
      break;
  }
  const entryHashes = stage.entryHashes ? [...stage.entryHashes, entry.entryHash] : undefined;
  let proofHash: string | null = null;
  if (isClosed(nextStatus)) {
    if (!entryHashes) throw new StageTrailNeeded(stage.stage);
    const genesis = genesisOf(ctx);
    proofHash = stageProofHash({
      index,
      stage: stage.stage,
      status: nextStatus,
      timestamp: draft.at,
      actorCommitment: draft.actorCommitment,
      entryHashes,
      prevStageHash: index === 0 ? genesis : (stages[index - 1]?.proofHash ?? genesis),
    });
  }
  const next: StageState = {
    stage: stage.stage,
    status: nextStatus,
    actorCommitment: draft.actorCommitment,
    timestamp: draft.at,
    proofHash,
    approvers,
    evidence,
    policyEvidence,
    ...(entryHashes ? { entryHashes } : {}),
  };
  const all = stages.map((s, i) => (i === index ? next : s));
  return {
    entry,
    state: { head: entry.entryHash, length: state.length + 1, stages: all },
    index,
    stageClosed: isClosed(nextStatus),
    workflowStatus: workflowStatus(all),
  };
}

/** Decides one entry against full stage records: `advance` on the state they hold. */
export function decide(
  ctx: WorkflowContext,
  stages: readonly StageRecord[],
  draft: Omit<AuditEntry, 'seq'>,
): Transition {
  const t = advance(ctx, stateOf(ctx, stages), draft);
  const s = t.state.stages[t.index] as StageState;
  const next: StageRecord = {
    stage: s.stage,
    status: s.status,
    actorCommitment: s.actorCommitment,
    timestamp: s.timestamp,
    proofHash: s.proofHash,
    auditTrail: [...(stages[t.index] as StageRecord).auditTrail, t.entry],
  };
  const all = stages.map((r, i) => (i === t.index ? next : r));
  return {
    entry: t.entry,
    stage: next,
    stages: all,
    stageClosed: t.stageClosed,
    workflowStatus: t.workflowStatus,
  };
}

/** A client's event as the entry the rules decide: its evidence hash turned into a salted commitment. */
function draftOf(
  event: Omit<WorkflowEvent, 'workflowId'> & { workflowId?: string },
  options: EventOptions,
): Omit<AuditEntry, 'seq'> {
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
  return draft;
}

/** Applies a client's event to full stage records. */
export function applyEvent(
  ctx: WorkflowContext,
  stages: readonly StageRecord[],
  event: Omit<WorkflowEvent, 'workflowId'> & { workflowId?: string },
  options: EventOptions,
): Transition {
  return decide(ctx, stages, draftOf(event, options));
}

/** Applies a client's event to a workflow's state: the live path, which never reads the trail back. */
export function applyEventToState(
  ctx: WorkflowContext,
  state: ChainState,
  event: Omit<WorkflowEvent, 'workflowId'> & { workflowId?: string },
  options: EventOptions,
): StateTransition {
  return advance(ctx, state, draftOf(event, options));
}

export type ReplayResult =
  | { ok: true; stages: StageRecord[] }
  | { ok: false; seq: number; stage: string; code: string; detail: string; stages: StageRecord[] };

/**
 * Rebuilds the stage records from a trail by running every entry through the rules again. A trail
 * that breaks a rule, or whose recomputed hashes differ from the recorded ones, stops at that entry.
 * `linksVerified`: the caller has just recomputed every entry hash of this trail from the genesis
 * (verifyChain), so the recorded hashes are taken rather than computed a second time.
 */
export function replay(
  ctx: WorkflowContext,
  trail: readonly ChainedEntry[],
  options: { linksVerified?: boolean } = {},
): ReplayResult {
  let state = initialState(ctx);
  const accepted: ChainedEntry[] = [];
  for (const recorded of trail) {
    const { prevHash: _p, entryHash: _h, seq, ...draft } = recorded;
    let t: StateTransition;
    try {
      t = advanceLinked(ctx, state, draft, options.linksVerified ? recorded : undefined);
    } catch (err) {
      if (err instanceof AppError)
        return {
          ok: false,
          seq,
          stage: draft.stage,
          code: err.code,
          detail: err.message,
          stages: recordsOf(state, accepted),
        };
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
        stages: recordsOf(state, accepted),
      };
    }
    state = t.state;
    accepted.push(t.entry);
  }
  return { ok: true, stages: recordsOf(state, accepted) };
}
