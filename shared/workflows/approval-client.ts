// The approver's side of an anonymous approval: make an identity, fetch what a stage's approval proves
// against (its scope, the content it approves now, the whole member list of its set), prove membership
// here and post the proof. The identity secret never leaves this module's caller: the service gets a
// root, a nullifier, the scope, the content's field element and a proof. Imports nothing of the
// service (no configuration, database or keys): the CLI and the tests run it as an approver would.
import {
  createIdentity,
  identityFromSecret,
  loadMembershipArtifacts,
  proveMembership,
} from '../zk/anonymity';
import type {
  Groth16ProofJson,
  Identity,
  MembershipArtifacts,
  NativeMembershipProver,
} from '../zk/anonymity';
import * as snarkjs from 'snarkjs';
import type { MemFile } from 'snarkjs';
import { credentialWitness } from '../credentials/query';
import type { RevocationPath } from '../credentials/query';
import {
  ANONYMITY_TREE_DEPTH,
  CREDENTIALED_APPROVAL_CIRCUIT,
  memberPath,
  memberTreeLevels,
  nullifierOf,
} from '../zk/anonymity';
import {
  APPROVER_TERMS,
  CREDENTIALED_APPROVAL_PUBLIC_SIGNALS,
  approvalMessage,
  approvalScope,
  approverCredentialSchema,
} from './approval-protocol';
import type { ApproverCredential } from './approval-protocol';

export { createIdentity, identityFromSecret, loadMembershipArtifacts };
export type { Identity, MembershipArtifacts };

/** What an approver needs to know about a stage: all public, the same for every approver. */
export interface ApprovalTarget {
  proofId: string;
  stage: string;
  setId: string;
  /** The chain entry the approval approves (64 hex). */
  contentHash: string;
  /** The set's identity commitments in tree order (decimal). */
  members: string[];
  /** What each approver must hold, proven inside the approval (null: nothing). */
  credential?: ApproverCredential | null;
}

/** An approval as the service takes it. */
export interface Approval {
  proofId: string;
  stage: string;
  proof: Groth16ProofJson;
  /** [root, nullifier, scope, message] */
  publicSignals: string[];
}

/** Proves the identity's approval of the target's stage and content. Throws when it is not in the set. */
export async function makeApproval(options: {
  identity: Identity;
  target: ApprovalTarget;
  artifacts: MembershipArtifacts;
  native?: NativeMembershipProver | undefined;
}): Promise<Approval & { timings: { witnessMs: number; provingMs: number } }> {
  const { identity, target, artifacts } = options;
  // The scope and message are recomputed here, not taken from the service: a proof is only ever for
  // the workflow, stage and content the approver named and saw.
  const proved = await proveMembership({
    identity,
    members: target.members,
    scope: approvalScope(target.proofId, target.stage),
    message: approvalMessage(target.contentHash),
    artifacts,
    native: options.native,
  });
  return {
    proofId: target.proofId,
    stage: target.stage,
    proof: proved.proof,
    publicSignals: proved.publicSignals,
    timings: proved.timings,
  };
}

export async function fetchApprovalTarget(
  baseUrl: string,
  proofId: string,
  stage: string,
  fetchImpl: typeof fetch = fetch,
): Promise<ApprovalTarget> {
  const url = new URL('/api/proof-workflows/approvals/target', baseUrl);
  url.searchParams.set('proofId', proofId);
  url.searchParams.set('stage', stage);
  const res = await fetchImpl(url, { headers: { accept: 'application/json' } });
  const body = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`GET ${url.pathname}: ${res.status} ${String(body.code ?? '')}`);
  return {
    proofId,
    stage,
    setId: String(body.setId),
    contentHash: String(body.contentHash),
    members: body.members as string[],
    credential: body.credential ? approverCredentialSchema.parse(body.credential) : null,
  };
}

/** Reads the credentialed approval circuit's wasm and zkey from a folder or a service's public copies. */
export const loadCredentialedApprovalArtifacts = (
  from: string,
  fetchImpl: typeof fetch = fetch,
): Promise<MembershipArtifacts> => loadMembershipArtifacts(from, fetchImpl, CREDENTIALED_APPROVAL_CIRCUIT);

/**
 * The credentialed approval circuit's input for the identity, the target and the credential, with the
 * public signals the proof must have; checked in plain first (a 4xx AppError where the credential does
 * not meet the requirement: expired, revoked, another query; an Error where it is another identity's).
 */
export async function credentialedApprovalInput(options: {
  identity: Identity;
  target: ApprovalTarget;
  credential: unknown;
  revocation: { revoked: readonly string[] } | { path: RevocationPath };
  now?: bigint;
}): Promise<{ input: Record<string, unknown>; publicSignals: string[] }> {
  const { identity, target } = options;
  const requirement = target.credential;
  if (!requirement) throw new Error('This stage’s approver set requires no credential.');
  const index = target.members.indexOf(identity.commitment);
  if (index < 0) throw new Error('This identity is not in the member list.');
  const scope = approvalScope(target.proofId, target.stage);
  const message = approvalMessage(target.contentHash);
  const levels = await memberTreeLevels(target.members.map(BigInt));
  const root = String(levels[ANONYMITY_TREE_DEPTH]![0]);
  const nullifier = String(await nullifierOf(identity.secret, scope));
  const credential = await credentialWitness(
    {
      credential: options.credential,
      terms: requirement.terms.map(({ field, op }) => ({ field, op })),
      parameters: requirement.terms.map(({ field: _f, op: _o, ...plain }) => ({ ...plain, salt: '0' })),
      revocation: options.revocation,
      now: options.now ?? BigInt(Math.floor(Date.now() / 1000)),
    },
    APPROVER_TERMS,
  );
  if (credential.signals.subject !== identity.commitment)
    throw new Error(
      'The credential is about another identity: its subject is not this identity’s commitment.',
    );
  const named: Record<string, string> = { root, nullifier, scope: String(scope), message: String(message) };
  for (const [k, v] of Object.entries(credential.signals)) named[k] = v;
  return {
    input: {
      identitySecret: identity.secret,
      pathElements: (await memberPath(levels, index)).map(String),
      pathIndex: String(index),
      scope: String(scope),
      message: String(message),
      ...credential.input,
    },
    publicSignals: CREDENTIALED_APPROVAL_PUBLIC_SIGNALS.map((n) => named[n]!),
  };
}

/**
 * Proves a credentialed approval: the identity is in the set, and holds `credential` (about its own
 * commitment, from an issuer, unrevoked under the issuer's published list, valid at `now`) meeting the
 * target's requirement; all in one proof, nothing of either revealed.
 */
export async function makeCredentialedApproval(options: {
  identity: Identity;
  target: ApprovalTarget;
  credential: unknown;
  revocation: { revoked: readonly string[] } | { path: RevocationPath };
  artifacts: MembershipArtifacts;
  /** Seconds since 1970 (default: now). */
  now?: bigint;
  /** The native prover loaded with the circuit's key (shared/zk/local-prover.ts); else snarkjs proves. */
  native?: NativeMembershipProver | undefined;
}): Promise<Approval & { timings: { provingMs: number } }> {
  const { input, publicSignals: expected } = await credentialedApprovalInput(options);
  const { target } = options;
  const start = performance.now();
  const wtns: MemFile = { type: 'mem' };
  await snarkjs.wtns.calculate(input, { type: 'mem', data: options.artifacts.wasm }, wtns);
  const snarkjsProof = () => snarkjs.groth16.prove({ type: 'mem', data: options.artifacts.zkey }, wtns);
  // The native prover when there is one; should it fail, snarkjs proves the same statement.
  const proved = options.native
    ? await options.native.prove(wtns.data!).catch(() => snarkjsProof())
    : await snarkjsProof();
  const provingMs = Math.round(performance.now() - start);
  if (proved.publicSignals.join() !== expected.join())
    throw new Error('The prover returned public signals that are not this proof’s.');
  const { pi_a, pi_b, pi_c } = proved.proof as unknown as Groth16ProofJson;
  return {
    proofId: target.proofId,
    stage: target.stage,
    proof: { pi_a, pi_b, pi_c, protocol: 'groth16', curve: 'bn128' },
    publicSignals: expected,
    timings: { provingMs },
  };
}

/** Sends an approval; the reply is the recorded stage (200) or a problem. */
export async function submitApproval(
  baseUrl: string,
  approval: Approval,
  fetchImpl: typeof fetch = fetch,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetchImpl(new URL('/api/proof-workflows/approvals', baseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({
      proofId: approval.proofId,
      stage: approval.stage,
      proof: approval.proof,
      publicSignals: approval.publicSignals,
    }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
