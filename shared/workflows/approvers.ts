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
import { knownSchemas } from '../credentials/schemas';
import { canonicalJson } from '../platform/canonical';
import { verifyGroth16 } from '../zk/groth16';
import { acceptCredentialFacts } from './credential-proofs';
import type { CredentialFacts } from './credential-proofs';
import { genesisOf } from './engine';
import {
  APPROVER_TERMS,
  CREDENTIALED_APPROVAL_CIRCUIT,
  CREDENTIALED_APPROVAL_PUBLIC_SIGNALS,
  approvalActor,
  approvalMessage,
  approvalCredentialSignals,
  approvalProofSchema,
  approvalScope,
  approvalSignal,
  approverCredentialSchema,
  approverQuerySignals,
  approverRootLogId,
  approverRootStatement,
  approverRootSha256,
  fixedApproversStatement,
} from './approval-protocol';
import type {
  ApproverCredential,
  CredentialedApprovalSignal,
  FixedApproverSet,
  FixedApprovers,
  PackagedApproval,
} from './approval-protocol';
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
  'approval_root_after_prepare',
  'approval_root_unknown',
  'approval_nullifier_used',
  'approval_proof_invalid',
  'approval_credential_required',
  'approval_credential_query_mismatch',
] as const;

/** Where a stage has an approver set, a bare `approve` event is refused with this code (409). */
export const APPROVAL_PROOF_REQUIRED = 'approval_proof_required';

interface SetRow {
  id: string;
  owner: string;
  template: string;
  stage: string;
}

/** Whether a template stage takes approvals (and so may have an approver set). */
const takesApprovals = (spec: WorkflowTemplate['stages'][number]): boolean =>
  spec.requiredApprovals > 0 && spec.actions.includes('approve');

function approvalStage(templateName: string, stage: string): { template: WorkflowTemplate } {
  const template = findTemplate(templateName);
  if (!template) throw unprocessable('unknown_template', `There is no template ${templateName}.`);
  const spec = template.stages.find((s) => s.key === stage);
  if (!spec)
    throw unprocessable('unknown_stage', `${template.name} has no stage '${stage}'.`, {
      stages: template.stages.map((s) => s.key),
    });
  if (!takesApprovals(spec))
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

/** A set's commitments in leaf order: all of them, or the first `size` (the tree of an older root). */
async function members(conn: Conn, setId: string, size?: number): Promise<string[]> {
  const q = conn('approver_set_members').where('set_id', setId).orderBy('leaf_index');
  if (size !== undefined) q.where('leaf_index', '<', size);
  return (await q.pluck('identity_commitment')) as string[];
}

interface RootRow {
  seq: number;
  root: string;
  size: number;
  statement_sha256: string;
  created_at: Date;
  credential: ApproverCredential | null;
}

/** How many of a set's roots its public tree lists, newest first. */
const ROOTS_LISTED = 100;

/** A set's latest roots, newest first. */
async function latestRoots(conn: Conn, setId: string, limit: number): Promise<RootRow[]> {
  return (await conn('approver_set_roots')
    .where('set_id', setId)
    .orderBy('seq', 'desc')
    .limit(limit)
    .select('seq', 'root', 'size', 'statement_sha256', 'created_at', 'credential')) as RootRow[];
}

/** A set's credential requirement as an admin asks for it: a schema the service knows, by name. */
export const approverCredentialInputSchema = z
  .object({
    schema: z.string().min(1).max(64),
    what: z.string().min(1).max(200).optional(),
    terms: approverCredentialSchema.shape.terms,
    maxRevocationAge: z
      .number()
      .int()
      .positive()
      .max(366 * 86_400)
      .optional(),
    maxProofAge: z
      .number()
      .int()
      .positive()
      .max(30 * 86_400)
      .optional(),
  })
  .strict();
export type ApproverCredentialInput = z.infer<typeof approverCredentialInputSchema>;

/** The requirement in full (the schema itself, the bounds), checked against the schema: 422 or 400. */
async function approverRequirement(input: ApproverCredentialInput): Promise<ApproverCredential> {
  const schema = knownSchemas[input.schema];
  if (!schema)
    throw unprocessable('unknown_schema', `There is no credential schema ${input.schema}.`, {
      schemas: Object.keys(knownSchemas),
    });
  const requirement: ApproverCredential = {
    what: input.what ?? `a ${schema.name} credential`,
    schema,
    terms: input.terms,
    maxRevocationAge: input.maxRevocationAge ?? 7 * 86_400,
    maxProofAge: input.maxProofAge ?? 86_400,
  };
  await approverQuerySignals(requirement);
  return requirement;
}

/**
 * The owner adds identity commitments (made by the approvers) to the set of a template stage, creating
 * it on first use, and may set (or change) what each approver must hold: a credential requirement, in
 * the root statement from then on. The new root is logged in the same transaction: a rollback leaves
 * neither.
 */
export async function registerApprovers(
  db: Db,
  input: {
    owner: string;
    template: string;
    stage: string;
    identityCommitments: string[];
    credential?: ApproverCredentialInput | undefined;
  },
) {
  const { template } = approvalStage(input.template, input.stage);
  checkCommitments(input.identityCommitments);
  const requirement = input.credential ? await approverRequirement(input.credential) : undefined;
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
    const last = (await latestRoots(trx, set.id, 1))[0];
    const current = last?.credential ?? null;
    const credential = requirement ?? current;
    const changed = canonicalJson(credential) !== canonicalJson(current);
    if (added.length === 0 && !changed) {
      if (!last) throw unprocessable('no_identities', 'Give at least one identity commitment.');
      return {
        setId: set.id,
        template: template.name,
        stage: set.stage,
        root: last.root,
        size: last.size,
        seq: last.seq,
        added: 0,
        ...(credential ? { credential } : {}),
      };
    }
    const all = [...existing, ...added];
    if (added.length > 0)
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
      ...(credential ? { credential } : {}),
    };
    await trx('approver_set_roots').insert({
      set_id: set.id,
      seq,
      root,
      size: all.length,
      statement_sha256: approverRootSha256(statement),
      credential: credential ? JSON.stringify(credential) : null,
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

/**
 * A set's public tree: its commitments in leaf order, its current root, and its latest roots with when
 * each was made (a workflow takes approvals against the one it fixed at prepare: its first `size`
 * commitments).
 */
export async function approverSetTree(db: Conn, setId: string) {
  const set = (await db('approver_sets').where('id', setId).first()) as SetRow | undefined;
  if (!set) throw notFound(`Approver set ${setId}`);
  const [identityCommitments, roots] = await Promise.all([
    members(db, setId),
    latestRoots(db, setId, ROOTS_LISTED),
  ]);
  return {
    setId,
    template: set.template,
    stage: set.stage,
    depth: ANONYMITY_TREE_DEPTH,
    identityCommitments,
    root: roots[0]?.root ?? null,
    roots: roots.map((r) => ({ seq: r.seq, root: r.root, size: r.size, at: r.created_at.toISOString() })),
    credential: roots[0]?.credential ?? null,
  };
}

/**
 * Fixes, in the prepare transaction, the root each approval stage of a new workflow takes approvals
 * against: its owner's set's latest root now, or none. Where any stage has one, the statement is logged
 * (kind workflow_approvers, id the proof id) before the workflow has its first event. Returns what the
 * package will carry, or undefined where no stage has a set.
 */
export async function fixApproverSets(
  trx: Knex.Transaction,
  workflow: { id: string; proofId: string; owner: string; template: WorkflowTemplate },
  fixedAt: Date,
): Promise<FixedApprovers | undefined> {
  const stages = workflow.template.stages.flatMap((s, idx) =>
    takesApprovals(s) ? [{ key: s.key, idx }] : [],
  );
  if (stages.length === 0) return undefined;
  const rows = (await trx('approver_sets as a')
    .join('approver_set_roots as r', 'r.set_id', 'a.id')
    .where({ 'a.owner': workflow.owner, 'a.template': workflow.template.name })
    .whereIn(
      'a.stage',
      stages.map((s) => s.key),
    )
    .distinctOn('a.stage')
    .orderBy([{ column: 'a.stage' }, { column: 'r.seq', order: 'desc' }])
    .select(
      'a.stage',
      'a.id as set_id',
      'r.seq',
      'r.root',
      'r.size',
      'r.statement_sha256',
      'r.credential',
    )) as Array<{
    stage: string;
    set_id: string;
    seq: number;
    root: string;
    size: number;
    statement_sha256: string;
    credential: ApproverCredential | null;
  }>;
  if (rows.length === 0) return undefined;
  const byStage = new Map(rows.map((r) => [r.stage, r]));
  const sets: Array<FixedApproverSet & { idx: number }> = stages.flatMap((s) => {
    const r = byStage.get(s.key);
    return r
      ? [
          {
            idx: s.idx,
            stage: s.key,
            setId: r.set_id,
            rootSeq: r.seq,
            root: r.root,
            size: r.size,
            rootStatement: r.statement_sha256,
            ...(r.credential ? { credential: r.credential } : {}),
          },
        ]
      : [];
  });
  const at = fixedAt.toISOString();
  const statement = fixedApproversStatement({
    proofId: workflow.proofId,
    template: workflow.template.name,
    fixedAt: at,
    sets,
  });
  const logged = await appendEntries(trx, [
    {
      key: leafKey('workflow_approvers', workflow.proofId),
      entry: entryFor('workflow_approvers', workflow.proofId, statement),
    },
  ]);
  await trx('workflow_approver_sets').insert(
    sets.map((s) => ({
      workflow_id: workflow.id,
      stage: s.stage,
      idx: s.idx,
      set_id: s.setId,
      root_seq: s.rootSeq,
      root: s.root,
      size: s.size,
      root_statement: s.rootStatement,
      fixed_at: fixedAt,
      leaf_index: logged.start,
      credential: s.credential ? JSON.stringify(s.credential) : null,
    })),
  );
  return { fixedAt: at, leafIndex: Number(logged.start), sets: sets.map(({ idx: _idx, ...s }) => s) };
}

interface FixedRow {
  stage: string;
  set_id: string;
  root_seq: number;
  root: string;
  size: number;
  root_statement: string;
  fixed_at: Date;
  leaf_index: string | number;
  credential: ApproverCredential | null;
}

const fixedOf = (rows: readonly FixedRow[]): FixedApprovers | undefined =>
  rows.length === 0
    ? undefined
    : {
        fixedAt: rows[0]!.fixed_at.toISOString(),
        leafIndex: Number(rows[0]!.leaf_index),
        sets: rows.map((r) => ({
          stage: r.stage,
          setId: r.set_id,
          rootSeq: r.root_seq,
          root: r.root,
          size: r.size,
          rootStatement: r.root_statement,
          ...(r.credential ? { credential: r.credential } : {}),
        })),
      };

/** The approver sets a workflow fixed at prepare, as its package carries them (undefined: none). */
export async function loadFixedApprovers(
  conn: Conn,
  workflowId: string,
): Promise<FixedApprovers | undefined> {
  return fixedOf(
    (await conn('workflow_approver_sets')
      .where('workflow_id', workflowId)
      .orderBy('idx')
      .select(
        'stage',
        'set_id',
        'root_seq',
        'root',
        'size',
        'root_statement',
        'fixed_at',
        'leaf_index',
        'credential',
      )) as FixedRow[],
  );
}

/** The set a workflow's stage fixed at prepare, if any. */
async function fixedSet(conn: Conn, workflowId: string, stage: string): Promise<FixedRow | undefined> {
  return (await conn('workflow_approver_sets').where({ workflow_id: workflowId, stage }).first()) as
    FixedRow | undefined;
}

async function workflowByProof(db: Conn, proofId: string): Promise<WorkflowRow> {
  const wf = (await db('workflows').where('proof_id', proofId).first()) as WorkflowRow | undefined;
  if (!wf) throw notFound(`Proof ${proofId}`);
  return wf;
}

/** Whether the workflow fixed an approver set for this stage at prepare: it then takes only proven approvals. */
export async function stageHasApproverSet(
  db: Conn,
  workflowId: string,
  stage: string,
  principal: { owner: string; operator: boolean },
): Promise<boolean> {
  const q = db('workflow_approver_sets as f')
    .join('workflows as w', 'w.id', 'f.workflow_id')
    .where({ 'f.workflow_id': workflowId, 'f.stage': stage })
    .first('f.set_id as id');
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
 * hash it approves now, and the whole member list of the set as the workflow fixed it at prepare (never
 * one member's path: asking for it would say who is about to approve).
 */
export async function approvalTarget(db: Db, proofId: string, stage: string) {
  const wf = await workflowByProof(db, proofId);
  approvalStage(wf.template, stage);
  const fixed = await fixedSet(db, wf.id, stage);
  if (!fixed) throw notFixed(stage);
  const [contentHash, commitments] = await Promise.all([
    currentContentHash(db, wf, stage),
    members(db, fixed.set_id, fixed.size),
  ]);
  return {
    proofId,
    stage,
    setId: fixed.set_id,
    scope: String(approvalScope(proofId, stage)),
    contentHash,
    message: String(approvalMessage(contentHash)),
    members: commitments,
    root: fixed.root,
    rootSeq: fixed.root_seq,
    size: fixed.size,
    fixedAt: fixed.fixed_at.toISOString(),
    // Where each approver must hold a credential: what, and the circuit that proves both at once.
    credential: fixed.credential,
    circuit: fixed.credential ? CREDENTIALED_APPROVAL_CIRCUIT : ANONYMITY_CIRCUIT,
  };
}

const notFixed = (stage: string) =>
  conflict(
    'approver_set_missing',
    `Stage '${stage}' of this workflow has no approver set: none was registered for it when the workflow was prepared.`,
  );

export const approvalBodySchema = z
  .object({
    proofId: z.string().min(1).max(100),
    stage: z.string().min(1).max(64),
    proof: z.unknown(),
    publicSignals: z.unknown(),
  })
  .strict();
export type ApprovalBody = z.infer<typeof approvalBodySchema>;

const signalSchema = z.string().regex(/^(0|[1-9]\d{0,76})$/, 'a decimal field element');
const signalsSchema = z.union([
  z.array(signalSchema).length(4),
  z.array(signalSchema).length(CREDENTIALED_APPROVAL_PUBLIC_SIGNALS.length),
]);

/** An approval that passed every check that needs no lock. */
export interface CheckedApproval {
  workflow: WorkflowRow;
  stage: string;
  setId: string;
  root: { seq: number; root: string };
  nullifier: string;
  contentHash: string;
  proof: z.infer<typeof approvalProofSchema>;
  publicSignals: string[];
  /** For a credentialed set: the issuer's and the revocation root's statements it was accepted on. */
  credential?: CredentialFacts;
}

/**
 * Checks a posted approval: well formed (400 invalid_proof_format), the workflow and stage exist (404,
 * 422), the stage has a set (409 approver_set_missing), the signals carry this stage's scope (409
 * approval_wrong_scope: a proof for another stage or workflow) and the content the stage shows now
 * (409 approval_content_mismatch), the root is the one the workflow fixed at prepare (409
 * approval_root_after_prepare for a later root of the set: a member added since; approval_root_stale
 * for an earlier one; approval_root_unknown otherwise), the nullifier is unused (409
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
  const fixed = await fixedSet(db, wf.id, body.stage);
  if (!fixed) throw notFixed(body.stage);
  const credentialed = signals.data.length === CREDENTIALED_APPROVAL_PUBLIC_SIGNALS.length;
  if (fixed.credential && !credentialed)
    throw conflict(
      'approval_credential_required',
      `Each approver of stage '${body.stage}' must hold ${fixed.credential.what}: prove the approval with the ${CREDENTIALED_APPROVAL_CIRCUIT} circuit and the credential (npm run px -- approve approve --credential FILE).`,
    );
  if (!fixed.credential && credentialed)
    throw new AppError(
      400,
      'invalid_proof_format',
      'This stage’s approvals are [root, nullifier, scope, message].',
      {
        errors: [{ path: 'publicSignals', message: 'four signals: the stage’s set requires no credential' }],
      },
    );
  const [root, nullifier, scope, message] = signals.data as [string, string, string, string];
  if (scope !== String(approvalScope(wf.proof_id, body.stage)))
    throw conflict('approval_wrong_scope', 'The proof is for another workflow or stage.');
  const contentHash = await currentContentHash(db, wf, body.stage);
  if (message !== String(approvalMessage(contentHash)))
    throw conflict(
      'approval_content_mismatch',
      'The proof approves other content than the stage shows now; fetch it again.',
    );
  if (root !== fixed.root) {
    const other = (await db('approver_set_roots').where({ set_id: fixed.set_id, root }).first('seq')) as
      { seq: number } | undefined;
    if (!other)
      throw conflict(
        'approval_root_unknown',
        'The proof is against a root the stage’s approver set never had.',
      );
    throw other.seq > fixed.root_seq
      ? conflict(
          'approval_root_after_prepare',
          `The proof is against a root the set got after this workflow was prepared (${fixed.fixed_at.toISOString()}): members added since never count for it. Prove against the root it fixed (the approval target's).`,
        )
      : conflict(
          'approval_root_stale',
          'The proof is against a root the set had before the one this workflow fixed at prepare; prove against the approval target’s.',
        );
  }
  if (await db('workflow_approvals').where('nullifier', nullifier).first('seq'))
    throw conflict('approval_nullifier_used', 'This approver has already approved this stage.');
  let credential: CredentialFacts | undefined;
  if (fixed.credential) {
    const signal = (name: CredentialedApprovalSignal) => approvalSignal(signals.data, name);
    const query = await approverQuerySignals(fixed.credential);
    const names = ['schemaId', ...CREDENTIALED_APPROVAL_PUBLIC_SIGNALS.slice(9)] as const;
    if (!names.every((n) => signal(n) === query[n]))
      throw conflict(
        'approval_credential_query_mismatch',
        `The proof shows another query than the set requires (${fixed.credential.what}, ${APPROVER_TERMS} terms as the approval target gives them).`,
      );
    credential = await acceptCredentialFacts(db, {
      owner: wf.owner,
      schemaName: fixed.credential.schema.name,
      maxProofAge: fixed.credential.maxProofAge,
      maxRevocationAge: fixed.credential.maxRevocationAge,
      signals: approvalCredentialSignals(signals.data),
      at: new Date(),
      current: true,
    });
    const vkey = await loadVerificationKey(CREDENTIALED_APPROVAL_CIRCUIT);
    const valid = await verifyGroth16(vkey, signals.data, {
      ...(proof.data as Groth16ProofJson),
      protocol: 'groth16',
      curve: 'bn128',
    }).catch(() => false);
    if (!valid) throw conflict('approval_proof_invalid', 'The credentialed approval proof does not verify.');
  } else {
    const vkey = await loadVerificationKey(ANONYMITY_CIRCUIT);
    if (!(await verifyMembershipProof(vkey, proof.data as Groth16ProofJson, signals.data)))
      throw conflict('approval_proof_invalid', 'The membership proof does not verify.');
  }
  return {
    workflow: wf,
    stage: body.stage,
    setId: fixed.set_id,
    root: { seq: fixed.root_seq, root: fixed.root },
    nullifier,
    contentHash,
    proof: proof.data,
    publicSignals: signals.data,
    ...(credential ? { credential } : {}),
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
      credential: a.credential ? JSON.stringify(a.credential) : null,
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
      'a.credential',
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
    credential: CredentialFacts | null;
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
    ...(r.credential ? { credential: r.credential } : {}),
  }));
}
