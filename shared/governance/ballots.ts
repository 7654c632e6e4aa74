// Casting a ballot: what a voter encrypts to and proves for, and the cast itself (a membership proof
// against the room's identity tree, a nullifier, the vote encrypted to the proposal's key). The service
// stores nothing that names the voter, nor when they voted, and answers with a signed receipt.
import type { Knex } from 'knex';
import { conflict, notFound, unprocessable } from '../platform/errors';
import { systemClock } from '../platform/clock';
import type { Clock } from '../platform/clock';
import { serviceSigningKey } from '../platform/keys';
import { loadVerificationKey } from '../zk/verify';
import {
  BALLOT_CIPHERTEXT_BYTES,
  BALLOT_CIRCUIT,
  BALLOT_TREE_DEPTH,
  ballotSignals,
  ciphertextDigest,
  proposalScope,
  verifyBallotProof,
  voteHashOf,
} from './ballot-protocol';
import type { Groth16ProofJson } from './ballot-protocol';
import { acceptedRoots } from './identities';
import { signReceipt } from './receipts';
import type { BallotReceipt } from './receipts';
import { THRESHOLD_BALLOT_BYTES, ballotEphemeral } from './threshold';
import { trusteesOf } from './trustees';
import { publicKeyOf } from './proposal-row';
import type { BallotScheme, ProposalRow } from './proposal-row';

/** What a voter encrypts to and proves for: the same for every voter and at every moment of the vote. */
export async function ballotKeyInfo(db: Knex, proposalId: string) {
  const p = (await db('proposals').where('id', proposalId).first()) as ProposalRow | undefined;
  if (!p) throw notFound('The proposal');
  const trustees = p.ballot_scheme === 'threshold' ? await trusteesOf(db, p.room_id) : undefined;
  return {
    proposalId: p.id,
    roomId: p.room_id,
    scope: String(proposalScope(p.id)),
    // Who can open the ballots: the service at the close, or any `threshold` of the room's trustees.
    scheme: p.ballot_scheme,
    ...(trustees
      ? {
          trustees: {
            threshold: trustees.threshold,
            names: trustees.trustees.map((t) => t.name),
            ceremony: `/api/governance/rooms/${p.room_id}/trustees`,
          },
        }
      : {}),
    publicKey: publicKeyOf(p),
    // What a ballot may say: a voter's client refuses any other choice before proving.
    options: p.options,
    circuit: BALLOT_CIRCUIT,
    depth: BALLOT_TREE_DEPTH,
  };
}

export interface BallotInput {
  nullifier: string;
  root: string;
  ciphertext: string;
  proof: Groth16ProofJson;
}

const notOpen = () => conflict('voting_not_open', 'This proposal is not open for voting.');

// snarkjs runs its pairings on shared curve threads: verifications side by side each take several times
// longer (10 in flight: ~3.5x the time of 10 in a row), so a process checks one ballot proof at a time.
let verifying: Promise<unknown> = Promise.resolve();

function verifyInTurn(proof: Groth16ProofJson, signals: string[]): Promise<boolean> {
  const run = verifying.then(async () =>
    verifyBallotProof(await loadVerificationKey(BALLOT_CIRCUIT), proof, signals),
  );
  verifying = run.catch(() => undefined);
  return run;
}

const isOpen = (p: ProposalRow, now: Date) =>
  p.status === 'voting' && !!p.voting_ends_at && now < p.voting_ends_at;

/**
 * Takes one anonymous ballot and returns its signed receipt. The proof is checked before the nullifier
 * is looked at (so no one learns whether a nullifier has voted without a proof for it), and outside
 * any lock; the insert then holds the proposal row in share mode, so ballots go in side by side and the
 * close (which locks it for update) sees every ballot taken before it and none after. The reply and
 * every refusal say nothing of other ballots.
 */
export async function castBallot(
  db: Knex,
  proposalId: string,
  input: BallotInput,
  clock: Clock = systemClock,
): Promise<BallotReceipt> {
  const p = (await db('proposals').where('id', proposalId).first()) as ProposalRow | undefined;
  if (!p) throw notFound('The proposal');
  if (!isOpen(p, clock.now())) throw notOpen();
  const ciphertext = Buffer.from(input.ciphertext, 'base64url');
  const bytes = ciphertextBytes(p.ballot_scheme);
  if (ciphertext.length !== bytes)
    throw unprocessable('invalid_ciphertext', `A ballot's ciphertext is ${bytes} bytes for this proposal.`);
  // Under the trustees' key a ballot proves it was made for this proposal (knowledge of its R): a copy
  // of another proposal's ballot is refused, so it can never be opened by this proposal's decryption.
  if (p.ballot_scheme === 'threshold' && !ballotEphemeral(ciphertext, p.id))
    throw unprocessable(
      'invalid_ciphertext',
      'The ballot’s proof of knowledge does not hold for this proposal; encrypt the vote anew for it.',
    );
  if (!(await acceptedRoots(db, p.room_id)).includes(input.root))
    throw unprocessable(
      'unknown_root',
      'The proof is not against one of this room’s recent member-tree roots; fetch the member list again and prove anew.',
    );
  const signals = ballotSignals({
    root: input.root,
    nullifier: input.nullifier,
    scope: proposalScope(p.id),
    voteHash: voteHashOf(ciphertext),
  });
  if (!(await verifyInTurn(input.proof, signals)))
    throw unprocessable(
      'proof_invalid',
      'The membership proof does not verify for this proposal and this vote.',
    );
  return db.transaction(async (trx) => {
    const locked = (await trx('proposals').where('id', proposalId).forShare().first()) as ProposalRow;
    if (!isOpen(locked, clock.now())) throw notOpen();
    const inserted = (await trx('ballots')
      .insert({
        proposal_id: proposalId,
        nullifier: input.nullifier,
        root: input.root,
        ciphertext,
        proof: JSON.stringify({ pi_a: input.proof.pi_a, pi_b: input.proof.pi_b, pi_c: input.proof.pi_c }),
      })
      .onConflict()
      .ignore()
      .returning('nullifier')) as unknown[];
    if (!inserted.length)
      throw conflict(
        'already_voted',
        'This member has already cast a ballot on this proposal; ballots are final.',
      );
    return signReceipt({ proposalId, ballotDigest: ciphertextDigest(ciphertext) }, serviceSigningKey());
  });
}

/** A ballot's ciphertext length under the proposal's scheme. */
const ciphertextBytes = (scheme: BallotScheme) =>
  scheme === 'threshold' ? THRESHOLD_BALLOT_BYTES : BALLOT_CIPHERTEXT_BYTES;
