// Workflow proof packages: built from the stage records when a workflow closes, and checked offline
// by anyone holding the service's trust root — the same verifier the verify route and page use.
import { z } from 'zod';
import { canonicalJson } from '../platform/canonical';
import { fromHex, leafHash, rootHash, toHex } from '../platform/translog/merkle';
import type { Signer } from '../platform/crypto';
import type { Trust } from '../platform/trust';
import type { PackageChecker } from '../platform/translog/bundle';
import { checkApprovals, fixedApproversSchema, packagedApprovalSchema } from './approval-protocol';
import type { ApprovalsVerdict, FixedApprovers, PackagedApproval } from './approval-protocol';
import { chainGenesis, verifyChain } from '../proofs/chain';
import { checkRecords, isClosed } from './chain';
import type { Alteration } from './chain';
import { countedApprovers, genesisOf, replay, workflowStatus } from './engine';
import type { WorkflowContext } from './engine';
import { PACKAGE_VERSION, checkEnvelope, envelopeShape, signPackage } from '../proofs/envelope';
import type { Envelope, Reason } from '../proofs/envelope';
import {
  checkCredentialProofs,
  credentialStatements,
  restingFacts,
  packagedCredentialProofSchema,
} from './credential-proofs';
import type { CredentialsVerdict, PackagedCredentialProof } from './credential-proofs';
import { chainedEntrySchema, stageRecordSchema, stageStatuses } from './records';
import type { ChainedEntry, StageRecord } from './records';
import { findTemplate, stageActions, stagePhases, stageRequirements, templateNameSchema } from './templates';
import type { StageTemplate, WorkflowTemplate } from './templates';
import type { IssuerPin } from '../credentials/registry';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

const requirementSchema = z
  .object({
    key: z.string().min(1).max(64),
    name: z.string().min(1).max(100),
    phase: z.enum(stagePhases),
    requiredApprovals: z.number().int().min(0).max(100),
    actions: z.array(z.enum(stageActions)).max(stageActions.length),
    evidenceRequired: z.boolean(),
    requiresBlindPolicyProof: z.boolean(),
  })
  .strict();

const publicStageSchema = z
  .object({
    key: z.string().min(1).max(64),
    name: z.string().min(1).max(100),
    status: z.enum(stageStatuses),
    timestamp: z.iso.datetime().nullable(),
    proofHash: hex64.nullable(),
    actorCommitment: hex64.nullable(),
    /** The commitments whose actions closed the stage (the counted approvers, or the submitter). */
    actorCommitments: z.array(hex64).max(100),
    approvals: z.number().int().min(0),
  })
  .strict();
export type PublicStage = z.infer<typeof publicStageSchema>;

export const workflowFactsSchema = z
  .object({
    existed: z.boolean(),
    completed: z.boolean(),
    approvalsMet: z.boolean(),
    sequenceRespected: z.boolean(),
  })
  .strict();
export type WorkflowFacts = z.infer<typeof workflowFactsSchema>;

/** A workflow proof package as published and as pasted back by a user: hashes and commitments only. */
export const workflowPackageSchema = z
  .object({
    ...envelopeShape,
    kind: z.literal('workflow'),
    subject: z
      .object({ template: templateNameSchema, templateVersion: z.number().int().positive() })
      .strict(),
    requirements: z.array(requirementSchema).min(1).max(32),
    stages: z.array(publicStageSchema).min(1).max(32),
    auditTrail: z.array(chainedEntrySchema).max(10_000),
    chain: z.object({ genesis: hex64, head: hex64, length: z.number().int().min(0) }).strict(),
    stagesRoot: hex64,
    facts: workflowFactsSchema,
    /**
     * The proven approvals (membership proofs of the stages' approver sets), in chain order. Absent in
     * packages of workflows whose approvals were all bare commitments, and in every older package.
     */
    approvals: z.array(packagedApprovalSchema).max(3200).optional(),
    /**
     * The approver sets the workflow fixed when it was prepared (the roots its approvals are against).
     * Absent where no stage had a set at prepare, and in every older package.
     */
    approvers: fixedApproversSchema.optional(),
    /**
     * The credential query proofs the stages took, each with the issuer's and the revocation root's
     * logged statements it was accepted on (their inclusion is in `log.statements`, two per proof, in
     * order). Absent where none was taken, and in every older package.
     */
    credentialProofs: z.array(packagedCredentialProofSchema).max(32).optional(),
  })
  .strict();
export type WorkflowPackage = z.infer<typeof workflowPackageSchema> & Envelope;

export interface Verdict extends WorkflowFacts {
  notAltered: boolean;
  reasons: Reason[];
}

export interface PackageVerdict extends Verdict {
  signatureValid: boolean;
  inclusionValid?: boolean;
}

export interface RecordsVerdict extends Verdict {
  /** The first altered entry or stage, when the records do not recompute. */
  altered?: Alteration;
}

/** The commitments that closed a stage: its counted approvers, or whoever submitted or finalized it. */
function closingActors(spec: StageTemplate, record: StageRecord): string[] {
  if (record.status !== 'completed') return [];
  if (spec.requiredApprovals > 0) return countedApprovers(record.auditTrail);
  return record.actorCommitment ? [record.actorCommitment] : [];
}

/** The Merkle root (RFC 6962) over the proof hashes of the closed stages, in order. */
export function stagesRoot(stageHashes: readonly string[]): string {
  return toHex(
    rootHash(
      stageHashes.map((h) => leafHash(fromHex(h))),
      stageHashes.length,
    ),
  );
}

function factsOf(
  template: WorkflowTemplate,
  stages: readonly StageRecord[],
  sequenceRespected: boolean,
): WorkflowFacts {
  const existed = stages.some((s) => s.auditTrail.length > 0);
  const completed = workflowStatus(stages) === 'completed';
  const approvalsMet =
    completed &&
    template.stages.every(
      (spec, i) => countedApprovers((stages[i] as StageRecord).auditTrail).length >= spec.requiredApprovals,
    );
  return { existed, completed, approvalsMet, sequenceRespected: existed && sequenceRespected };
}

/** The public timeline of a workflow (also for one still running): per stage status, time, proof hash, actors. */
export function publicTimeline(template: WorkflowTemplate, stages: readonly StageRecord[]): PublicStage[] {
  return template.stages.map((spec, i) => {
    const r = stages[i] as StageRecord;
    return {
      key: spec.key,
      name: spec.name,
      status: r.status,
      timestamp: r.timestamp,
      proofHash: r.proofHash,
      actorCommitment: r.actorCommitment,
      actorCommitments: closingActors(spec, r),
      approvals: countedApprovers(r.auditTrail).length,
    };
  });
}

export interface BuildPackageInput {
  template: WorkflowTemplate;
  proofId: string;
  stages: readonly StageRecord[];
  issuedAt: Date | string;
  /** The workflow's proven approvals, as the service checked and kept them. */
  approvals?: readonly PackagedApproval[];
  /** The approver sets fixed at prepare. */
  approvers?: FixedApprovers | undefined;
  /** The credential proofs the stages took, with their facts. */
  credentialProofs?: readonly PackagedCredentialProof[];
}

/**
 * Builds and signs the proof package of a closed workflow. Refuses records that do not recompute or
 * do not follow the rules: the service never signs a record it could not defend.
 */
export function buildWorkflowPackage(input: BuildPackageInput, key: Signer): WorkflowPackage {
  const { template, proofId } = input;
  const ctx: WorkflowContext = { template, proofId };
  const genesis = genesisOf(ctx);
  const records = checkRecords(
    genesis,
    template.stages.map((s) => s.key),
    input.stages,
  );
  if (!records.ok) throw new Error(`workflow records do not recompute: ${records.altered.detail}`);
  if (workflowStatus(input.stages) === 'active')
    throw new Error('a proof package is built once the workflow is closed');
  const trail = input.stages.flatMap((s) => s.auditTrail).sort((a, b) => a.seq - b.seq);
  const replayed = replay(ctx, trail);
  if (!replayed.ok) throw new Error(`workflow records break rule ${replayed.code} at entry ${replayed.seq}`);

  const body: Omit<WorkflowPackage, 'issuer' | 'signature' | 'log'> = {
    version: PACKAGE_VERSION,
    kind: 'workflow' as const,
    proofId,
    issuedAt: typeof input.issuedAt === 'string' ? input.issuedAt : input.issuedAt.toISOString(),
    subject: { template: template.name, templateVersion: template.version },
    requirements: stageRequirements(template),
    stages: publicTimeline(template, replayed.stages),
    auditTrail: trail,
    chain: { genesis, head: records.head, length: records.length },
    stagesRoot: stagesRoot(records.stageHashes),
    facts: factsOf(template, replayed.stages, true),
    ...(input.approvals?.length ? { approvals: [...input.approvals] } : {}),
    ...(input.approvers ? { approvers: input.approvers } : {}),
    ...(input.credentialProofs?.length ? { credentialProofs: [...input.credentialProofs] } : {}),
  };
  return signPackage<WorkflowPackage>(body, key);
}

/** The template a package's requirements describe (the catalog's own when they agree). */
function templateFromRequirements(pkg: z.infer<typeof workflowPackageSchema>): WorkflowTemplate {
  return {
    key: pkg.subject.template,
    name: pkg.subject.template,
    version: pkg.subject.templateVersion,
    description: '',
    stages: pkg.requirements.map((r) => ({
      key: r.key,
      name: r.name,
      phase: r.phase,
      requiredApprovals: r.requiredApprovals,
      actions: r.actions,
      evidenceRequired: r.evidenceRequired,
      ...(r.requiresBlindPolicyProof ? { requiresBlindPolicyProof: true } : {}),
    })),
  };
}

function failedVerdict(reason: Reason): PackageVerdict {
  const detail = 'The input is not a workflow proof package, so nothing can be confirmed.';
  const checks = [
    'notAltered',
    'signatureValid',
    'existed',
    'completed',
    'approvalsMet',
    'sequenceRespected',
  ] as const;
  return {
    existed: false,
    completed: false,
    approvalsMet: false,
    sequenceRespected: false,
    notAltered: false,
    signatureValid: false,
    reasons: [reason, ...checks.map((check) => ({ check, code: 'not_verifiable', detail }))],
  };
}

/** Names the first problem without echoing the input back (a pasted package may hold anything). */
function malformedDetail(issue: z.core.$ZodIssue | undefined): string {
  if (!issue) return 'Not a proof package.';
  return `${issue.path.join('.') || 'package'}: ${issue.message}`;
}

/** Fills in a reason for each false fact that has none of its own, pointing at the integrity failure. */
function explain(verdict: Verdict, integrity: string): void {
  const named = new Set(verdict.reasons.map((r) => r.check));
  const facts = ['existed', 'completed', 'approvalsMet', 'sequenceRespected'] as const;
  for (const check of facts) {
    if (!verdict[check] && !named.has(check)) {
      verdict.reasons.push(
        verdict.notAltered
          ? { check, code: `not_${check}`, detail: factDetail[check] }
          : { check, code: 'not_verifiable', detail: integrity },
      );
    }
  }
}

const factDetail = {
  existed: 'The record has no entries.',
  completed: 'Not every stage of the workflow completed.',
  approvalsMet: 'Not every stage received its required approvals.',
  sequenceRespected: 'The events did not follow the required sequence.',
} as const;

/**
 * Verifies a proof package offline: signature, log inclusion (when present), the hash chain, every
 * stage hash and the stage root, and the rules replayed over the trail. The signature and tree head are
 * checked under the keys a trust root lists for their time (or a bare public key); `loggedAt`, when the
 * log is known to have recorded the package, is what holds it against a key revoked since. Never throws.
 */
export function verifyPackage(
  input: unknown,
  trust: Trust,
  opts: { loggedAt?: string } = {},
): PackageVerdict {
  const parsed = workflowPackageSchema.safeParse(input);
  if (!parsed.success) {
    const kind = (input as { kind?: unknown } | null)?.kind;
    const known =
      typeof kind === 'string' &&
      kind !== 'workflow' &&
      (envelopeShape.kind.options as string[]).includes(kind);
    return failedVerdict(
      known
        ? {
            check: 'format',
            code: 'unsupported_kind',
            detail: `This verifier checks workflow packages, not ${kind}.`,
          }
        : { check: 'format', code: 'malformed', detail: malformedDetail(parsed.error.issues[0]) },
    );
  }
  const pkg = parsed.data as WorkflowPackage;
  const envelope = checkEnvelope(pkg, trust, opts);
  const reasons: Reason[] = [...envelope.reasons];
  const altered = (code: string, detail: string, stage?: string) =>
    reasons.push({ check: 'notAltered', code, detail, ...(stage ? { stage } : {}) });

  const catalog = findTemplate(pkg.subject.template);
  let template = templateFromRequirements(pkg);
  if (catalog && catalog.version === pkg.subject.templateVersion) {
    if (canonicalJson(stageRequirements(catalog)) !== canonicalJson(pkg.requirements)) {
      altered('requirements_mismatch', `The stages and approvals differ from the ${catalog.name} template.`);
    }
    template = catalog;
  }
  const ctx: WorkflowContext = { template, proofId: pkg.proofId };
  const genesis = chainGenesis({ kind: 'workflow', subjectId: pkg.proofId, label: pkg.subject.template });
  if (pkg.chain.genesis !== genesis)
    altered('genesis_mismatch', 'The chain does not start from this proof id.');
  const chain = verifyChain(genesis, pkg.auditTrail);
  if (!chain.ok) {
    altered(chain.code, chain.detail, pkg.auditTrail[chain.index]?.stage);
  } else if (chain.head !== pkg.chain.head || chain.length !== pkg.chain.length) {
    altered('chain_head_mismatch', 'The chain head or length differs from the entries.');
  }

  const replayed = replay(ctx, pkg.auditTrail, { linksVerified: chain.ok });
  let sequenceRespected = replayed.ok;
  if (!replayed.ok) {
    if (replayed.code === 'entry_hash_mismatch') {
      if (chain.ok) altered(replayed.code, replayed.detail, replayed.stage);
      sequenceRespected = false;
    } else {
      reasons.push({
        check: 'sequenceRespected',
        code: replayed.code,
        detail: replayed.detail,
        stage: replayed.stage,
      });
    }
  }
  const stages = replayed.stages;
  const expectedStages = publicTimeline(template, stages);
  if (replayed.ok) {
    for (const [i, expected] of expectedStages.entries()) {
      const stated = pkg.stages[i];
      if (!stated || canonicalJson(stated) !== canonicalJson(expected)) {
        altered(
          'stage_mismatch',
          `Stage ${expected.key} differs from what its entries recompute to.`,
          expected.key,
        );
        break;
      }
    }
    if (pkg.stages.length !== expectedStages.length)
      altered('stage_mismatch', 'The package lists other stages.');
    const hashes = stages.filter((s) => isClosed(s.status)).map((s) => s.proofHash as string);
    if (stagesRoot(hashes) !== pkg.stagesRoot)
      altered('stages_root_mismatch', 'The stage root differs from the stage hashes.');
  }
  const facts = factsOf(template, stages, sequenceRespected);
  if (canonicalJson(facts) !== canonicalJson(pkg.facts)) {
    altered('facts_mismatch', 'The stated facts differ from what the record shows.');
  }

  const integrityOk = envelope.signatureValid && envelope.inclusionValid !== false;
  const notAltered = integrityOk && !reasons.some((r) => r.check === 'notAltered');
  if (!notAltered && !reasons.some((r) => r.check === 'notAltered')) {
    altered('integrity_failed', 'The signature or log proof does not hold.');
  }
  const verdict: PackageVerdict = {
    existed: notAltered && facts.existed,
    completed: notAltered && facts.completed,
    approvalsMet: notAltered && facts.approvalsMet,
    sequenceRespected: notAltered && facts.sequenceRespected,
    notAltered,
    signatureValid: envelope.signatureValid,
    ...(envelope.inclusionValid === undefined ? {} : { inclusionValid: envelope.inclusionValid }),
    reasons,
  };
  explain(verdict, 'The package failed its integrity checks, so nothing in it can be confirmed.');
  return verdict;
}

const stageRecordsSchema = z.array(stageRecordSchema);

/**
 * Re-checks stored records (rows read back by the verify route): the chain, every stage hash, and the
 * rules replayed. Reports the first altered entry or stage. Never throws on bad rows.
 */
export function verifyRecords(input: {
  template: WorkflowTemplate;
  proofId: string;
  records: unknown;
}): RecordsVerdict {
  const { template, proofId } = input;
  const parsed = stageRecordsSchema.safeParse(input.records);
  if (!parsed.success) {
    const verdict: RecordsVerdict = {
      existed: false,
      completed: false,
      approvalsMet: false,
      sequenceRespected: false,
      notAltered: false,
      reasons: [
        { check: 'format', code: 'malformed', detail: 'The stored records are not stage records.' },
        { check: 'notAltered', code: 'not_verifiable', detail: 'The stored records cannot be read.' },
      ],
    };
    explain(verdict, 'The stored records cannot be read.');
    return verdict;
  }
  const records = parsed.data;
  const ctx: WorkflowContext = { template, proofId };
  const reasons: Reason[] = [];
  let altered: Alteration | undefined;
  const check = checkRecords(
    genesisOf(ctx),
    template.stages.map((s) => s.key),
    records,
  );
  if (!check.ok) altered = check.altered;

  const trail = records.flatMap((r) => r.auditTrail).sort((a, b) => a.seq - b.seq);
  // checkRecords recomputed every entry hash from the genesis; the replay need not hash them again.
  const replayed = replay(ctx, trail, { linksVerified: check.ok });
  if (!altered && !replayed.ok && replayed.code !== 'entry_hash_mismatch') {
    reasons.push({
      check: 'sequenceRespected',
      code: replayed.code,
      detail: replayed.detail,
      stage: replayed.stage,
    });
  }
  if (!altered && replayed.ok) {
    // The stored status, actor and time of every stage must be what its entries make them.
    for (const [i, expected] of replayed.stages.entries()) {
      const stored = records[i] as StageRecord;
      const fields = ['status', 'actorCommitment', 'timestamp', 'proofHash'] as const;
      const field = fields.find((f) => stored[f] !== expected[f]);
      if (field) {
        altered = {
          stage: stored.stage,
          code: 'stage_hash_mismatch',
          detail: `stage ${stored.stage} has an altered ${field}`,
        };
        break;
      }
    }
  }
  if (altered)
    reasons.push({ check: 'notAltered', code: altered.code, detail: altered.detail, stage: altered.stage });
  const notAltered = !altered;
  const facts = factsOf(template, replayed.stages, replayed.ok);
  const verdict: RecordsVerdict = {
    existed: notAltered && facts.existed,
    completed: notAltered && facts.completed,
    approvalsMet: notAltered && facts.approvalsMet,
    sequenceRespected: notAltered && facts.sequenceRespected,
    notAltered,
    ...(altered ? { altered } : {}),
    reasons,
  };
  explain(verdict, 'The stored record was altered, so nothing in it can be confirmed.');
  return verdict;
}

/**
 * Checks a package's approvals: which counted approvals are backed by valid membership proofs bound to
 * this workflow, stage and content (approval-protocol.ts). `vkey`: the ballot circuit's verification key
 * (without it no proof counts, and approvals are at most asserted). A package that does not parse has
 * approvals 'none'. Never throws.
 */
export async function verifyPackageApprovals(
  input: unknown,
  vkey: unknown,
  opts: { credentialKey?: unknown; logVerified?: boolean; issuers?: readonly IssuerPin[] | undefined } = {},
): Promise<ApprovalsVerdict> {
  const parsed = workflowPackageSchema.safeParse(input);
  if (!parsed.success)
    return { approvals: 'none', approvalStages: [], approvalReasons: [], approverSets: [] };
  const pkg = parsed.data;
  const catalog = findTemplate(pkg.subject.template);
  const template =
    catalog && catalog.version === pkg.subject.templateVersion ? catalog : templateFromRequirements(pkg);
  const genesis = chainGenesis({ kind: 'workflow', subjectId: pkg.proofId, label: pkg.subject.template });
  const replayed = replay({ template, proofId: pkg.proofId }, pkg.auditTrail);
  return approvalsOf({
    template,
    proofId: pkg.proofId,
    genesis,
    trail: pkg.auditTrail,
    stages: replayed.stages,
    approvals: pkg.approvals ?? [],
    fixed: pkg.approvers,
    vkey,
    credentialKey: opts.credentialKey,
    // The credentialed approvals' statements follow the credential proofs' in the envelope's list.
    log:
      pkg.log && opts.logVerified
        ? {
            root: pkg.log.treeHead.rootHash,
            treeSize: pkg.log.treeHead.treeSize,
            proofs: pkg.log.statements ?? [],
            at: 2 * (pkg.credentialProofs?.length ?? 0),
          }
        : undefined,
    issuers: opts.issuers,
  });
}

/**
 * Checks a package's credential proofs (credential-proofs.ts): `vkey` the credential circuit's key,
 * `issuers` a verifier's own list of issuer key ids. The statements' log inclusion counts only under a
 * tree head the envelope check accepted (`logVerified`). A package that does not parse has none.
 */
export async function verifyPackageCredentials(
  input: unknown,
  vkey: unknown,
  opts: { logVerified?: boolean; issuers?: readonly IssuerPin[] | undefined } = {},
): Promise<CredentialsVerdict> {
  const parsed = workflowPackageSchema.safeParse(input);
  if (!parsed.success || !parsed.data.credentialProofs?.length) return { credentials: [], allProven: true };
  const pkg = parsed.data;
  const catalog = findTemplate(pkg.subject.template);
  const log = pkg.log;
  return checkCredentialProofs({
    proofId: pkg.proofId,
    trail: pkg.auditTrail,
    proofs: pkg.credentialProofs ?? [],
    template: catalog && catalog.version === pkg.subject.templateVersion ? catalog : undefined,
    vkey,
    log:
      log && opts.logVerified
        ? { root: log.treeHead.rootHash, treeSize: log.treeHead.treeSize, proofs: log.statements ?? [] }
        : undefined,
    issuers: opts.issuers,
  });
}

/** The approvals verdict of stage records and the proofs kept for them (a package's or the rows'). */
export function approvalsOf(input: {
  template: WorkflowTemplate;
  proofId: string;
  genesis: string;
  trail: readonly ChainedEntry[];
  stages: readonly StageRecord[];
  approvals: readonly PackagedApproval[];
  fixed: FixedApprovers | undefined;
  vkey: unknown;
  credentialKey?: unknown;
  log?: Parameters<typeof checkApprovals>[0]['log'];
  issuers?: readonly IssuerPin[] | undefined;
}): Promise<ApprovalsVerdict> {
  return checkApprovals({
    proofId: input.proofId,
    template: input.template.name,
    genesis: input.genesis,
    fixed: input.fixed,
    trail: input.trail,
    stages: input.template.stages.map((spec, i) => {
      const r = input.stages[i];
      return {
        key: spec.key,
        requiredApprovals: spec.requiredApprovals,
        completed: r?.status === 'completed',
        counted: r ? countedApprovers(r.auditTrail) : [],
      };
    }),
    approvals: input.approvals,
    vkey: input.vkey,
    credentialKey: input.credentialKey,
    log: input.log,
    issuers: input.issuers,
  });
}

const yn = (b: boolean) => (b ? 'yes' : 'no');

const approvalsText = { proven: 'proven', asserted: 'asserted, not proven', none: 'none' } as const;

/** The credential proofs, as the offline summary says them. */
const credentialsText = (c: CredentialsVerdict): string =>
  c.credentials
    .map(
      (cr) =>
        `; stage ${cr.stage}: ${cr.what} signed by ${cr.issuer.name} (key ${cr.issuer.keyId.slice(0, 12)}…) shows ${cr.terms.join(', ')}; not revoked as of ${cr.revocationPublishedAt}, not expired at ${cr.at}: ${cr.proven ? 'proven' : 'NOT proven'}`,
    )
    .join('');

/** The approver sets fixed at prepare, as the offline summary says them. */
const fixedText = (a: ApprovalsVerdict): string =>
  a.approverSets.length === 0
    ? ''
    : `; approver sets fixed at prepare (${a.approverSets[0]!.fixedAt}): ${a.approverSets
        .map(
          (s) =>
            `${s.stage} ${s.size} member${s.size === 1 ? '' : 's'}${
              s.credential
                ? `, each holding ${s.credential.what} showing ${s.credential.query}${s.credential.issuers.length ? ` (from ${s.credential.issuers.join(', ')})` : ''}`
                : ''
            }`,
        )
        .join(', ')}`;

/**
 * The workflow verifier as a bundle's package check, with the ballot circuit's verification key for
 * the approvals' membership proofs.
 */
export const workflowPackageChecker =
  (
    vkey: () => Promise<unknown>,
    credentialKey: () => Promise<unknown> = async () => undefined,
    issuers?: readonly IssuerPin[],
    approvalKey: () => Promise<unknown> = async () => undefined,
  ): PackageChecker =>
  async (pkg, keys) => {
    const v = verifyPackage(pkg, keys);
    const parsed = workflowPackageSchema.safeParse(pkg);
    const proofs = parsed.success ? (parsed.data.credentialProofs ?? []) : [];
    const facts = parsed.success ? restingFacts(parsed.data) : [];
    // The statements' log inclusion is the bundle's to prove (PackageFinding.statements).
    const a = await verifyPackageApprovals(pkg, await vkey(), {
      credentialKey: parsed.success && facts.length > proofs.length ? await approvalKey() : undefined,
      issuers,
    });
    const c = proofs.length
      ? await verifyPackageCredentials(pkg, await credentialKey(), { issuers })
      : { credentials: [], allProven: true };
    const template = (pkg as { subject?: { template?: unknown } } | null)?.subject?.template;
    return {
      valid: v.signatureValid && v.notAltered && c.allProven,
      summary: `workflow ${typeof template === 'string' ? template : ''}: existed ${yn(v.existed)}, completed ${yn(v.completed)}, required approvals ${a.approvals === 'asserted' ? 'recorded' : 'met'} ${yn(v.approvalsMet)}, approvals ${approvalsText[a.approvals]}, sequence respected ${yn(v.sequenceRespected)}, not altered ${yn(v.notAltered)}${fixedText(a)}${credentialsText(c)}`,
      reasons: [
        ...v.reasons
          .filter((r) => !r.code.startsWith('not_'))
          .map((r) => `${r.check}: ${r.code}${r.stage ? ` (stage ${r.stage})` : ''}: ${r.detail}`),
        ...c.credentials.flatMap((cr) => cr.reasons.map((r) => `credential (stage ${cr.stage}): ${r}`)),
      ],
      ...(facts.length ? { statements: credentialStatements(facts) } : {}),
      restsOnProofs: a.approvalStages.some((stage) => stage.proven > 0) || c.credentials.length > 0,
      warnings:
        a.approvals === 'asserted'
          ? [
              'approvals are asserted, not proven: the package records who approved, with no membership proof; they rest on the service’s word',
            ]
          : [],
    };
  };

/** The workflow verifier as a bundle's package check (shared/platform/translog/bundle.ts). */
export const checkWorkflowPackage: PackageChecker = async (pkg, keys) => {
  const v = verifyPackage(pkg, keys);
  const template = (pkg as { subject?: { template?: unknown } } | null)?.subject?.template;
  return {
    valid: v.signatureValid && v.notAltered,
    summary: `workflow ${typeof template === 'string' ? template : ''}: existed ${yn(v.existed)}, completed ${yn(v.completed)}, required approvals met ${yn(v.approvalsMet)}, sequence respected ${yn(v.sequenceRespected)}, not altered ${yn(v.notAltered)}`,
    reasons: v.reasons
      .filter((r) => !r.code.startsWith('not_'))
      .map((r) => `${r.check}: ${r.code}${r.stage ? ` (stage ${r.stage})` : ''}: ${r.detail}`),
  };
};
