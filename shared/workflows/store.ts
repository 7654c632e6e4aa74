// Proof workflows in Postgres: prepare, record events (through the appender, append.ts), read the
// public state, and verify stored records against the same verifier the offline check uses.
import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import { sha256Hex } from '../crypto';
import type { Db } from '../db/knex';
import { AppError, notFound } from '../errors';
import { newId } from '../ids';
import { logger } from '../log';
import type { Queues } from '../queues';
import type { SignedTreeHead } from '../translog/treeHead';
import { appenderFor, preparedHead } from './append';
import type { GatedProof, Principal, RecordedEvent } from './append';
import { chainHead, flattenTrail } from './chain';
import { genesisOf, initialStages, workflowStatus } from './engine';
import type { Reason } from './envelope';
import { publicTimeline, verifyPackage, verifyRecords } from './package';
import { checkPolicyProof, commitPolicyParameters, loadStageGates } from './policyGate';
import type { PreparedGate } from './policyGate';
import type { PackageVerdict, PublicStage, WorkflowPackage } from './package';
import type { ChainedEntry, EvidenceKind, StageRecord, WorkflowEvent, WorkflowStatus } from './records';
import { servicePublicKey } from './seal';
import { stageContext } from '../zk/context';
import { findTemplate, stageRequirements, workflowTemplates } from './templates';
import type { TemplateName, WorkflowTemplate } from './templates';

export type { RecordedEvent } from './append';
export { serviceActorCommitment } from './append';

type Conn = Db | Knex.Transaction;

/** The proofs-queue kind that builds and logs a workflow package. */
export const WORKFLOW_PACKAGE_KIND = 'workflow_package';

export interface WorkflowRow {
  id: string;
  proof_id: string;
  template: TemplateName;
  template_version: number;
  status: WorkflowStatus;
  owner: string;
  chain_head: string;
  entry_count: number;
  created_at: Date;
  updated_at: Date;
}

interface StageRow {
  workflow_id: string;
  idx: number;
  stage: string;
  status: StageRecord['status'];
  actor_commitment: string | null;
  timestamp: string | null;
  proof_hash: string | null;
}

interface EntryRow {
  workflow_id: string;
  seq: number;
  stage: string;
  action: ChainedEntry['action'];
  actor_commitment: string;
  evidence_commitment: string | null;
  evidence_kind: EvidenceKind | null;
  at: string;
  prev_hash: string;
  entry_hash: string;
}

export interface PackageRow {
  id: string;
  workflow_id: string;
  status: 'pending' | 'logged' | 'failed';
  package: WorkflowPackage | null;
  leaf_index: string | null;
  error: string | null;
}

export function templateOrThrow(name: string): WorkflowTemplate {
  const template = findTemplate(name);
  if (!template) {
    throw new AppError(422, 'unknown_template', `There is no template '${name}'.`, {
      extra: { templates: workflowTemplates.map((t) => t.name) },
    });
  }
  return template;
}

function entryOf(r: EntryRow): ChainedEntry {
  return {
    seq: r.seq,
    stage: r.stage,
    action: r.action,
    actorCommitment: r.actor_commitment,
    ...(r.evidence_commitment !== null ? { evidenceCommitment: r.evidence_commitment } : {}),
    ...(r.evidence_kind !== null ? { evidenceKind: r.evidence_kind } : {}),
    at: r.at,
    prevHash: r.prev_hash,
    entryHash: r.entry_hash,
  };
}

/** The stage records of a workflow rebuilt from its rows, in template order, with the exact hashed strings. */
export async function loadRecords(db: Conn, workflowId: string): Promise<StageRecord[]> {
  const [stages, entries] = await Promise.all([
    db('workflow_stages').where('workflow_id', workflowId).orderBy('idx') as Promise<StageRow[]>,
    db('audit_entries').where('workflow_id', workflowId).orderBy('seq') as Promise<EntryRow[]>,
  ]);
  return stages.map((s) => ({
    stage: s.stage,
    status: s.status,
    actorCommitment: s.actor_commitment,
    timestamp: s.timestamp,
    proofHash: s.proof_hash,
    auditTrail: entries.filter((e) => e.stage === s.stage).map(entryOf),
  }));
}

export interface PreparedWorkflow {
  workflowId: string;
  proofId: string;
  template: TemplateName;
  templateVersion: number;
  status: WorkflowStatus;
  stages: Array<StageRecord & { name: string; requiredApprovals: number; actions: string[] }>;
  /** Per stage that needs a blind policy proof: its policy, parameter commitments and context. */
  policyGates: PreparedGate[];
}

function describeStages(
  template: WorkflowTemplate,
  records: readonly StageRecord[],
): PreparedWorkflow['stages'] {
  return template.stages.map((spec, i) => ({
    ...(records[i] as StageRecord),
    name: spec.name,
    requiredApprovals: spec.requiredApprovals,
    actions: [...spec.actions],
  }));
}

/**
 * Starts a workflow from a template; `owner` is 'operator' or a license id. The parameters of every
 * stage that needs a blind policy proof are fixed here, as commitments (plain ones are committed
 * and dropped; their salts go back to the caller once).
 */
export async function prepareWorkflow(
  db: Db,
  input: { template: string; owner: string; policyParameters?: Record<string, unknown> | undefined },
): Promise<PreparedWorkflow> {
  const template = templateOrThrow(input.template);
  const committed = await commitPolicyParameters(template, input.policyParameters);
  const workflowId = newId('wf');
  const proofId = newId('prf');
  const records = initialStages(template);
  const gates = new Map(committed.map((g) => [g.index, g]));
  const policyGates: PreparedGate[] = await Promise.all(
    committed.map(async (g) => ({ ...g, context: await stageContext(proofId, g.index) })),
  );
  await db.transaction(async (trx) => {
    await trx('workflows').insert({
      id: workflowId,
      proof_id: proofId,
      template: template.name,
      template_version: template.version,
      owner: input.owner,
      chain_head: genesisOf({ template, proofId }),
    });
    await trx('workflow_stages').insert(
      records.map((r, idx) => ({
        workflow_id: workflowId,
        idx,
        stage: r.stage,
        status: r.status,
        policy: gates.get(idx)?.policy ?? null,
        policy_commitments: gates.has(idx) ? JSON.stringify(gates.get(idx)!.commitments) : null,
      })),
    );
  });
  // Its first event needs nothing read back: the head of a new workflow is known.
  appenderFor(db).remember(preparedHead({ id: workflowId, proofId, template, owner: input.owner }));
  return {
    workflowId,
    proofId,
    template: template.name,
    templateVersion: template.version,
    status: 'active',
    stages: describeStages(template, records),
    policyGates,
  };
}

/**
 * The gate for an event carrying a policy proof, decided before the row lock is taken: the gate's
 * parameters never change after prepare, and the pairing check should not hold the lock.
 */
async function gatePolicyProof(
  db: Db,
  event: WorkflowEvent,
  principal: Principal,
): Promise<GatedProof | undefined> {
  if (!event.policyProof) return undefined;
  const wf = (await db('workflows').where('id', event.workflowId).first()) as WorkflowRow | undefined;
  if (!wf || (!principal.operator && wf.owner !== principal.owner))
    throw notFound(`Workflow ${event.workflowId}`);
  const template = templateOrThrow(wf.template);
  const stageIndex = template.stages.findIndex((s) => s.key === event.stage);
  // An unknown stage is the engine's to refuse, with its own code.
  if (stageIndex < 0) return undefined;
  const gate = (await loadStageGates(db, wf.id)).get(stageIndex);
  const accepted = await checkPolicyProof(
    gate,
    {
      proofId: wf.proof_id,
      stage: event.stage,
      stageRequiresProof: template.stages[stageIndex]!.requiresBlindPolicyProof === true,
    },
    event.policyProof,
  );
  return { accepted, stageIndex };
}

/**
 * Records one event: a policy proof is checked against its stage's gate first (no lock held), then the
 * workflow's appender decides the event against the workflow's head and advances it (see append.ts).
 * When only the Proof stage is left, the service finalizes it in the same write; a closed workflow gets
 * its package row in that write and a `proofs` job after commit.
 */
export async function recordEvent(
  db: Db,
  queues: Queues,
  event: WorkflowEvent,
  principal: Principal,
): Promise<RecordedEvent> {
  if (event.policyProof && event.evidenceHash !== undefined) {
    throw new AppError(400, 'validation_failed', 'Send evidenceHash or policyProof, not both.', {
      errors: [{ path: 'policyProof', message: 'not with evidenceHash' }],
    });
  }
  const gated = await gatePolicyProof(db, event, principal);
  const result = await appenderFor(db).append(event, principal, gated);
  if (result.workflowStatus !== 'active') await enqueuePackage(queues, result.proofId);
  return result;
}

/** Enqueues a package build; a Redis failure is logged, not thrown: the sweeper re-enqueues from Postgres. */
export async function enqueuePackage(queues: Queues, proofId: string): Promise<boolean> {
  try {
    await queues.enqueue('proofs', { proofId, kind: WORKFLOW_PACKAGE_KIND });
    return true;
  } catch (err) {
    logger.warn(
      { proofId, err: (err as Error).message },
      'enqueue failed; the sweeper will retry from Postgres',
    );
    return false;
  }
}

export async function workflowByProofId(db: Conn, proofId: string): Promise<WorkflowRow | undefined> {
  return (await db('workflows').where('proof_id', proofId).first()) as WorkflowRow | undefined;
}

export async function packageRow(db: Conn, proofId: string): Promise<PackageRow | undefined> {
  return (await db('proof_packages').where('id', proofId).first()) as PackageRow | undefined;
}

export interface TemplateSummary {
  key: string;
  name: TemplateName;
  version: number;
  description: string;
  stages: Array<ReturnType<typeof stageRequirements>[number] & { policy: string | null }>;
  counts: { active: number; completed: number; rejected: number; total: number };
}

/** The six templates with their stages and how many workflows of each are in each state. */
export async function templateSummaries(db: Conn): Promise<TemplateSummary[]> {
  const rows = (await db('workflows')
    .select('template', 'status')
    .count('* as n')
    .groupBy('template', 'status')) as Array<{
    template: string;
    status: WorkflowStatus;
    n: string | number;
  }>;
  return workflowTemplates.map((t) => {
    const counts = { active: 0, completed: 0, rejected: 0, total: 0 };
    for (const r of rows.filter((r) => r.template === t.name)) {
      counts[r.status] += Number(r.n);
      counts.total += Number(r.n);
    }
    return {
      key: t.key,
      name: t.name,
      version: t.version,
      description: t.description,
      stages: stageRequirements(t).map((r, i) => ({ ...r, policy: t.stages[i]?.policy ?? null })),
      counts,
    };
  });
}

export interface PublicWorkflowState {
  proofId: string;
  template: TemplateName;
  templateVersion: number;
  status: WorkflowStatus;
  stages: PublicStage[];
  chain: { genesis: string; head: string; length: number };
  package: { status: PackageRow['status']; leafIndex: number | null } | null;
}

/** What anyone may see of a workflow: never its private handle, salts or evidence. */
export async function publicState(db: Conn, proofId: string): Promise<PublicWorkflowState | undefined> {
  const wf = await workflowByProofId(db, proofId);
  if (!wf) return undefined;
  const template = templateOrThrow(wf.template);
  const [records, pkg] = await Promise.all([loadRecords(db, wf.id), packageRow(db, proofId)]);
  const genesis = genesisOf({ template, proofId });
  return {
    proofId,
    template: template.name,
    templateVersion: wf.template_version,
    status: wf.status,
    stages: publicTimeline(template, records),
    chain: { genesis, head: chainHead(genesis, records), length: flattenTrail(records).length },
    package: pkg
      ? { status: pkg.status, leafIndex: pkg.leaf_index === null ? null : Number(pkg.leaf_index) }
      : null,
  };
}

export interface Verification {
  proofId: string | null;
  existed: boolean;
  completed: boolean;
  approvalsMet: boolean;
  sequenceRespected: boolean;
  notAltered: boolean;
  signatureValid?: boolean;
  inclusionValid?: boolean;
  /** The first altered stage or entry of the stored records, when there is one. */
  altered?: { stage: string; seq?: number; code: string; detail: string };
  reasons: Reason[];
  template?: string;
  status?: WorkflowStatus;
  chain?: { genesis: string; head: string; length: number };
  stages?: PublicStage[];
  /** The signed package with its log inclusion proof, once built. */
  package?: WorkflowPackage;
  packageStatus?: PackageRow['status'] | 'none';
  /** The latest signed tree head of the log, to check the package's head against. */
  latestTreeHead?: SignedTreeHead;
}

const facts = ['existed', 'completed', 'approvalsMet', 'sequenceRespected'] as const;

/** Verifies a pasted package offline-style: exactly the offline verifier with this service's key. */
export function verifyGivenPackage(pkg: unknown): Verification {
  const key = servicePublicKey();
  const v = verifyPackage(pkg, { publicKey: key.publicKey });
  const parsed = pkg as Partial<WorkflowPackage> | null;
  return {
    proofId: typeof parsed?.proofId === 'string' && v.notAltered ? parsed.proofId : null,
    ...v,
  };
}

interface VerifiableRow {
  template: string;
  template_version: number;
  status: WorkflowStatus;
  chain_head: string;
  entry_count: number;
  /** JSON arrays as text: their exact bytes key the memo of what they recompute to. */
  stages: string;
  entries: string;
  package_status: PackageRow['status'] | null;
  package_text: string | null;
  latest: SignedTreeHead | null;
}

/**
 * Everything verify reads, in one statement (one snapshot): the workflow row with its stored head, the
 * stage rows, the trail in chain order, the package, and the latest signed tree head.
 */
async function loadVerifiable(db: Conn, proofId: string): Promise<VerifiableRow | undefined> {
  const { rows } = (await db
    .raw(
      `select w.template, w.template_version, w.status, w.chain_head, w.entry_count,
       (select coalesce(json_agg(json_build_object('stage', s.stage, 'status', s.status,
          'actorCommitment', s.actor_commitment, 'timestamp', s.timestamp, 'proofHash', s.proof_hash)
          order by s.idx), '[]'::json)::text
        from workflow_stages s where s.workflow_id = w.id) as stages,
       (select coalesce(json_agg(json_strip_nulls(json_build_object('seq', e.seq, 'stage', e.stage,
          'action', e.action, 'actorCommitment', e.actor_commitment,
          'evidenceCommitment', e.evidence_commitment, 'evidenceKind', e.evidence_kind, 'at', e.at,
          'prevHash', e.prev_hash, 'entryHash', e.entry_hash)) order by e.seq), '[]'::json)::text
        from audit_entries e where e.workflow_id = w.id) as entries,
       p.status as package_status, p.package::text as package_text,
       (select json_build_object('treeSize', t.tree_size, 'rootHash', t.root_hash,
          'timestamp', t.timestamp, 'keyId', t.key_id, 'signature', t.signature)
        from tree_heads t order by t.tree_size desc limit 1) as latest
     from workflows w left join proof_packages p on p.id = w.proof_id
     where w.proof_id = ?`,
      [proofId],
    )
    .options({ name: 'workflow_verify' })) as { rows: VerifiableRow[] };
  return rows[0];
}

/** Stage records from stage rows and the trail (each stage gets its entries, in chain order). */
function recordsFromRows(
  stages: ReadonlyArray<Omit<StageRecord, 'auditTrail'>>,
  entries: readonly ChainedEntry[],
): StageRecord[] {
  const byStage = new Map<string, ChainedEntry[]>(stages.map((s) => [s.stage, []]));
  for (const e of entries) byStage.get(e.stage)?.push(e);
  return stages.map((s) => ({ ...s, auditTrail: byStage.get(s.stage) ?? [] }));
}

/** Frozen all the way down: what the memos below hand out is shared by every later request. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * Stored packages, parsed, with their verdicts, by the hash of their bytes: a package row is written
 * once, when logged, and the same bytes always parse and verify the same.
 */
const packageVerdicts = new LRUCache<string, { pkg: WorkflowPackage; verdict: PackageVerdict }>({
  max: 10_000,
});

/** verifyPackage over a stored package's exact bytes, remembered. The result is frozen. */
function verifyPackageText(
  text: string,
  publicKey: string,
): Readonly<{ pkg: WorkflowPackage; verdict: PackageVerdict }> {
  const key = sha256Hex(`${publicKey}\n${text}`);
  let known = packageVerdicts.get(key);
  if (!known) {
    const pkg = JSON.parse(text) as WorkflowPackage;
    known = deepFreeze({ pkg, verdict: verifyPackage(pkg, { publicKey }) });
    packageVerdicts.set(key, known);
  }
  return known;
}

/** What a workflow's stage and trail rows recompute to, with nothing else of the workflow. */
interface RowsVerdict {
  genesis: string;
  head: string;
  length: number;
  verdict: ReturnType<typeof verifyRecords>;
  status: WorkflowStatus;
  stages: PublicStage[];
}

/**
 * RowsVerdicts by the hash of the rows' exact text: the same bytes always recompute to the same
 * verdict, and any change to a row (a tampered entry, one dropped or added) is another key. Frozen.
 */
const rowsVerdicts = new LRUCache<string, Readonly<RowsVerdict>>({ max: 10_000 });

function verifyRows(
  template: WorkflowTemplate,
  proofId: string,
  stagesText: string,
  entriesText: string,
): Readonly<RowsVerdict> {
  const key = sha256Hex(`${template.name}\n${proofId}\n${stagesText}\n${entriesText}`);
  const known = rowsVerdicts.get(key);
  if (known) return known;
  const stages = JSON.parse(stagesText) as Array<Omit<StageRecord, 'auditTrail'>>;
  const entries = JSON.parse(entriesText) as ChainedEntry[];
  const records = recordsFromRows(stages, entries);
  const genesis = genesisOf({ template, proofId });
  const rows: RowsVerdict = {
    genesis,
    head: chainHead(genesis, records),
    length: entries.length,
    verdict: verifyRecords({ template, proofId, records }),
    status: workflowStatus(records),
    stages: publicTimeline(template, records),
  };
  rowsVerdicts.set(key, deepFreeze(rows));
  return rows;
}

/**
 * Verifies a workflow by proof id: recomputes the chain and stage hashes from the stored records
 * (verifyRecords), and checks the stored package's signature and log inclusion and that it matches.
 */
export async function verifyStored(db: Conn, proofId: string): Promise<Verification> {
  const wf = await loadVerifiable(db, proofId);
  if (!wf) {
    return {
      proofId,
      existed: false,
      completed: false,
      approvalsMet: false,
      sequenceRespected: false,
      notAltered: false,
      reasons: [
        { check: 'existed', code: 'unknown_proof', detail: 'No workflow has this proof id.' },
        ...(['completed', 'approvalsMet', 'sequenceRespected', 'notAltered'] as const).map((check) => ({
          check,
          code: 'not_verifiable',
          detail: 'No workflow has this proof id.',
        })),
      ],
      packageStatus: 'none',
    };
  }
  const template = templateOrThrow(wf.template);
  const { genesis, head, length, verdict, status, stages } = verifyRows(
    template,
    proofId,
    wf.stages,
    wf.entries,
  );
  const reasons: Reason[] = [...verdict.reasons];
  let notAltered = verdict.notAltered;
  // The head kept on the workflow row moves with every append: entries dropped from the end, or a row
  // put back, leave a trail that recomputes but no longer reaches it.
  if (notAltered && (head !== wf.chain_head || length !== wf.entry_count)) {
    notAltered = false;
    reasons.push({
      check: 'notAltered',
      code: 'head_mismatch',
      detail: `The entries end at a different chain head (${length} entries) than the workflow recorded (${wf.entry_count}).`,
    });
  } else if (notAltered && status !== wf.status) {
    notAltered = false;
    reasons.push({
      check: 'notAltered',
      code: 'head_mismatch',
      detail: 'The workflow status differs from what its stages recompute to.',
    });
  }
  const out: Verification = {
    proofId,
    existed: verdict.existed,
    completed: verdict.completed,
    approvalsMet: verdict.approvalsMet,
    sequenceRespected: verdict.sequenceRespected,
    notAltered,
    ...(verdict.altered ? { altered: verdict.altered } : {}),
    reasons,
    template: template.name,
    status: wf.status,
    chain: { genesis, head, length },
    stages,
    packageStatus: wf.package_status ?? 'none',
    ...(wf.latest ? { latestTreeHead: wf.latest } : {}),
  };
  if (wf.package_status === 'logged' && wf.package_text) {
    const { pkg, verdict: pv } = verifyPackageText(wf.package_text, servicePublicKey().publicKey);
    out.package = pkg;
    out.signatureValid = pv.signatureValid;
    if (pv.inclusionValid !== undefined) out.inclusionValid = pv.inclusionValid;
    if (!pv.notAltered) {
      notAltered = false;
      reasons.push(
        ...pv.reasons.filter(
          (r) => r.check === 'signatureValid' || r.check === 'inclusionValid' || r.check === 'notAltered',
        ),
      );
    } else if (verdict.notAltered && (pkg.chain.head !== head || pkg.chain.length !== length)) {
      // The signed package's trail recomputes to its head, and the rows to theirs: equal heads mean
      // equal trails, so the head is all there is to compare.
      notAltered = false;
      reasons.push({
        check: 'notAltered',
        code: 'package_mismatch',
        detail: 'The stored records differ from the signed package.',
      });
    }
  } else if (wf.status !== 'active') {
    reasons.push({
      check: 'signatureValid',
      code: wf.package_status === 'failed' ? 'package_failed' : 'package_pending',
      detail:
        wf.package_status === 'failed'
          ? 'The proof package could not be built from these records.'
          : 'The proof package is being built and logged.',
    });
  }
  out.notAltered = notAltered;
  if (!notAltered) {
    for (const f of facts) {
      if (out[f] && !reasons.some((r) => r.check === f)) {
        reasons.push({ check: f, code: 'not_verifiable', detail: 'The record failed its integrity checks.' });
      }
      out[f] = false;
    }
    if (!reasons.some((r) => r.check === 'notAltered')) {
      reasons.push({
        check: 'notAltered',
        code: 'integrity_failed',
        detail: 'The signature or log proof does not hold.',
      });
    }
  }
  return out;
}
