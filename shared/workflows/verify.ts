// Verifying a workflow: stored records recomputed with the offline verifier's checks against the head
// the workflow recorded and its signed, logged package (both remembered by their exact bytes), or a
// pasted package checked offline-style.
import { LRUCache } from 'lru-cache';
import { sha256Hex } from '../platform/crypto';
import type { Db } from '../platform/db/knex';
import { serviceTrust } from '../platform/key-history';
import type { ServiceTrust } from '../platform/key-history';
import type { SignedTreeHead } from '../platform/translog/tree-head';
import type { Reason } from '../proofs/envelope';
import { deepFreeze, verifyUnderServiceTrust } from '../proofs/service-trust';
import { chainHead } from './chain';
import { genesisOf, workflowStatus } from './engine';
import { templateOrThrow } from './load';
import type { Conn, PackageRow } from './load';
import { CREDENTIALED_APPROVAL_CIRCUIT } from './approval-protocol';
import type { ApprovalsVerdict, FixedApprovers, PackagedApproval } from './approval-protocol';
import {
  approvalsOf,
  publicTimeline,
  verifyPackage,
  verifyPackageApprovals,
  verifyPackageCredentials,
  verifyRecords,
} from './package';
import type { CredentialProofVerdict, CredentialsVerdict } from './credential-proofs';
import { CREDENTIAL_CIRCUIT } from '../credentials/query';
import type { PackageVerdict, PublicStage, WorkflowPackage } from './package';
import type { ChainedEntry, StageRecord, WorkflowStatus } from './records';
import type { WorkflowTemplate } from './templates';
import { ANONYMITY_CIRCUIT } from '../zk/anonymity';
import { loadVerificationKey } from '../zk/verify';

export interface Verification extends Partial<ApprovalsVerdict> {
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
  /** The package's credential proofs, each checked offline-style (credential-proofs.ts). */
  credentials?: CredentialProofVerdict[];
}

/** Credential verdicts by the package's exact text: each costs a Groth16 verification per proof. */
const credentialVerdicts = new LRUCache<string, Readonly<CredentialsVerdict>>({ max: 10_000 });

async function packageCredentials(
  pkg: unknown,
  text: string,
  logVerified: boolean,
): Promise<CredentialsVerdict> {
  const key = sha256Hex(`${logVerified}\n${text}`);
  const known = credentialVerdicts.get(key);
  if (known) return known;
  const verdict = await verifyPackageCredentials(pkg, await loadVerificationKey(CREDENTIAL_CIRCUIT), {
    logVerified,
  });
  credentialVerdicts.set(key, deepFreeze(verdict));
  return verdict;
}

const facts = ['existed', 'completed', 'approvalsMet', 'sequenceRespected'] as const;

/** Verifies a pasted package offline-style: exactly the offline verifier with this service's trust root. */
export async function verifyGivenPackage(db: Db, pkg: unknown): Promise<Verification> {
  const v = await verifyUnderServiceTrust(db, pkg, (trust, opts) => verifyPackage(pkg, trust, opts));
  const parsed = pkg as Partial<WorkflowPackage> | null;
  const approvals = v.notAltered
    ? await verifyPackageApprovals(pkg, await loadVerificationKey(ANONYMITY_CIRCUIT), {
        credentialKey: await loadVerificationKey(CREDENTIALED_APPROVAL_CIRCUIT),
        logVerified: v.inclusionValid === true,
      })
    : { approvals: 'none' as const, approvalStages: [], approvalReasons: [], approverSets: [] };
  const credentials =
    v.notAltered && Array.isArray(parsed?.credentialProofs)
      ? (await packageCredentials(pkg, JSON.stringify(pkg), v.inclusionValid === true)).credentials
      : [];
  return {
    proofId: typeof parsed?.proofId === 'string' && v.notAltered ? parsed.proofId : null,
    ...v,
    ...approvals,
    ...(credentials.length ? { credentials } : {}),
  };
}

interface VerifiableRow {
  id: string;
  template: string;
  template_version: number;
  status: WorkflowStatus;
  chain_head: string;
  entry_count: number;
  /** JSON arrays as text: their exact bytes key the memo of what they recompute to. */
  stages: string;
  entries: string;
  /** The proofs kept beside the approve entries, as JSON text in PackagedApproval's shape. */
  approvals: string;
  /** The approver sets fixed at prepare, as JSON text in FixedApprovers' shape, or null. */
  approvers: string | null;
  package_status: PackageRow['status'] | null;
  package_text: string | null;
  /** When the log first included the package: the first tree head past its leaf. */
  logged_at: string | null;
  latest: SignedTreeHead | null;
}

/**
 * Everything verify reads, in one statement (one snapshot): the workflow row with its stored head, the
 * stage rows, the trail in chain order, the approvals' proofs (as loadApprovals reads them), the
 * package, and the latest signed tree head.
 */
async function loadVerifiable(db: Conn, proofId: string): Promise<VerifiableRow | undefined> {
  const { rows } = (await db
    .raw(
      `select w.id, w.template, w.template_version, w.status, w.chain_head, w.entry_count,
       (select coalesce(json_agg(json_build_object('stage', s.stage, 'status', s.status,
          'actorCommitment', s.actor_commitment, 'timestamp', s.timestamp, 'proofHash', s.proof_hash)
          order by s.idx), '[]'::json)::text
        from workflow_stages s where s.workflow_id = w.id) as stages,
       (select coalesce(json_agg(json_strip_nulls(json_build_object('seq', e.seq, 'stage', e.stage,
          'action', e.action, 'actorCommitment', e.actor_commitment,
          'evidenceCommitment', e.evidence_commitment, 'evidenceKind', e.evidence_kind, 'at', e.at,
          'prevHash', e.prev_hash, 'entryHash', e.entry_hash)) order by e.seq), '[]'::json)::text
        from audit_entries e where e.workflow_id = w.id) as entries,
       (select coalesce(json_agg(jsonb_build_object('stage', a.stage, 'seq', a.seq, 'setId', a.set_id,
          'rootSeq', a.root_seq, 'rootSize', r.size, 'rootStatement', r.statement_sha256, 'root', a.root,
          'nullifier', a.nullifier, 'proof', a.proof, 'publicSignals', a.public_signals)
          || case when a.credential is null then '{}'::jsonb else jsonb_build_object('credential', a.credential) end
          order by a.seq), '[]'::json)::text
        from workflow_approvals a join approver_set_roots r on r.set_id = a.set_id and r.seq = a.root_seq
        where a.workflow_id = w.id) as approvals,
       (select case when count(*) = 0 then null else json_build_object(
          'fixedAt', to_char(min(f.fixed_at) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'leafIndex', min(f.leaf_index),
          'sets', json_agg(jsonb_build_object('stage', f.stage, 'setId', f.set_id, 'rootSeq', f.root_seq,
            'root', f.root, 'size', f.size, 'rootStatement', f.root_statement)
            || case when f.credential is null then '{}'::jsonb else jsonb_build_object('credential', f.credential) end
            order by f.idx)) end::text
        from workflow_approver_sets f where f.workflow_id = w.id) as approvers,
       p.status as package_status, p.package::text as package_text,
       (select h.timestamp from tree_heads h where h.tree_size > p.leaf_index order by h.tree_size limit 1)
         as logged_at,
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

/**
 * Stored packages, parsed, with their verdicts, by the hash of their bytes: a package row is written
 * once, when logged, and the same bytes always parse and verify the same.
 */
const packageVerdicts = new LRUCache<string, { pkg: WorkflowPackage; verdict: PackageVerdict }>({
  max: 10_000,
});

/**
 * verifyPackage over a stored package's exact bytes under a version of the key history, remembered (a
 * change to the history is another key). The result is frozen.
 */
function verifyPackageText(
  text: string,
  trust: ServiceTrust,
  loggedAt: string | undefined,
): Readonly<{ pkg: WorkflowPackage; verdict: PackageVerdict }> {
  const key = sha256Hex(`${trust.version}\n${loggedAt ?? ''}\n${text}`);
  let known = packageVerdicts.get(key);
  if (!known) {
    const pkg = JSON.parse(text) as WorkflowPackage;
    known = deepFreeze({ pkg, verdict: verifyPackage(pkg, trust, loggedAt ? { loggedAt } : {}) });
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

/** The hash of a workflow's stage and trail rows as their exact text: the key both memos below use. */
const rowsKey = (template: WorkflowTemplate, proofId: string, wf: VerifiableRow) =>
  sha256Hex(`${template.name}\n${proofId}\n${wf.stages}\n${wf.entries}`);

function verifyRows(
  key: string,
  template: WorkflowTemplate,
  proofId: string,
  stagesText: string,
  entriesText: string,
): Readonly<RowsVerdict> {
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
 * Approvals verdicts by the hash of the exact text they are checked from (the trail, the stages and the
 * proofs): checking one runs a Groth16 verification per approval, and the same bytes always check the
 * same. Frozen.
 */
const approvalVerdicts = new LRUCache<string, Readonly<ApprovalsVerdict>>({ max: 10_000 });

/** The approvals verdict of stored rows: the trail and the proofs kept beside its approve entries. */
async function storedApprovals(
  rows: string,
  template: WorkflowTemplate,
  proofId: string,
  genesis: string,
  wf: VerifiableRow,
): Promise<Readonly<ApprovalsVerdict>> {
  const key = sha256Hex(`${rows}\n${wf.approvals}\n${wf.approvers ?? ''}`);
  const known = approvalVerdicts.get(key);
  if (known) return known;
  const entries = JSON.parse(wf.entries) as ChainedEntry[];
  const stages = recordsFromRows(JSON.parse(wf.stages) as Array<Omit<StageRecord, 'auditTrail'>>, entries);
  const verdict = await approvalsOf({
    template,
    proofId,
    genesis,
    trail: entries,
    stages,
    approvals: JSON.parse(wf.approvals) as PackagedApproval[],
    fixed: wf.approvers === null ? undefined : (JSON.parse(wf.approvers) as FixedApprovers),
    vkey: await loadVerificationKey(ANONYMITY_CIRCUIT),
    credentialKey: await loadVerificationKey(CREDENTIALED_APPROVAL_CIRCUIT),
  });
  approvalVerdicts.set(key, deepFreeze(verdict));
  return verdict;
}

/**
 * Verifies a workflow by proof id: recomputes the chain and stage hashes from the stored records
 * (verifyRecords), and checks the stored package's signature and log inclusion and that it matches.
 */
export async function verifyStored(db: Db, proofId: string): Promise<Verification> {
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
  const rows = rowsKey(template, proofId, wf);
  const { genesis, head, length, verdict, status, stages } = verifyRows(
    rows,
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
  const approvals = notAltered
    ? await storedApprovals(rows, template, proofId, genesis, wf)
    : { approvals: 'none' as const, approvalStages: [], approvalReasons: [], approverSets: [] };
  const out: Verification = {
    ...approvals,
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
    const trust = await serviceTrust(db);
    const { pkg, verdict: pv } = verifyPackageText(wf.package_text, trust, wf.logged_at ?? undefined);
    out.package = pkg;
    out.signatureValid = pv.signatureValid;
    if (pkg.credentialProofs?.length && pv.notAltered)
      out.credentials = (
        await packageCredentials(pkg, wf.package_text, pv.inclusionValid === true)
      ).credentials;
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
  // Proofs in a record that fails its integrity checks prove nothing.
  if (!notAltered && out.approvals === 'proven') out.approvals = 'asserted';
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
