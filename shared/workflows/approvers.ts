// Approver sets and proven approvals, on the service's side. An organization registers, per template
// stage, the identity commitments its approvers made themselves; every new root of the set's tree goes
// on the transparency log in the registration's transaction. An approval posted as a membership proof
// is checked (format, stage, scope, content, root, nullifier, proof) before the workflow's row lock,
// recorded through the workflow's appender as an `approve` entry whose actor is the nullifier, and its
// proof claimed in the entry's own transaction: a refusal anywhere writes nothing.
import type { Knex } from 'knex';
import { z } from 'zod';
import type { Db } from '../platform/db/knex';
import { AppError, conflict, notFound, unprocessable } from '../platform/errors';
import { newId } from '../platform/ids';
import { entryFor, leafKey } from '../platform/translog/entry';
import { appendEntries } from '../platform/translog/service-log';
import {
  ANONYMITY_CIRCUIT,
  ANONYMITY_TREE_DEPTH,
  MAX_TREE_IDENTITIES,
  isFieldElement,
  memberTreeRoot,
  verifyMembershipProof,
} from '../zk/anonymity';
import type { Groth16ProofJson } from '../zk/anonymity';
import { loadVerificationKey } from '../zk/verify';
import { genesisOf } from './engine';
import {
  APPROVER_ROOT_HISTORY,
  approvalActor,
  approvalMessage,
  approvalProofSchema,
  approvalScope,
  approverRootLogId,
  approverRootStatement,
  approverRootSha256,
} from './approval-protocol';
import type { PackagedApproval } from './approval-protocol';
import { templateOrThrow } from './load';
import type { WorkflowRow } from './load';
import type { ChainedEntry } from './records';
import { findTemplate } from './templates';
import type { WorkflowTemplate } from './templates';

type Conn = Db | Knex.Transaction;

/** The refusals of an approval, each a 409 whose code names the rule (bad input is 400). */
export const approvalCodes = [
  'approver_set_missing',
  'approval_wrong_scope',
  'approval_content_mismatch',
  'approval_root_stale',
  'approval_root_unknown',
  'approval_nullifier_used',
  'approval_proof_invalid',
] as const;

/** Where a stage has an approver set, a bare `approve` event is refused with this code (409). */
export const APPROVAL_PROOF_REQUIRED = 'approval_proof_required';

interface SetRow {
  id: string;
  owner: string;
  template: string;
  stage: string;
}

function approvalStage(templateName: string, stage: string): { template: WorkflowTemplate } {
  const template = findTemplate(templateName);
  if (!template) throw unprocessable('unknown_template', `There is no template ${templateName}.`);
  const spec = template.stages.find((s) => s.key === stage);
  if (!spec)
    throw unprocessable('unknown_stage', `${template.name} has no stage '${stage}'.`, {
      stages: template.stages.map((s) => s.key),
    });
  if (spec.requiredApprovals === 0 || !spec.actions.includes('approve'))
    throw unprocessable('not_an_approval_stage', `Stage '${stage}' of ${template.name} takes no approvals.`);
  return { template };
}

function checkCommitments(commitments: readonly string[]): void {
  if (new Set(commitments).size !== commitments.length)
    throw unprocessable('duplicate_identity', 'An identity commitment is listed twice.');
  if (!commitments.every((c) => isFieldElement(c) && c !== '0'))
    throw unprocessable(
      'invalid_identity',
      'An identity commitment is a non-zero BN254 field element, decimal.',
    );
}

async function members(conn: Conn, setId: string): Promise<string[]> {
  return (await conn('approver_set_members')
    .where('set_id', setId)
    .orderBy('leaf_index')
    .pluck('identity_commitment')) as string[];
}

interface RootRow {
  seq: number;
  root: string;
  size: number;
  statement_sha256: string;
}

/** The roots an approval may be proved against, newest first. */
async function acceptedRoots(conn: Conn, setId: string): Promise<RootRow[]> {
  return (await conn('approver_set_roots')
    .where('set_id', setId)
    .orderBy('seq', 'desc')
    .limit(APPROVER_ROOT_HISTORY)
    .select('seq', 'root', 'size', 'statement_sha256')) as RootRow[];
}

/**
 * The owner adds identity commitments (made by the approvers) to the set of a template stage, creating
 * it on first use. The new root is logged in the same transaction: a rollback leaves neither.
 */
export async function registerApprovers(
  db: Db,
  input: { owner: string; template: string; stage: string; identityCommitments: string[] },
) {
  const { template } = approvalStage(input.template, input.stage);
  checkCommitments(input.identityCommitments);
  return db.transaction(async (trx) => {
    await trx('approver_sets')
      .insert({ id: newId('aps'), owner: input.owner, template: template.name, stage: input.stage })
      .onConflict(['owner', 'template', 'stage'])
      .ignore();
    const set = (await trx('approver_sets')
      .where({ owner: input.owner, template: template.name, stage: input.stage })
      .forUpdate()
      .first()) as SetRow;
    const existing = await members(trx, set.id);
    const known = new Set(existing);
    const added = input.identityCommitments.filter((c) => !known.has(c));
    if (existing.length + added.length > MAX_TREE_IDENTITIES)
      throw unprocessable(
        'approver_set_full',
        `A set holds at most ${MAX_TREE_IDENTITIES} identities (a tree of depth ${ANONYMITY_TREE_DEPTH}).`,
      );
    const last = (await acceptedRoots(trx, set.id))[0];
    if (added.length === 0) {
      if (!last) throw unprocessable('no_identities', 'Give at least one identity commitment.');
      return {
        setId: set.id,
        template: template.name,
        stage: set.stage,
        root: last.root,
        size: last.size,
        seq: last.seq,
        added: 0,
      };
    }
    const all = [...existing, ...added];
    await trx('approver_set_members').insert(
      added.map((c, i) => ({ set_id: set.id, leaf_index: existing.length + i, identity_commitment: c })),
    );
    const root = String(await memberTreeRoot(all.map(BigInt)));
    const seq = last ? last.seq + 1 : 0;
    const statement = {
      setId: set.id,
      template: template.name,
      stage: set.stage,
      seq,
      root,
      size: all.length,
    };
    await trx('approver_set_roots').insert({
      set_id: set.id,
      seq,
      root,
      size: all.length,
      statement_sha256: approverRootSha256(statement),
    });
    const id = approverRootLogId(set.id, seq);
    const logged = await appendEntries(trx, [
      {
        key: leafKey('approver_set', id),
        entry: entryFor('approver_set', id, approverRootStatement(statement)),
      },
    ]);
    return { ...statement, added: added.length, leafIndex: logged.start };
  });
}

/** A set's public tree: its commitments in leaf order and the roots approvals are accepted against. */
export async function approverSetTree(db: Conn, setId: string) {
  const set = (await db('approver_sets').where('id', setId).first()) as SetRow | undefined;
  if (!set) throw notFound(`Approver set ${setId}`);
  const [identityCommitments, roots] = await Promise.all([members(db, setId), acceptedRoots(db, setId)]);
  return {
    setId,
    template: set.template,
    stage: set.stage,
    depth: ANONYMITY_TREE_DEPTH,
    identityCommitments,
    root: roots[0]?.root ?? null,
    acceptedRoots: roots.map((r) => r.root),
  };
}

async function workflowByProof(db: Conn, proofId: string): Promise<WorkflowRow> {
  const wf = (await db('workflows').where('proof_id', proofId).first()) as WorkflowRow | undefined;
  if (!wf) throw notFound(`Proof ${proofId}`);
  return wf;
}

async function setFor(db: Conn, owner: string, template: string, stage: string): Promise<SetRow | undefined> {
  return (await db('approver_sets').where({ owner, template, stage }).first()) as SetRow | undefined;
}

/** Whether the owner's workflows of this template take only proven approvals at this stage. */
export async function stageHasApproverSet(
  db: Conn,
  workflowId: string,
  stage: string,
  principal: { owner: string; operator: boolean },
): Promise<boolean> {
  const q = db('workflows as w')
    .join('approver_sets as a', function () {
      this.on('a.owner', 'w.owner').andOn('a.template', 'w.template');
    })
    .where({ 'w.id': workflowId, 'a.stage': stage })
    .first('a.id');
  // Another owner's workflow is the engine's to refuse as not found.
  if (!principal.operator) q.where('w.owner', principal.owner);
  return ((await q) as { id: string } | undefined) !== undefined;
}

/** The content an approval of the stage made now approves: read from the committed trail before `seq`. */
async function currentContentHash(
  conn: Conn,
  wf: Pick<WorkflowRow, 'id' | 'proof_id' | 'template'>,
  stage: string,
  before?: number,
): Promise<string> {
  const q = conn('audit_entries')
    .where('workflow_id', wf.id)
    .whereNot(function () {
      this.where({ stage, action: 'approve' });
    })
    .orderBy('seq', 'desc')
    .first('entry_hash');
  if (before !== undefined) q.where('seq', '<', before);
  const row = (await q) as { entry_hash: string } | undefined;
  return row?.entry_hash ?? genesisOf({ template: templateOrThrow(wf.template), proofId: wf.proof_id });
}

/**
 * What an approver needs to prove an approval of a workflow's stage, all public: the scope, the content
 * hash it approves now, and the whole member list of the stage's set (never one member's path: asking
 * for it would say who is about to approve).
 */
export async function approvalTarget(db: Db, proofId: string, stage: string) {
  const wf = await workflowByProof(db, proofId);
  approvalStage(wf.template, stage);
  const set = await setFor(db, wf.owner, wf.template, stage);
  if (!set) throw conflict('approver_set_missing', `Stage '${stage}' of this workflow has no approver set.`);
  const contentHash = await currentContentHash(db, wf, stage);
  const tree = await approverSetTree(db, set.id);
  return {
    proofId,
    stage,
    setId: set.id,
    scope: String(approvalScope(proofId, stage)),
    contentHash,
    message: String(approvalMessage(contentHash)),
    members: tree.identityCommitments,
    root: tree.root,
    acceptedRoots: tree.acceptedRoots,
  };
}

export const approvalBodySchema = z
  .object({
    proofId: z.string().min(1).max(100),
    stage: z.string().min(1).max(64),
    proof: z.unknown(),
    publicSignals: z.unknown(),
  })
  .strict();
export type ApprovalBody = z.infer<typeof approvalBodySchema>;

const signalsSchema = z.array(z.string().regex(/^(0|[1-9]\d{0,76})$/, 'a decimal field element')).length(4);

/** An approval that passed every check that needs no lock. */
export interface CheckedApproval {
  workflow: WorkflowRow;
  stage: string;
  setId: string;
  root: RootRow;
  nullifier: string;
  contentHash: string;
  proof: z.infer<typeof approvalProofSchema>;
  publicSignals: string[];
}

/**
 * Checks a posted approval: well formed (400 invalid_proof_format), the workflow and stage exist (404,
 * 422), the stage has a set (409 approver_set_missing), the signals carry this stage's scope (409
 * approval_wrong_scope: a proof for another stage or workflow) and the content the stage shows now
 * (409 approval_content_mismatch), the root is one of the set's recent ones (409 approval_root_stale
 * for an older root of the set, approval_root_unknown otherwise), the nullifier is unused (409
 * approval_nullifier_used: the same approver again, or a replay), and the proof verifies (409
 * approval_proof_invalid). Reads only.
 */
export async function checkApproval(db: Db, body: ApprovalBody): Promise<CheckedApproval> {
  const proof = approvalProofSchema.safeParse(body.proof);
  const signals = signalsSchema.safeParse(body.publicSignals);
  if (!proof.success || !signals.success || !signals.data.every(isFieldElement)) {
    throw new AppError(
      400,
      'invalid_proof_format',
      'The approval proof or its public signals are not well formed.',
      {
        errors: [
          ...(proof.success
            ? []
            : proof.error.issues.map((i) => ({ path: ['proof', ...i.path].join('.'), message: i.message }))),
          ...(signals.success
            ? []
            : signals.error.issues.map((i) => ({
                path: ['publicSignals', ...i.path].join('.'),
                message: i.message,
              }))),
        ],
      },
    );
  }
  const wf = await workflowByProof(db, body.proofId);
  approvalStage(wf.template, body.stage);
  const set = await setFor(db, wf.owner, wf.template, body.stage);
  if (!set)
    throw conflict('approver_set_missing', `Stage '${body.stage}' of this workflow has no approver set.`);
  const [root, nullifier, scope, message] = signals.data as [string, string, string, string];
  if (scope !== String(approvalScope(wf.proof_id, body.stage)))
    throw conflict('approval_wrong_scope', 'The proof is for another workflow or stage.');
  const contentHash = await currentContentHash(db, wf, body.stage);
  if (message !== String(approvalMessage(contentHash)))
    throw conflict(
      'approval_content_mismatch',
      'The proof approves other content than the stage shows now; fetch it again.',
    );
  const accepted = await acceptedRoots(db, set.id);
  const at = accepted.find((r) => r.root === root);
  if (!at) {
    const older = await db('approver_set_roots').where({ set_id: set.id, root }).first('seq');
    throw older
      ? conflict(
          'approval_root_stale',
          'The proof is against an old root of the set; prove again against the current one.',
        )
      : conflict('approval_root_unknown', 'The proof is against a root the stage’s approver set never had.');
  }
  if (await db('workflow_approvals').where('nullifier', nullifier).first('seq'))
    throw conflict('approval_nullifier_used', 'This approver has already approved this stage.');
  const vkey = await loadVerificationKey(ANONYMITY_CIRCUIT);
  if (!(await verifyMembershipProof(vkey, proof.data as Groth16ProofJson, signals.data)))
    throw conflict('approval_proof_invalid', 'The membership proof does not verify.');
  return {
    workflow: wf,
    stage: body.stage,
    setId: set.id,
    root: at,
    nullifier,
    contentHash,
    proof: proof.data,
    publicSignals: signals.data,
  };
}

/** The approve event a checked approval is recorded as. */
export const approvalEvent = (a: CheckedApproval) => ({
  workflowId: a.workflow.id,
  stage: a.stage,
  action: 'approve' as const,
  actorCommitment: approvalActor(a.nullifier),
});

/**
 * Claims the approval in the transaction that writes its entry: the content it approves is still what
 * precedes the entry, and its nullifier was never used (the unique key decides between two at once).
 */
export async function claimApproval(
  trx: Knex.Transaction,
  a: CheckedApproval,
  entry: ChainedEntry,
): Promise<void> {
  if ((await currentContentHash(trx, a.workflow, a.stage, entry.seq)) !== a.contentHash)
    throw conflict(
      'approval_content_mismatch',
      'The stage changed while the approval was checked; fetch it again.',
    );
  const inserted = await trx('workflow_approvals')
    .insert({
      workflow_id: a.workflow.id,
      seq: entry.seq,
      stage: a.stage,
      nullifier: a.nullifier,
      set_id: a.setId,
      root_seq: a.root.seq,
      root: a.root.root,
      proof: JSON.stringify(a.proof),
      public_signals: JSON.stringify(a.publicSignals),
    })
    .onConflict('nullifier')
    .ignore()
    .returning('seq');
  if (inserted.length === 0)
    throw conflict('approval_nullifier_used', 'This approver has already approved this stage.');
}

/** A workflow's proven approvals as its package carries them, in chain order. */
export async function loadApprovals(conn: Conn, workflowId: string): Promise<PackagedApproval[]> {
  const rows = (await conn('workflow_approvals as a')
    .join('approver_set_roots as r', function () {
      this.on('r.set_id', 'a.set_id').andOn('r.seq', 'a.root_seq');
    })
    .where('a.workflow_id', workflowId)
    .orderBy('a.seq')
    .select(
      'a.stage',
      'a.seq',
      'a.set_id',
      'a.root_seq',
      'r.size',
      'r.statement_sha256',
      'a.root',
      'a.nullifier',
      'a.proof',
      'a.public_signals',
    )) as Array<{
    stage: string;
    seq: number;
    set_id: string;
    root_seq: number;
    size: number;
    statement_sha256: string;
    root: string;
    nullifier: string;
    proof: PackagedApproval['proof'];
    public_signals: string[];
  }>;
  return rows.map((r) => ({
    stage: r.stage,
    seq: r.seq,
    setId: r.set_id,
    rootSeq: r.root_seq,
    rootSize: r.size,
    rootStatement: r.statement_sha256,
    root: r.root,
    nullifier: r.nullifier,
    proof: r.proof,
    publicSignals: r.public_signals,
  }));
}
