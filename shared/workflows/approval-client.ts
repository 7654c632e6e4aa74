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
import { approvalMessage, approvalScope } from './approval-protocol';

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
