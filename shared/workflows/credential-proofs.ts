// Credential query proofs as a stage's evidence. At the gate: the issuer must be one the workflow's
// owner accepts for the schema, valid at the proof's time; the revocation root one the log recorded for
// that issuer, published within the stage's bound; the proof's time recent. Kept with the facts it was
// accepted on (the issuer's and the root's logged statements), they go into the package, where anyone
// checks them offline: the proof against the credential circuit's key, its binding to the stage's entry
// and context, its query against the template's, its issuer and root against the statements, and those
// statements against the log (docs/credentials.md, "In a workflow").
import type { Knex } from 'knex';
import { z } from 'zod';
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import { conflict } from '../platform/errors';
import type { Db } from '../platform/db/knex';
import { entryFor } from '../platform/translog/entry';
import { fromHex, leafHash, toHex, verifyInclusion } from '../platform/translog/merkle';
import { issuerKeyId, schemaId } from '../credentials/format';
import {
  CREDENTIAL_PUBLIC_SIGNALS,
  encodeParameters,
  operatorCode,
  operators,
  parameterCommitment,
  plainParametersSchema,
  plainTermText,
  termField,
} from '../credentials/query';
import type { Operator, PlainParameters } from '../credentials/query';
import {
  ISSUER_STATEMENT_TYPE,
  REVOCATION_ROOT_STATEMENT_TYPE,
  acceptedIssuer,
  loggedRoot,
  newerRootBefore,
} from '../credentials/registry';
import type { IssuerPin, IssuerStatement, RevocationRootStatement } from '../credentials/registry';
import { stageContext } from '../zk/context';
import { verifyGroth16 } from '../zk/groth16';
import { evidenceCommitment } from './chain';
import { policyProofHash } from './policy-gate';
import type { ChainedEntry } from './records';
import type { CredentialRequirement, WorkflowTemplate } from './templates';

type Conn = Db | Knex.Transaction;

export const credentialGateCodes = [
  'credential_issuer_not_accepted',
  'credential_issuer_revoked',
  'credential_time_out_of_bounds',
  'revocation_root_unknown',
  'revocation_root_stale',
  'revocation_root_superseded',
] as const;

/** How far a proof's time may run ahead of the service's clock (a prover's clock skew). */
export const CLOCK_SKEW_SECONDS = 300;

const signalAt = (signals: readonly string[], name: (typeof CREDENTIAL_PUBLIC_SIGNALS)[number]) =>
  signals[CREDENTIAL_PUBLIC_SIGNALS.indexOf(name)]!;

/** The requirement as a package states it: enough to check a proof's query without our catalog. */
export const packagedRequirementSchema = z
  .object({
    what: z.string().min(1).max(200),
    schemaId: z.string().regex(/^\d{1,78}$/),
    schemaName: z.string().min(1).max(64),
    terms: z
      .array(
        z
          .object({
            field: z.string().min(1).max(32),
            fieldIndex: z.number().int().min(0).max(7),
            op: z.enum(operators),
            /** Where the organization published the parameter in plain (committed with salt 0). */
            parameters: plainParametersSchema.optional(),
          })
          .strict(),
      )
      .min(1)
      .max(4),
    maxRevocationAge: z.number().int().positive(),
    maxProofAge: z.number().int().positive(),
  })
  .strict();
export type PackagedRequirement = z.infer<typeof packagedRequirementSchema>;

/** The requirement a proof was accepted on: the template's, with the parameters where they are plain. */
export function packagedRequirement(
  r: CredentialRequirement,
  plain?: Readonly<Record<string, PlainParameters>>,
): PackagedRequirement {
  return {
    what: r.what,
    schemaId: schemaId(r.schema),
    schemaName: r.schema.name,
    terms: r.query.map((t) => ({
      field: t.field,
      fieldIndex: termField(r.schema, t).index,
      op: t.op,
      ...(plain?.[t.field] ? { parameters: plain[t.field] } : {}),
    })),
    maxRevocationAge: r.maxRevocationAge,
    maxProofAge: r.maxProofAge,
  };
}

const decimal = z.string().regex(/^(0|[1-9]\d{0,77})$/);
const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

export const issuerStatementSchema = z
  .object({
    type: z.literal(ISSUER_STATEMENT_TYPE),
    owner: z.string().min(1).max(100),
    keyId: hex64,
    name: z.string().min(1).max(200),
    publicKey: z.tuple([decimal, decimal]),
    schemas: z.array(decimal).max(32),
    validFrom: z.iso.datetime(),
    validUntil: z.iso.datetime().nullable(),
    revokedFrom: z.iso.datetime().nullable(),
    version: z.number().int().positive(),
    at: z.iso.datetime(),
  })
  .strict();

export const revocationStatementSchema = z
  .object({
    type: z.literal(REVOCATION_ROOT_STATEMENT_TYPE),
    keyId: hex64,
    seq: z.number().int().positive(),
    root: decimal,
    revoked: z.number().int().nonnegative(),
    publishedAt: z.iso.datetime(),
    signature: z.object({ R8: z.tuple([decimal, decimal]), S: decimal }).strict(),
  })
  .strict();

/** The issuer's and the revocation root's logged statements a proof rests on, with where each sits. */
const credentialFactsShape = {
  issuer: z.object({ statement: issuerStatementSchema, leafIndex: z.number().int().nonnegative() }).strict(),
  revocation: z
    .object({
      statement: revocationStatementSchema,
      leafIndex: z.number().int().nonnegative(),
      loggedAt: z.iso.datetime(),
    })
    .strict(),
};
export const credentialFactsSchema = z.object(credentialFactsShape).strict();

/** A credential proof in a package: the proof, the entry it is evidence of, and the facts it rests on. */
export const packagedCredentialProofSchema = z
  .object({
    stage: z.string().min(1).max(64),
    stageIndex: z.number().int().min(0).max(31),
    /** The audit entry whose evidence the proof is, and the salt of that entry's evidence commitment. */
    entrySeq: z.number().int().nonnegative(),
    evidenceSalt: z.string().min(1).max(200),
    proof: z.object({
      pi_a: z.array(decimal).length(3),
      pi_b: z.array(z.array(decimal).length(2)).length(3),
      pi_c: z.array(decimal).length(3),
      protocol: z.literal('groth16').optional(),
      curve: z.literal('bn128').optional(),
    }),
    publicSignals: z.array(decimal).length(CREDENTIAL_PUBLIC_SIGNALS.length),
    requirement: packagedRequirementSchema,
    ...credentialFactsShape,
  })
  .strict();
export type PackagedCredentialProof = z.infer<typeof packagedCredentialProofSchema>;

/** The log inclusion of each credential proof's two statements, at the package's own tree head. */
export const credentialLogSchema = z
  .object({
    treeSize: z.number().int().positive(),
    proofs: z
      .array(z.object({ leafIndex: z.number().int().nonnegative(), path: z.array(hex64).max(64) }).strict())
      .max(256),
  })
  .strict();
export type CredentialLog = z.infer<typeof credentialLogSchema>;

export interface AcceptedCredential {
  requirement: PackagedRequirement;
  issuer: { statement: IssuerStatement; leafIndex: number };
  revocation: { statement: RevocationRootStatement; leafIndex: number; loggedAt: string };
}

/** The statement's entry id in the log (registry.ts logs them under these). */
const issuerEntryId = (s: IssuerStatement) => `${s.owner}:${s.keyId}:${s.version}`;
const rootEntryId = (s: RevocationRootStatement) => `${s.keyId}:${s.seq}`;
export const issuerLeafHash = (s: IssuerStatement) =>
  toHex(leafHash(entryFor('credential_issuer', issuerEntryId(s), s)));
export const rootLeafHash = (s: RevocationRootStatement) =>
  toHex(leafHash(entryFor('revocation_root', rootEntryId(s), s)));

/**
 * What a package's log statements are of, in the envelope's order: each credential proof's facts, then
 * each credentialed approval's.
 */
export const restingFacts = (pkg: {
  credentialProofs?: readonly CredentialFacts[] | undefined;
  approvals?: ReadonlyArray<{ credential?: CredentialFacts | undefined }> | undefined;
}): CredentialFacts[] => [
  ...(pkg.credentialProofs ?? []),
  ...(pkg.approvals ?? []).flatMap((a) => (a.credential ? [a.credential] : [])),
];

/** The log statements a package's credential facts rest on: two each, issuer then root. */
export function credentialStatements(proofs: readonly CredentialFacts[]) {
  return proofs.flatMap((p) => [
    {
      kind: 'credential_issuer' as const,
      id: issuerEntryId(p.issuer.statement),
      sha256: sha256Hex(canonicalJson(p.issuer.statement)),
      what: `the acceptance of issuer ${p.issuer.statement.name} (${p.issuer.statement.keyId.slice(0, 12)}…, version ${p.issuer.statement.version})`,
    },
    {
      kind: 'revocation_root' as const,
      id: rootEntryId(p.revocation.statement),
      sha256: sha256Hex(canonicalJson(p.revocation.statement)),
      what: `revocation root ${p.revocation.statement.seq} of issuer ${p.issuer.statement.name}`,
    },
  ]);
}

/** Whether the issuer key holds at `now` (s): in its validity, before any revocation. */
function issuerHoldsAt(s: IssuerStatement, now: number): boolean {
  const ms = now * 1000;
  return (
    Date.parse(s.validFrom) <= ms &&
    (s.validUntil === null || ms < Date.parse(s.validUntil)) &&
    (s.revokedFrom === null || ms < Date.parse(s.revokedFrom))
  );
}

/** Whether a pinned issuer's key holds at `now` (s): what the pin says of its period, nothing else. */
function pinHoldsAt(p: IssuerPin, now: number): boolean {
  const ms = now * 1000;
  return (
    (p.validFrom === undefined || Date.parse(p.validFrom) <= ms) &&
    (!p.validUntil || ms < Date.parse(p.validUntil)) &&
    (!p.revokedFrom || ms < Date.parse(p.revokedFrom))
  );
}

/**
 * The gate's part that needs the registry: the issuer the owner accepts for the schema, valid at the
 * proof's time; a logged root of that issuer within the bound; the proof's time recent. The generic
 * gate has already checked the schema, subject, fields, operators, parameters and context. Throws 409.
 */
export async function checkCredentialGate(
  db: Conn,
  input: {
    owner: string;
    requirement: CredentialRequirement;
    /** The parameters the workflow published in plain, if it did. */
    plain?: Readonly<Record<string, PlainParameters>> | undefined;
    publicSignals: readonly string[];
    at: Date;
  },
): Promise<AcceptedCredential> {
  const { requirement, publicSignals: signals } = input;
  const facts = await acceptCredentialFacts(db, {
    owner: input.owner,
    schemaName: requirement.schema.name,
    maxProofAge: requirement.maxProofAge,
    maxRevocationAge: requirement.maxRevocationAge,
    signals: {
      issuerAx: signalAt(signals, 'issuerAx'),
      issuerAy: signalAt(signals, 'issuerAy'),
      schemaId: signalAt(signals, 'schemaId'),
      now: signalAt(signals, 'now'),
      revocationRoot: signalAt(signals, 'revocationRoot'),
    },
    at: input.at,
  });
  return { requirement: packagedRequirement(requirement, input.plain), ...facts };
}

/**
 * The issuer and revocation root a credential proof's signals name, as the registry has them: the
 * issuer one the owner accepts for the schema and valid at the proof's time, the root one the log
 * recorded for it, within `maxRevocationAge` of the proof's time and the newest by then, the proof's
 * time within `maxProofAge` of `at`. Throws 409 with one of credentialGateCodes.
 */
export async function acceptCredentialFacts(
  db: Conn,
  input: {
    owner: string;
    schemaName: string;
    maxProofAge: number;
    maxRevocationAge: number;
    signals: { issuerAx: string; issuerAy: string; schemaId: string; now: string; revocationRoot: string };
    at: Date;
    /**
     * The root must be the issuer's newest at `at`, not only at the proof's time: a proof made to be
     * used at once (an approval) cannot pick an earlier time at which a revoked credential still held.
     */
    current?: boolean;
  },
): Promise<CredentialFacts> {
  const { signals } = input;
  const publicKey = [signals.issuerAx, signals.issuerAy] as const;
  const issuer = await acceptedIssuer(db, input.owner, publicKey);
  if (!issuer || !issuer.statement.schemas.includes(signals.schemaId))
    throw conflict(
      'credential_issuer_not_accepted',
      `The credential's issuer (key ${issuerKeyId(publicKey).slice(0, 12)}…) is not one this organization accepts for ${input.schemaName}.`,
    );
  const now = Number(signals.now);
  const at = Math.floor(input.at.getTime() / 1000);
  if (now > at + CLOCK_SKEW_SECONDS || now < at - input.maxProofAge)
    throw conflict(
      'credential_time_out_of_bounds',
      `The proof's time is ${new Date(now * 1000).toISOString()}; this takes proofs made within ${input.maxProofAge} s before now.`,
    );
  if (!issuerHoldsAt(issuer.statement, now))
    throw conflict(
      'credential_issuer_revoked',
      `The issuer's key ${issuer.keyId.slice(0, 12)}… is not accepted at the proof's time (revoked or outside its validity).`,
    );
  const root = await loggedRoot(db, issuer.keyId, signals.revocationRoot);
  if (!root)
    throw conflict(
      'revocation_root_unknown',
      'The proof shows non-revocation against a root the log never recorded for this issuer.',
    );
  if (Date.parse(root.publishedAt) < (now - input.maxRevocationAge) * 1000)
    throw conflict(
      'revocation_root_stale',
      `The revocation root was published ${root.publishedAt}, more than ${input.maxRevocationAge} s before the proof's time; prove again against the issuer's latest root.`,
    );
  // At the proof's time (or now, for `current`) the root must have been the issuer's newest: a nonce
  // revoked by then counts.
  const by = input.current ? Math.max(now, Math.ceil(input.at.getTime() / 1000)) : now;
  if (await newerRootBefore(db, issuer.keyId, root.seq, root.root, by))
    throw conflict(
      'revocation_root_superseded',
      'The issuer had published a newer revocation root by the proof’s time; prove again against it.',
    );
  return {
    issuer: { statement: issuer.statement, leafIndex: issuer.leafIndex },
    revocation: { statement: root.statement, leafIndex: root.leafIndex, loggedAt: root.loggedAt },
  };
}

/** The workflow's credential proofs as its package carries them, each with its entry and salt. */
export async function loadCredentialProofs(
  db: Conn,
  workflowId: string,
  template: WorkflowTemplate,
): Promise<PackagedCredentialProof[]> {
  const rows = (await db('workflow_credential_proofs')
    .where('workflow_id', workflowId)
    .orderBy('created_at')) as Array<{
    stage_idx: number;
    evidence_hash: string;
    proof: PackagedCredentialProof['proof'];
    public_signals: string[];
    facts: AcceptedCredential;
  }>;
  if (rows.length === 0) return [];
  const entries = (await db('audit_entries')
    .where('workflow_id', workflowId)
    .where('evidence_kind', 'blind_policy_proof')
    .select('seq', 'stage', 'evidence_commitment', 'evidence_salt')) as Array<{
    seq: number;
    stage: string;
    evidence_commitment: string;
    evidence_salt: string;
  }>;
  return rows.flatMap((r) => {
    const entry = entries.find(
      (e) => e.evidence_commitment === evidenceCommitment(r.evidence_hash, e.evidence_salt),
    );
    if (!entry) return [];
    return [
      {
        stage: template.stages[r.stage_idx]!.key,
        stageIndex: r.stage_idx,
        entrySeq: entry.seq,
        evidenceSalt: entry.evidence_salt,
        proof: r.proof,
        publicSignals: r.public_signals,
        ...r.facts,
      },
    ];
  });
}

const opWords: Record<Operator, string> = {
  eq: 'equals',
  ne: 'differs from',
  lt: '<',
  lte: '≤',
  gt: '>',
  gte: '≥',
  between: 'lies between two bounds',
  in: 'is one of a set',
  nin: 'is none of a set',
};

/** The parameters a packaged requirement publishes in plain, by field; undefined when none. */
function plainOf(r: PackagedRequirement): Record<string, PlainParameters> | undefined {
  const terms = r.terms.filter((t) => t.parameters);
  return terms.length ? Object.fromEntries(terms.map((t) => [t.field, t.parameters!])) : undefined;
}

/**
 * Whether the parameters published in plain are the ones the proof was made for: each, encoded as its
 * field is and committed with salt 0, must be the proof's public commitment. Without this an
 * organization could print a stricter cut-off beside a proof of a looser one.
 */
async function plainReasons(r: CredentialRequirement, p: PackagedCredentialProof): Promise<string[]> {
  const names = CREDENTIAL_PUBLIC_SIGNALS as readonly string[];
  for (const [i, t] of p.requirement.terms.entries()) {
    if (!t.parameters) return ['a plain requirement publishes every parameter: one is missing'];
    let committed: bigint;
    try {
      committed = await parameterCommitment(encodeParameters(r.schema, t, t.parameters), 0n);
    } catch {
      return [`the plain parameter of ${t.field} is not a value of its field`];
    }
    if (String(committed) !== p.publicSignals[names.indexOf(`parameterCommitments[${i}]`)])
      return [`the plain parameter of ${t.field} is not the one the proof was made for`];
  }
  return [];
}

/** One credential proof's verdict, as the page and the offline check say it. */
export interface CredentialProofVerdict {
  stage: string;
  proven: boolean;
  what: string;
  issuer: { name: string; keyId: string; acceptedSince: string };
  /** The proof's time: the credential was valid and unrevoked then. */
  at: string;
  revocationPublishedAt: string;
  /** The query in words: "score ≥ a value the organization fixed", or where published, "score ≥ 700". */
  terms: string[];
  subject: string;
  reasons: string[];
}

export interface CredentialsVerdict {
  credentials: CredentialProofVerdict[];
  /** Every credential proof proven (true when there are none). */
  allProven: boolean;
}

/** The facts a proof's issuer and revocation root rest on, as a package carries them. */
export interface CredentialFacts {
  issuer: { statement: IssuerStatement; leafIndex: number };
  revocation: { statement: RevocationRootStatement; leafIndex: number; loggedAt: string };
}

/**
 * What is wrong, offline, with the issuer and revocation root a credential proof's signals name: the
 * issuer statement is of that key and accepts the schema, its key held at the proof's time, the root
 * statement is that issuer's root and recent enough, the issuer is in the verifier's own list, and
 * (`log`) both statements are in the log at `at` and `at + 1` of its inclusion proofs. Empty: nothing.
 */
export function credentialFactReasons(input: {
  signals: { issuerAx: string; issuerAy: string; schemaId: string; now: string; revocationRoot: string };
  facts: CredentialFacts;
  maxRevocationAge: number;
  issuers?: readonly IssuerPin[] | undefined;
  log?: { root: string; treeSize: number; proofs: CredentialLog['proofs']; at: number } | undefined;
}): string[] {
  const reasons: string[] = [];
  const { signals: s } = input;
  const { statement: issuer } = input.facts.issuer;
  const { statement: root } = input.facts.revocation;
  if (
    issuerKeyId([s.issuerAx, s.issuerAy]) !== issuer.keyId ||
    issuer.publicKey.join() !== [s.issuerAx, s.issuerAy].join()
  )
    reasons.push('the proof is under another issuer key than the statement’s');
  if (!issuer.schemas.includes(s.schemaId)) reasons.push('the issuer was not accepted for this schema');
  const now = Number(s.now);
  if (!issuerHoldsAt(issuer, now))
    reasons.push('the issuer key was revoked or outside its validity at the proof’s time');
  if (input.issuers) {
    const pin = input.issuers.find(
      (p) => p.keyId === issuer.keyId && (p.acceptedBy === undefined || p.acceptedBy === issuer.owner),
    );
    if (!pin) reasons.push('the issuer is not in your list of issuers for this organization');
    else if (!pinHoldsAt(pin, now))
      reasons.push(
        pin.revokedFrom
          ? `your trust root has the issuer key revoked from ${pin.revokedFrom}, before the proof’s time`
          : 'your trust root has the issuer key outside its validity at the proof’s time',
      );
    const newer = pin?.roots?.find(
      (r) => r.seq > root.seq && r.root !== root.root && Date.parse(r.publishedAt) <= now * 1000,
    );
    if (newer)
      reasons.push(
        `the issuer had published a newer revocation root (${newer.seq}, at ${newer.publishedAt}) by the proof’s time: a credential revoked since root ${root.seq} would pass`,
      );
  }
  if (root.keyId !== issuer.keyId || root.root !== s.revocationRoot)
    reasons.push('the revocation root is not the statement’s');
  if (Date.parse(root.publishedAt) < (now - input.maxRevocationAge) * 1000)
    reasons.push('the revocation root was older than the requirement allows');
  if (input.log) {
    const { log } = input;
    for (const [k, leaf] of [
      [log.at, { index: input.facts.issuer.leafIndex, hash: issuerLeafHash(issuer) }],
      [log.at + 1, { index: input.facts.revocation.leafIndex, hash: rootLeafHash(root) }],
    ] as const) {
      const proof = log.proofs[k];
      const ok =
        proof !== undefined &&
        proof.leafIndex === leaf.index &&
        verifyInclusion(
          fromHex(leaf.hash),
          leaf.index,
          log.treeSize,
          proof.path.map(fromHex),
          fromHex(log.root),
        );
      if (!ok) reasons.push(`the ${k === log.at ? 'issuer' : 'revocation root'} statement is not in the log`);
    }
  }
  return reasons;
}

/**
 * Checks a package's credential proofs offline. `vkey`: the credential circuit's verification key
 * (without it none is proven); `template`: the catalog's, when it knows the package's; `issuers`: a
 * verifier's own list of issuer key ids (absent: the organization's acceptance, as logged, stands).
 * Never throws.
 */
export async function checkCredentialProofs(input: {
  proofId: string;
  trail: readonly ChainedEntry[];
  proofs: readonly PackagedCredentialProof[];
  template: WorkflowTemplate | undefined;
  vkey: unknown;
  log?: { root: string; treeSize: number; proofs: CredentialLog['proofs'] } | undefined;
  issuers?: readonly IssuerPin[] | undefined;
}): Promise<CredentialsVerdict> {
  const credentials: CredentialProofVerdict[] = [];
  for (const [i, p] of input.proofs.entries()) {
    const reasons: string[] = [];
    const s = (name: (typeof CREDENTIAL_PUBLIC_SIGNALS)[number]) => signalAt(p.publicSignals, name);
    const { statement: issuer } = p.issuer;
    const { statement: root } = p.revocation;
    const entry = input.trail.find((e) => e.seq === p.entrySeq);
    const hash = policyProofHash({ policyId: 'credential', proof: p.proof, publicSignals: p.publicSignals });
    if (
      !entry ||
      entry.stage !== p.stage ||
      entry.evidenceKind !== 'blind_policy_proof' ||
      entry.evidenceCommitment !== evidenceCommitment(hash, p.evidenceSalt)
    )
      reasons.push('the proof is not the evidence of the entry it names');
    const spec = input.template?.stages[p.stageIndex];
    if (input.template && (spec?.key !== p.stage || !spec.credential))
      reasons.push(`stage ${p.stage} of ${input.template.name} takes no credential proof`);
    else if (spec?.credential) {
      const published = plainOf(p.requirement);
      if (canonicalJson(packagedRequirement(spec.credential, published)) !== canonicalJson(p.requirement))
        reasons.push('the requirement differs from the template’s');
      else if (published && (spec.credential.parameters ?? 'committed') === 'committed')
        reasons.push('the template keeps this stage’s parameters committed: plain ones are not its');
      else if (published) reasons.push(...(await plainReasons(spec.credential, p)));
    } else if (plainOf(p.requirement))
      reasons.push('plain parameters are checked against the template’s schema, which this verifier lacks');
    if (s('context') !== (await stageContext(input.proofId, p.stageIndex)))
      reasons.push('the proof was made for another workflow or stage (its context differs)');
    if (s('schemaId') !== p.requirement.schemaId) reasons.push('the credential is of another schema');
    for (let t = 0; t < 4; t++) {
      const term = p.requirement.terms[t];
      const [field, op] = [s(`fields[${t}]` as never), s(`ops[${t}]` as never)];
      const want = term ? [String(term.fieldIndex), String(operatorCode(term.op))] : ['0', '0'];
      if (field !== want[0] || op !== want[1]) {
        reasons.push('the query differs from the requirement (a weaker or another query)');
        break;
      }
    }
    const now = Number(s('now'));
    reasons.push(
      ...credentialFactReasons({
        signals: {
          issuerAx: s('issuerAx'),
          issuerAy: s('issuerAy'),
          schemaId: s('schemaId'),
          now: s('now'),
          revocationRoot: s('revocationRoot'),
        },
        facts: p,
        maxRevocationAge: p.requirement.maxRevocationAge,
        issuers: input.issuers,
        log: input.log ? { ...input.log, at: 2 * i } : undefined,
      }),
    );
    let proven = false;
    if (input.vkey) {
      try {
        proven = await verifyGroth16(input.vkey, p.publicSignals, {
          ...p.proof,
          protocol: 'groth16',
          curve: 'bn128',
        });
      } catch {
        proven = false;
      }
      if (!proven) reasons.push('the proof does not verify under the credential circuit’s key');
    } else reasons.push('no verification key for the credential circuit: the proof is not checked');
    credentials.push({
      stage: p.stage,
      proven: proven && reasons.length === 0,
      what: p.requirement.what,
      issuer: { name: issuer.name, keyId: issuer.keyId, acceptedSince: issuer.validFrom },
      at: new Date(now * 1000).toISOString(),
      revocationPublishedAt: root.publishedAt,
      terms: p.requirement.terms.map((t) =>
        t.parameters
          ? plainTermText({ field: t.field, op: t.op, ...t.parameters })
          : `${t.field} ${opWords[t.op]} a value the organization fixed`,
      ),
      subject: s('subject'),
      reasons,
    });
  }
  return { credentials, allProven: credentials.every((c) => c.proven) };
}
