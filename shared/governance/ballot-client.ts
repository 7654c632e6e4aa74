// The voter's side of an anonymous ballot: make an identity, build the membership proof for a
// proposal from the room's public member list, encrypt the vote and submit it. The identity secret
// stays here: the service receives a nullifier, a root, a ciphertext and a proof. Imports nothing of
// the service (no configuration, database or keys): the CLI, the tests and the benchmark run it as a
// voter would, and a native prover can be plugged in for speed.
import { loadMembershipArtifacts, proveMembership } from '../zk/anonymity';
import {
  BALLOT_TREE_DEPTH,
  createIdentity,
  encryptVote,
  identityFromSecret,
  memberPath,
  memberTreeLevels,
  nullifierOf,
  proposalScope,
  voteHashOf,
} from './ballot-protocol';
import type { Groth16ProofJson, Identity } from './ballot-protocol';
import { encryptThresholdVote } from './threshold';

export { createIdentity, identityFromSecret };
export type { Identity };

/** What a voter needs to know about a proposal: all public, the same for every voter. */
export interface BallotInfo {
  proposalId: string;
  roomId: string;
  /** The proposal's public key, base64url: X25519 (scheme `service`) or the trustees' ristretto255 joint key. */
  publicKey: string;
  /** Who opens the ballots: the service at the close, or the room's trustees (default `service`). */
  scheme?: 'service' | 'threshold' | undefined;
  /** The room's identity commitments in tree order (decimal). */
  members: string[];
  /** The proposal's options, when known: a choice among none of them is refused before proving. */
  options?: string[] | undefined;
}

/** A choice that is none of the proposal's options: the ballot would be spoiled, so none is made. */
export class ChoiceNotAnOption extends Error {
  constructor(choice: string, options: readonly string[]) {
    super(
      `${JSON.stringify(choice)} is not one of this proposal's options (${options.map((o) => JSON.stringify(o)).join(', ')}); a ballot with it would be counted as spoiled, so none was made.`,
    );
    this.name = 'ChoiceNotAnOption';
  }
}

/** Refuses a choice that is not exactly one of the options (when they are known). */
export function assertChoice(info: Pick<BallotInfo, 'options'>, choice: string): void {
  if (info.options && !info.options.includes(choice)) throw new ChoiceNotAnOption(choice, info.options);
}

/** A ballot as the service takes it. */
export interface Ballot {
  nullifier: string;
  root: string;
  /** The encrypted vote, base64url. */
  ciphertext: string;
  proof: Groth16ProofJson;
}

export interface BallotArtifacts {
  wasm: Uint8Array;
  zkey: Uint8Array;
}

/** The structural shape of a loaded native prover (native-prover's CircuitProver). */
export interface NativeBallotProver {
  prove(witness: Uint8Array): Promise<{ proof: unknown; publicSignals: string[] }>;
}

export interface MadeBallot extends Ballot {
  timings: { witnessMs: number; provingMs: number };
}

/** Reads the circuit's wasm and zkey from a folder (circuits/artifacts) or the service's public copies. */
export const loadBallotArtifacts: (from: string, fetchImpl?: typeof fetch) => Promise<BallotArtifacts> =
  loadMembershipArtifacts;

/**
 * The circuit input for an identity's ballot: its path in the tree built from the public member list,
 * the proposal scope and the vote hash. Throws when the identity is not in the list.
 */
export async function ballotCircuitInput(
  identity: Identity,
  members: readonly string[],
  proposalId: string,
  voteHash: bigint,
): Promise<{ input: Record<string, string | string[]>; root: string; nullifier: string }> {
  const index = members.indexOf(identity.commitment);
  if (index < 0) throw new Error('This identity is not in the room’s member list.');
  const levels = await memberTreeLevels(members.map(BigInt));
  const scope = proposalScope(proposalId);
  return {
    input: {
      identitySecret: identity.secret,
      pathElements: (await memberPath(levels, index)).map(String),
      pathIndex: String(index),
      scope: String(scope),
      voteHash: String(voteHash),
    },
    root: String(levels[BALLOT_TREE_DEPTH]![0]),
    nullifier: String(await nullifierOf(identity.secret, scope)),
  };
}

/** Encrypts the choice and proves membership for it, with snarkjs or a native prover. */
export async function makeBallot(options: {
  identity: Identity;
  info: BallotInfo;
  choice: string;
  artifacts: BallotArtifacts;
  native?: NativeBallotProver | undefined;
}): Promise<MadeBallot> {
  const { identity, info, choice, artifacts } = options;
  assertChoice(info, choice);
  const ciphertext =
    info.scheme === 'threshold'
      ? encryptThresholdVote(info.publicKey, info.proposalId, choice)
      : encryptVote(Buffer.from(info.publicKey, 'base64url'), info.proposalId, choice);
  const voteHash = voteHashOf(ciphertext);
  // One witness at a time per compiled calculator, in the shared core: proofs made at once never mix.
  const proved = await proveMembership({
    identity,
    members: info.members,
    scope: proposalScope(info.proposalId),
    message: voteHash,
    artifacts,
    native: options.native,
  });
  return {
    nullifier: proved.nullifier,
    root: proved.root,
    ciphertext: ciphertext.toString('base64url'),
    proof: proved.proof,
    timings: proved.timings,
  };
}

async function getJson(url: URL, fetchImpl: typeof fetch): Promise<Record<string, unknown>> {
  const res = await fetchImpl(url, { headers: { accept: 'application/json' } });
  const body = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`GET ${url.pathname}: ${res.status} ${String(body.code ?? '')}`);
  return body;
}

/**
 * The proposal's key and its room's whole member list. The voter always takes the whole list, never
 * its own path: asking for one member's path would tell the service who is about to vote.
 */
export async function fetchBallotInfo(
  baseUrl: string,
  proposalId: string,
  fetchImpl: typeof fetch = fetch,
): Promise<BallotInfo> {
  const key = await getJson(
    new URL(`/api/governance/proposals/${proposalId}/ballot-key`, baseUrl),
    fetchImpl,
  );
  const roomId = String(key.roomId);
  const tree = await getJson(new URL(`/api/governance/rooms/${roomId}/tree`, baseUrl), fetchImpl);
  return {
    proposalId,
    roomId,
    publicKey: String(key.publicKey),
    scheme: key.scheme === 'threshold' ? 'threshold' : 'service',
    members: tree.identityCommitments as string[],
    options: Array.isArray(key.options) ? (key.options as unknown[]).map(String) : undefined,
  };
}

/** Sends a ballot; the reply is the signed receipt (201) or a problem. */
export async function submitBallot(
  baseUrl: string,
  proposalId: string,
  ballot: Ballot,
  fetchImpl: typeof fetch = fetch,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetchImpl(new URL(`/api/governance/proposals/${proposalId}/ballots`, baseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({
      nullifier: ballot.nullifier,
      root: ballot.root,
      ciphertext: ballot.ciphertext,
      proof: ballot.proof,
    }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
