// Anonymous approvals as approver, service and offline verifier all compute them. An approval is a
// membership proof (the ballot circuit, shared/zk/anonymity.ts) that its author holds one identity of
// the stage's approver set, whose public signals are [root, nullifier, scope, message]:
//   scope   = a field element of (workflow proof id, stage key): one nullifier per approver and stage,
//             and a proof made for one stage or workflow is not one for another;
//   message = a field element of the stage's content hash: the chain entry the approval approves (the
//             last entry before it that is not an approval of the same stage, or the chain's genesis),
//             so a proof is bound to what the approver saw, evidence and earlier stages included.
// The approval's audit entry carries the nullifier (64 hex) as its actor commitment: the engine counts
// distinct nullifiers as it counted distinct commitments, and learns nothing of who. Pure: no
// configuration, no database.
import { z } from 'zod';
import { credentialSchemaSchema, schemaId } from '../credentials/format';
import type { CredentialSchema } from '../credentials/format';
import { commitQuery, operators, plainTermText } from '../credentials/query';
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import {
  CREDENTIALED_APPROVAL_CIRCUIT,
  fieldHash,
  isFieldElement,
  membershipSignals,
  verifyMembershipProof,
} from '../zk/anonymity';
import { verifyGroth16 } from '../zk/groth16';
import type { Groth16ProofJson } from '../zk/anonymity';
import { credentialFactReasons, credentialFactsSchema } from './credential-proofs';
import type { CredentialLog } from './credential-proofs';
import type { ChainedEntry } from './records';
import type { IssuerPin } from '../credentials/registry';

/** The stage of a workflow as the circuit's scope. */
export const approvalScope = (proofId: string, stage: string): bigint =>
  fieldHash(`proof-exchange/workflows/approval-scope/v1\n${proofId}\n${stage}`);

/** The content hash (64 hex) as the field element a proof is bound to. */
export const approvalMessage = (contentHash: string): bigint =>
  fieldHash(`proof-exchange/workflows/approval-content/v1\n${contentHash}`);

/** The actor commitment of a proven approval's entry: the nullifier as 64 hex characters. */
export const approvalActor = (nullifier: string): string => BigInt(nullifier).toString(16).padStart(64, '0');

/**
 * What an approval at chain position `seq` of `stage` approves: the hash of the last entry before it
 * that is not itself an approval of that stage, or the genesis when there is none. Approvers of one
 * round see the same content; attaching evidence (or a change request) moves it.
 */
export function approvalContentHash(
  genesis: string,
  trail: readonly Pick<ChainedEntry, 'seq' | 'stage' | 'action' | 'entryHash'>[],
  stage: string,
  seq: number,
): string {
  let content = genesis;
  for (const e of trail) {
    if (e.seq >= seq) break;
    if (!(e.action === 'approve' && e.stage === stage)) content = e.entryHash;
  }
  return content;
}

// --- Credentialed approvals

/**
 * A set whose approvers must each hold a credential proves approvals with circuits/approval.circom:
 * the membership above, and in the same proof a credential from an issuer the owner accepts, about
 * the approver's own identity commitment, meeting the set's query (docs/credentials.md,
 * "Credentialed approvers").
 */
export { CREDENTIALED_APPROVAL_CIRCUIT };
/** Terms a credentialed approval's query has (unused ones are `none`). */
export const APPROVER_TERMS = 2;
export const CREDENTIALED_APPROVAL_PUBLIC_SIGNALS = [
  'root',
  'nullifier',
  'scope',
  'message',
  'issuerAx',
  'issuerAy',
  'schemaId',
  'now',
  'revocationRoot',
  ...Array.from({ length: APPROVER_TERMS }, (_, i) => `fields[${i}]`),
  ...Array.from({ length: APPROVER_TERMS }, (_, i) => `ops[${i}]`),
  ...Array.from({ length: APPROVER_TERMS }, (_, i) => `parameterCommitments[${i}]`),
] as const;
export type CredentialedApprovalSignal = (typeof CREDENTIALED_APPROVAL_PUBLIC_SIGNALS)[number];

/** A credentialed approval's signal by name. */
export const approvalSignal = (signals: readonly string[], name: CredentialedApprovalSignal): string =>
  signals[CREDENTIALED_APPROVAL_PUBLIC_SIGNALS.indexOf(name)]!;

/** The issuer, schema, time and revocation root a credentialed approval's signals name. */
export const approvalCredentialSignals = (signals: readonly string[]) => ({
  issuerAx: approvalSignal(signals, 'issuerAx'),
  issuerAy: approvalSignal(signals, 'issuerAy'),
  schemaId: approvalSignal(signals, 'schemaId'),
  now: approvalSignal(signals, 'now'),
  revocationRoot: approvalSignal(signals, 'revocationRoot'),
});

const plainParameter = z.union([z.number(), z.string().min(1).max(200)]);

/**
 * What each approver of a set must hold, in plain: the schema itself, and terms whose parameters are
 * public (salt 0: "role = underwriter" is meant to be read). Logged in the set's root statement, so it
 * is fixed with the set at prepare.
 */
export const approverCredentialSchema = z
  .object({
    what: z.string().min(1).max(200),
    schema: credentialSchemaSchema,
    terms: z
      .array(
        z
          .object({
            field: z.string().min(1).max(32),
            op: z.enum(operators),
            value: plainParameter.optional(),
            low: plainParameter.optional(),
            high: plainParameter.optional(),
            values: z.array(plainParameter).min(1).max(4).optional(),
          })
          .strict(),
      )
      .min(1)
      .max(APPROVER_TERMS),
    /** How old (s) the issuer's revocation root may be at the proof's time. */
    maxRevocationAge: z.number().int().positive(),
    /** How old (s) the proof's time may be when the approval is posted. */
    maxProofAge: z.number().int().positive(),
  })
  .strict();
export type ApproverCredential = z.infer<typeof approverCredentialSchema>;

/**
 * The public signals a requirement fixes, by name: schemaId and each term's field, op and
 * parameter commitment (salt 0). Throws 400 where a term does not fit the schema.
 */
export async function approverQuerySignals(req: ApproverCredential): Promise<Record<string, string>> {
  const terms = req.terms.map(({ field, op }) => ({ field, op }));
  const parameters = req.terms.map(({ field: _f, op: _o, ...plain }) => ({ ...plain, salt: '0' }));
  return (await commitQuery(req.schema, terms, parameters, 'credential.terms', APPROVER_TERMS)).signals;
}

/** A requirement's query in words: "role = underwriter". */
export const approverQueryText = (req: ApproverCredential): string =>
  req.terms.map(plainTermText).join(' and ');

export const schemaIdOf = (schema: CredentialSchema): string => schemaId(schema);

/** The statement a set's root is logged as (kind approver_set, id `<setId>:<seq>`). */
export function approverRootStatement(r: {
  setId: string;
  template: string;
  stage: string;
  seq: number;
  root: string;
  size: number;
  credential?: ApproverCredential | null | undefined;
}) {
  return {
    type: 'proof-exchange/approver-set-root/v1',
    setId: r.setId,
    template: r.template,
    stage: r.stage,
    seq: r.seq,
    root: r.root,
    size: r.size,
    // Only a credentialed set says what its approvers hold (older statements keep their hashes).
    ...(r.credential ? { credential: r.credential } : {}),
  };
}

export const approverRootLogId = (setId: string, seq: number): string => `${setId}:${seq}`;

export const approverRootSha256 = (r: Parameters<typeof approverRootStatement>[0]): string =>
  sha256Hex(canonicalJson(approverRootStatement(r)));

const decimal = z.string().regex(/^(0|[1-9]\d{0,76})$/, 'a decimal field element');

/** One stage's approver set as a workflow fixed it at prepare: the root it takes approvals against. */
export const fixedApproverSetSchema = z
  .object({
    stage: z.string().min(1).max(64),
    setId: z.string().min(1).max(64),
    rootSeq: z.number().int().min(0),
    root: decimal,
    size: z.number().int().min(1),
    /** The sha256 of the root's own logged statement (approver_set), recomputable from the fields above. */
    rootStatement: z.string().regex(/^[0-9a-f]{64}$/),
    /** What each approver must hold, where the set requires a credential (in the root statement). */
    credential: approverCredentialSchema.optional(),
  })
  .strict();
export type FixedApproverSet = z.infer<typeof fixedApproverSetSchema>;

/**
 * The approver sets a workflow fixed when it was prepared, as its package carries them: when, each
 * stage's root and size, and where the statement sits in the log (kind workflow_approvers, id the proof
 * id), appended in the prepare transaction, before the workflow's first event.
 */
export const fixedApproversSchema = z
  .object({
    fixedAt: z.iso.datetime(),
    leafIndex: z.number().int().min(0),
    sets: z.array(fixedApproverSetSchema).min(1).max(32),
  })
  .strict();
export type FixedApprovers = z.infer<typeof fixedApproversSchema>;

/** The statement a workflow's fixed approver sets are logged as (kind workflow_approvers, id the proof id). */
export function fixedApproversStatement(input: {
  proofId: string;
  template: string;
  fixedAt: string;
  sets: readonly FixedApproverSet[];
}) {
  return {
    type: 'proof-exchange/workflow-approvers/v1',
    proofId: input.proofId,
    template: input.template,
    fixedAt: input.fixedAt,
    sets: input.sets.map((s) => ({
      stage: s.stage,
      setId: s.setId,
      rootSeq: s.rootSeq,
      root: s.root,
      size: s.size,
      rootStatement: s.rootStatement,
      ...(s.credential ? { credential: s.credential } : {}),
    })),
  };
}

export const approvalProofSchema = z
  .object({
    pi_a: z.array(decimal).length(3),
    pi_b: z.array(z.array(decimal).length(2)).length(3),
    pi_c: z.array(decimal).length(3),
    protocol: z.literal('groth16').optional(),
    curve: z.literal('bn128').optional(),
  })
  .strict();

/** A proven approval as a package carries it: everything a verifier needs, nothing of who. */
export const packagedApprovalSchema = z
  .object({
    stage: z.string().min(1).max(64),
    /** The audit entry (an approve) the proof stands behind. */
    seq: z.number().int().min(0),
    setId: z.string().min(1).max(64),
    /** The root's position in the set's history, its size then, and its logged statement's sha256. */
    rootSeq: z.number().int().min(0),
    rootSize: z.number().int().min(1),
    rootStatement: z.string().regex(/^[0-9a-f]{64}$/),
    root: decimal,
    nullifier: decimal,
    proof: approvalProofSchema,
    /** [root, nullifier, scope, message], and for a credentialed set the credential's signals after them. */
    publicSignals: z.union([
      z.array(decimal).length(4),
      z.array(decimal).length(CREDENTIALED_APPROVAL_PUBLIC_SIGNALS.length),
    ]),
    /** For a credentialed set: the issuer's and the revocation root's statements the proof rests on. */
    credential: credentialFactsSchema.optional(),
  })
  .strict();
export type PackagedApproval = z.infer<typeof packagedApprovalSchema>;

export type ApprovalsState = 'proven' | 'asserted' | 'none';

export interface StageApprovals {
  stage: string;
  required: number;
  /** Distinct approvals that count toward the stage now. */
  counted: number;
  /** Of those, the ones backed by a valid membership proof against the set's logged root. */
  proven: number;
}

export interface ApprovalsVerdict {
  /**
   * proven: every approval that counts is a valid proof (and every closed stage met its count with
   * proofs alone), and no proof carried fails its checks; asserted: some count rests on bare actor
   * commitments (the old way), or a proof carried does not hold; none: no approvals were recorded.
   */
  approvals: ApprovalsState;
  approvalStages: StageApprovals[];
  /** Why an approval did not count as proven (never who made it). */
  approvalReasons: Array<{ code: string; detail: string; stage: string }>;
  /** The approver sets the workflow fixed at prepare whose statements hold: when, and how many members. */
  approverSets: Array<{
    stage: string;
    setId: string;
    rootSeq: number;
    size: number;
    fixedAt: string;
    /** Where each approver must hold a credential: what, and its query in words ("role = underwriter"). */
    credential?: { what: string; query: string; issuers: string[] };
  }>;
}

/**
 * The fixed sets that hold: one per stage, each root statement recomputing from the fields beside it.
 * The others are reasons, and their stages take no proof.
 */
function heldSets(
  template: string,
  fixed: FixedApprovers | undefined,
  reasons: ApprovalsVerdict['approvalReasons'],
): Map<string, FixedApproverSet> {
  const held = new Map<string, FixedApproverSet>();
  if (!fixed) return held;
  for (const set of fixed.sets) {
    const fail = (code: string, detail: string) => reasons.push({ code, detail, stage: set.stage });
    if (held.has(set.stage)) {
      fail('approver_set_repeated', `Stage ${set.stage} names two fixed approver sets.`);
      held.delete(set.stage);
      continue;
    }
    const statement = {
      setId: set.setId,
      template,
      stage: set.stage,
      seq: set.rootSeq,
      root: set.root,
      size: set.size,
      credential: set.credential,
    };
    if (approverRootSha256(statement) !== set.rootStatement) {
      fail(
        'approver_set_statement_mismatch',
        `The fixed root of stage ${set.stage} is not the statement it names.`,
      );
      continue;
    }
    held.set(set.stage, set);
  }
  return held;
}

/**
 * Checks the proven approvals of a trail: each names an approve entry of its stage whose actor is its
 * nullifier, it is against the root its stage's set had when the workflow was prepared (`fixed`: a
 * member added later never counts), its signals are this workflow's scope and the content that entry
 * approved, its nullifier is used once, and the proof verifies. `counted` gives, per stage, the actor
 * commitments that count now (the engine's). Never throws.
 */
export async function checkApprovals(input: {
  proofId: string;
  template: string;
  genesis: string;
  fixed: FixedApprovers | undefined;
  trail: readonly ChainedEntry[];
  stages: ReadonlyArray<{ key: string; requiredApprovals: number; completed: boolean; counted: string[] }>;
  approvals: readonly PackagedApproval[];
  vkey: unknown;
  /** The credentialed approval circuit's key (a credentialed set's proofs are not proven without it). */
  credentialKey?: unknown;
  /** Inclusion of the credentialed approvals' statements, two each from `at` (the package's log). */
  log?: { root: string; treeSize: number; proofs: CredentialLog['proofs']; at: number } | undefined;
  /** A verifier's own list of issuer key ids. */
  issuers?: readonly IssuerPin[] | undefined;
}): Promise<ApprovalsVerdict> {
  const { proofId, genesis, trail } = input;
  let credentialed = 0;
  const issuerNames = new Map<string, Set<string>>();
  const reasons: ApprovalsVerdict['approvalReasons'] = [];
  const bySeq = new Map(trail.map((e) => [e.seq, e]));
  const seen = new Set<string>();
  const held = heldSets(input.template, input.fixed, reasons);
  const provenActors = new Map<string, Set<string>>();
  for (const a of input.approvals) {
    const fail = (code: string, detail: string) => reasons.push({ code, detail, stage: a.stage });
    const entry = bySeq.get(a.seq);
    if (!entry || entry.action !== 'approve' || entry.stage !== a.stage) {
      fail(
        'approval_entry_missing',
        `The proof names entry ${a.seq}, which is not an approval of this stage.`,
      );
      continue;
    }
    if (!isFieldElement(a.nullifier) || entry.actorCommitment !== approvalActor(a.nullifier)) {
      fail('approval_actor_mismatch', `Entry ${a.seq} is not the nullifier's.`);
      continue;
    }
    if (seen.has(a.nullifier)) {
      fail('approval_nullifier_repeated', `A nullifier is counted twice at entry ${a.seq}.`);
      continue;
    }
    seen.add(a.nullifier);
    const set = held.get(a.stage);
    if (!set) {
      fail(
        'approval_set_not_fixed',
        `Stage ${a.stage} fixed no approver set when the workflow was prepared.`,
      );
      continue;
    }
    if (
      a.setId !== set.setId ||
      a.rootSeq !== set.rootSeq ||
      a.root !== set.root ||
      a.rootSize !== set.size ||
      a.rootStatement !== set.rootStatement
    ) {
      fail(
        'approval_root_not_fixed',
        `The proof at entry ${a.seq} is not against the root stage ${a.stage} fixed at prepare.`,
      );
      continue;
    }
    const expected = membershipSignals({
      root: a.root,
      nullifier: a.nullifier,
      scope: approvalScope(proofId, a.stage),
      message: approvalMessage(approvalContentHash(genesis, trail, a.stage, a.seq)),
    });
    if (a.publicSignals.slice(0, 4).join() !== expected.join()) {
      fail(
        'approval_signals_mismatch',
        `The proof at entry ${a.seq} is not for this workflow, stage and content.`,
      );
      continue;
    }
    if (set.credential) {
      const at = credentialed++;
      if (a.publicSignals.length !== CREDENTIALED_APPROVAL_PUBLIC_SIGNALS.length || !a.credential) {
        fail(
          'approval_credential_missing',
          `Stage ${a.stage} requires each approver to hold ${set.credential.what}; the approval at entry ${a.seq} shows none.`,
        );
        continue;
      }
      const signal = (name: CredentialedApprovalSignal) => approvalSignal(a.publicSignals, name);
      const query = await approverQuerySignals(set.credential).catch(() => undefined);
      const queried = CREDENTIALED_APPROVAL_PUBLIC_SIGNALS.slice(9).every((n) => signal(n) === query?.[n]);
      if (!query || signal('schemaId') !== query.schemaId || !queried) {
        fail(
          'approval_credential_query_mismatch',
          `The approval at entry ${a.seq} proves another query than the set requires.`,
        );
        continue;
      }
      const facts = credentialFactReasons({
        signals: approvalCredentialSignals(a.publicSignals),
        facts: a.credential,
        maxRevocationAge: set.credential.maxRevocationAge,
        issuers: input.issuers,
        log: input.log ? { ...input.log, at: input.log.at + 2 * at } : undefined,
      });
      if (facts.length > 0) {
        for (const f of facts) fail('approval_credential_invalid', `Entry ${a.seq}: ${f}.`);
        continue;
      }
      if (
        input.credentialKey === undefined ||
        !(await verifyGroth16(input.credentialKey, a.publicSignals, {
          ...(a.proof as Groth16ProofJson),
          protocol: 'groth16',
          curve: 'bn128',
        }).catch(() => false))
      ) {
        fail('approval_proof_invalid', `The credentialed approval at entry ${a.seq} does not verify.`);
        continue;
      }
      let names = issuerNames.get(a.stage);
      if (!names) issuerNames.set(a.stage, (names = new Set()));
      names.add(a.credential.issuer.statement.name);
    } else if (
      a.publicSignals.length !== 4 ||
      input.vkey === undefined ||
      !(await verifyMembershipProof(input.vkey, a.proof as Groth16ProofJson, expected))
    ) {
      fail('approval_proof_invalid', `The membership proof at entry ${a.seq} does not verify.`);
      continue;
    }
    let actors = provenActors.get(a.stage);
    if (!actors) provenActors.set(a.stage, (actors = new Set()));
    actors.add(entry.actorCommitment);
  }
  const approvalStages: StageApprovals[] = input.stages
    .filter((s) => s.requiredApprovals > 0)
    .map((s) => ({
      stage: s.key,
      required: s.requiredApprovals,
      counted: s.counted.length,
      proven: s.counted.filter((c) => provenActors.get(s.key)?.has(c)).length,
    }));
  let approvals: ApprovalsState = 'none';
  // A proof that fails its checks makes nothing proven, even beside valid ones: a verifier is not to
  // pick the proofs that hold out of a record that carries one that does not.
  const failed = reasons.length > 0;
  if (approvalStages.some((s) => s.counted > 0) || input.approvals.length > 0) {
    const allProven = input.stages.every((s) => {
      const st = approvalStages.find((x) => x.stage === s.key);
      if (!st) return true;
      return st.proven === st.counted && (!s.completed || st.proven >= st.required);
    });
    approvals = allProven && !failed && approvalStages.some((s) => s.counted > 0) ? 'proven' : 'asserted';
    for (const s of approvalStages)
      if (s.proven < s.counted)
        reasons.push({
          code: 'approvals_asserted',
          detail: `${s.counted - s.proven} of ${s.counted} approvals of stage ${s.stage} are asserted, not proven.`,
          stage: s.stage,
        });
  }
  const approverSets = [...held.values()].map((set) => ({
    stage: set.stage,
    setId: set.setId,
    rootSeq: set.rootSeq,
    size: set.size,
    fixedAt: input.fixed!.fixedAt,
    ...(set.credential
      ? {
          credential: {
            what: set.credential.what,
            query: approverQueryText(set.credential),
            issuers: [...(issuerNames.get(set.stage) ?? [])],
          },
        }
      : {}),
  }));
  return { approvals, approvalStages, approvalReasons: reasons, approverSets };
}
