// One valid proof for each committed circuit (circuits/artifacts), for the verifier's tests and benchmark.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadBallotArtifacts, makeBallot } from '../../../shared/governance/ballot-client';
import {
  ballotPublicKey,
  ballotSignals,
  createIdentity,
  proposalScope,
  voteHashOf,
} from '../../../shared/governance/ballot-protocol';
import { provePolicy, snarkjsBackend } from '../../../shared/zk';
import { artifactPaths, artifactsDir } from '../../../shared/zk/artifacts';

export interface ProofJson {
  pi_a: string[];
  pi_b: string[][];
  pi_c: string[];
  protocol?: string;
  curve?: string;
}

export interface CommittedProof {
  circuit: string;
  vkey: Record<string, unknown>;
  proof: ProofJson;
  publicSignals: string[];
}

export const committedCircuits = ['threshold', 'range', 'membership', 'ballot'] as const;

const vkeyOf = (circuit: string) =>
  JSON.parse(readFileSync(artifactPaths(circuit).vkey, 'utf8')) as Record<string, unknown>;

/** Proves with snarkjs: the three policy circuits through the service's inputs, the ballot as a voter. */
export async function committedProofs(): Promise<CommittedProof[]> {
  const out: CommittedProof[] = [];
  const policies = [
    ['threshold', { value: '720', threshold: '650' }],
    ['range', { value: 42, low: 18, high: 65 }],
    ['membership', { value: '840', set: ['124', '250', '840', '276'] }],
  ] as const;
  for (const [policy, inputs] of policies) {
    const proved = await provePolicy(snarkjsBackend(), policy, inputs);
    out.push({
      circuit: policy,
      vkey: vkeyOf(policy),
      proof: proved.proof,
      publicSignals: proved.publicSignals,
    });
  }

  const ids = await Promise.all(Array.from({ length: 3 }, () => createIdentity()));
  const key = generateKeyPairSync('x25519').privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(16);
  const info = {
    proposalId: 'prop_verify',
    roomId: 'room_verify',
    publicKey: ballotPublicKey(key).toString('base64url'),
    members: ids.map((id) => id.commitment),
  };
  const ballot = await makeBallot({
    identity: ids[1]!,
    info,
    choice: 'yes',
    artifacts: await loadBallotArtifacts(artifactsDir()),
  });
  const publicSignals = ballotSignals({
    root: ballot.root,
    nullifier: ballot.nullifier,
    scope: proposalScope(info.proposalId),
    voteHash: voteHashOf(Buffer.from(ballot.ciphertext, 'base64url')),
  });
  out.push({ circuit: 'ballot', vkey: vkeyOf('ballot'), proof: ballot.proof, publicSignals });
  return out;
}
