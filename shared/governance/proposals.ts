// Proposals: Proposal → Review → Vote → Execution → Proof. Ballots are anonymous: a membership proof
// against the room's identity tree, a nullifier, and the vote encrypted to the proposal's key; the
// service stores nothing that names the voter, nor when they voted. The close opens every vote,
// tallies, and publishes the package (with the key) on the log, all in one transaction. Until then
// nothing here returns or logs anything but status and time remaining.
import type { Knex } from 'knex';
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import { AppError, conflict, notFound, unprocessable } from '../platform/errors';
import { newId } from '../platform/ids';
import { serviceSigningKey } from '../platform/keys';
import { signPackage } from '../proofs/envelope';
import { loadVerificationKey } from '../zk/verify';
import {
  BALLOT_CIPHERTEXT_BYTES,
  BALLOT_CIRCUIT,
  BALLOT_TREE_DEPTH,
  ballotPublicKey,
  ballotSignals,
  ciphertextDigest,
  decryptVote,
  proposalScope,
  verifyBallotProof,
  voteHashOf,
} from './ballot-protocol';
import type { Groth16ProofJson } from './ballot-protocol';
import { reviewMessage } from './commitments';
import { acceptedRoots } from './identities';
import { appendEntry, appendPackageToLog, loadEntries } from '../proofs/ledger';
import { ballotsRoot, byNullifier, tallyBallots, tallyHash } from './tally';
import { buildGovernancePackage, governanceGenesis } from './package';
import { signReceipt } from './receipts';
import type { BallotReceipt } from './receipts';
import type { GovernancePackage } from './package';
import type { PublishedBallot, Tally } from './tally';
import { assertOwner, committeeOrThrow, memberCount, roomOrThrow, walletCommitment } from './rooms';
import { newProposalBallotKey, proposalBallotKey } from './ballot-key';
import { THRESHOLD_BALLOT_BYTES, ballotEphemeral } from './threshold';
import { trusteesOf } from './trustees';

export type ProposalStatus = 'review' | 'voting' | 'decrypting' | 'closed' | 'executed' | 'rejected';

/** Who can open the ballots: the service's own key (opened at the close), or the room's trustees (t of n). */
export type BallotScheme = 'service' | 'threshold';

export interface ProposalRow {
  id: string;
  room_id: string;
  title: string;
  description_hash: string | null;
  options: string[];
  review_committee: string;
  quorum: number;
  status: ProposalStatus;
  outcome: string | null;
  voting_ends_at: Date | null;
  voting_seconds: number | null;
  voting_opened_at: string | null;
  created_at_iso: string;
  /** The service-held ballot key, sealed; null under the trustees' scheme (the service holds none). */
  key_wrapped: Buffer | null;
  /** Set at creation since anonymous ballots; derived from key_wrapped for older proposals. */
  ballot_public_key: string | null;
  ballot_scheme: BallotScheme;
  chain_genesis: string;
  chain_head: string;
  entry_count: number;
  tally_proof_id: string | null;
  tally_package: GovernancePackage | null;
  final_proof_id: string | null;
  final_package: GovernancePackage | null;
  owner: string;
}

export interface CreateProposalInput {
  roomId: string;
  title: string;
  descriptionHash?: string | undefined;
  options: string[];
  reviewCommittee: string;
  quorum?: number | undefined;
  /** An absolute end of the vote (may be near, or already past, for tests and scheduled votes). */
  votingEndsAt?: Date | undefined;
  /** Or a duration counted from the moment review opens the vote. */
  votingSeconds?: number | undefined;
}

const iso = (d: Date) => d.toISOString();

async function lockProposal(trx: Knex.Transaction, id: string): Promise<ProposalRow> {
  const row = (await trx('proposals').where('id', id).forUpdate().first()) as ProposalRow | undefined;
  if (!row) throw notFound('The proposal');
  return row;
}

export async function createProposal(db: Knex, input: CreateProposalInput, owner: string) {
  if (new Set(input.options).size !== input.options.length)
    throw unprocessable('duplicate_option', 'Every option must be different.');
  if ((input.votingEndsAt === undefined) === (input.votingSeconds === undefined))
    throw unprocessable('voting_window', 'Give exactly one of votingEndsAt or votingSeconds.');
  return db.transaction(async (trx) => {
    await roomOrThrow(trx, input.roomId, owner);
    const committee = await committeeOrThrow(trx, input.roomId, input.reviewCommittee);
    const id = newId('prop');
    const genesis = governanceGenesis(id);
    const createdAt = iso(new Date());
    // A room with trustees encrypts to their joint key, and only once their ceremony has made it.
    const trustees = await trusteesOf(trx, input.roomId);
    if (trustees && trustees.status !== 'ready')
      throw conflict(
        'trustees_not_ready',
        'The room’s trustees have not finished their key ceremony; a proposal can be made once it has ended.',
      );
    const key = trustees
      ? { wrapped: null, publicKey: trustees.joint_key!, scheme: 'threshold' as const }
      : { ...newProposalBallotKey(id), scheme: 'service' as const };
    const row = {
      id,
      room_id: input.roomId,
      title: input.title,
      description_hash: input.descriptionHash ?? null,
      options: JSON.stringify(input.options),
      review_committee: committee.slug,
      quorum: input.quorum ?? 0,
      voting_ends_at: input.votingEndsAt ?? null,
      voting_seconds: input.votingSeconds ?? null,
      created_at_iso: createdAt,
      key_wrapped: key.wrapped,
      ballot_public_key: key.publicKey,
      ballot_scheme: key.scheme,
      chain_genesis: genesis,
      chain_head: genesis,
      entry_count: 0,
      owner,
    };
    await trx('proposals').insert(row);
    await appendEntry(trx, 'proposals', id, row, {
      stage: 'proposal',
      action: 'created',
      at: createdAt,
      actorCommitment: null,
      data: {
        titleHash: sha256Hex(input.title),
        descriptionHash: input.descriptionHash ?? null,
        optionsHash: sha256Hex(canonicalJson(input.options)),
        reviewCommittee: committee.slug,
        reviewThreshold: committee.threshold,
        quorum: row.quorum,
        ...(trustees ? { ballotScheme: 'threshold', trusteeThreshold: trustees.threshold } : {}),
      },
    });
    return {
      proposalId: id,
      status: 'review' as const,
      reviewCommittee: committee.slug,
      reviewThreshold: committee.threshold,
    };
  });
}

/** A committee member's signed review; the threshold of approvals opens the vote. */
export async function reviewProposal(
  db: Knex,
  proposalId: string,
  input: { walletPublicKey: string; decision: 'approve' | 'reject'; signature: string },
) {
  return db.transaction(async (trx) => {
    const p = await lockProposal(trx, proposalId);
    const room = await roomOrThrow(trx, p.room_id);
    const commitment = walletCommitment(
      room,
      input.walletPublicKey,
      reviewMessage(proposalId, input.decision),
      input.signature,
    );
    if (p.status !== 'review') throw conflict('not_in_review', 'The proposal is no longer in review.');
    const committee = await committeeOrThrow(trx, p.room_id, p.review_committee);
    if (!committee.members.includes(commitment))
      throw new AppError(403, 'not_a_reviewer', 'This wallet is not on the review committee.');
    const at = iso(new Date());
    const inserted = (await trx('proposal_reviews')
      .insert({ proposal_id: proposalId, member_commitment: commitment, decision: input.decision, at })
      .onConflict(['proposal_id', 'member_commitment'])
      .ignore()
      .returning('member_commitment')) as unknown[];
    if (!inserted.length) throw conflict('already_reviewed', 'This reviewer has already decided.');
    await appendEntry(trx, 'proposals', proposalId, p, {
      stage: 'review',
      action: input.decision === 'approve' ? 'review_approve' : 'review_reject',
      at,
      actorCommitment: commitment,
      data: null,
    });
    const decisions = (await trx('proposal_reviews')
      .where('proposal_id', proposalId)
      .select('decision')) as Array<{
      decision: string;
    }>;
    const approvals = decisions.filter((d) => d.decision === 'approve').length;
    const rejections = decisions.length - approvals;
    let status: ProposalStatus = 'review';
    if (approvals >= committee.threshold) {
      const openedAt = new Date();
      const endsAt = p.voting_ends_at ?? new Date(openedAt.getTime() + (p.voting_seconds ?? 0) * 1000);
      await appendEntry(trx, 'proposals', proposalId, p, {
        stage: 'vote',
        action: 'vote_opened',
        at: iso(openedAt),
        actorCommitment: null,
        // The key voters encrypt to, fixed in the chain before any ballot: the close publishes its
        // private half, and a verifier checks it is this key's.
        data: {
          votingEndsAt: iso(endsAt),
          ballotPublicKey: publicKeyOf(p),
          ...(p.ballot_scheme === 'threshold' ? { ballotScheme: 'threshold' } : {}),
        },
      });
      await trx('proposals')
        .where({ id: proposalId, status: 'review' })
        .update({
          status: 'voting',
          voting_opened_at: iso(openedAt),
          voting_ends_at: endsAt,
          updated_at: trx.fn.now(),
        });
      status = 'voting';
    } else if (rejections > committee.members.length - committee.threshold) {
      await appendEntry(trx, 'proposals', proposalId, p, {
        stage: 'review',
        action: 'rejected',
        at,
        actorCommitment: null,
        data: null,
      });
      await trx('proposals')
        .where({ id: proposalId, status: 'review' })
        .update({ status: 'rejected', outcome: 'rejected_in_review', updated_at: trx.fn.now() });
      status = 'rejected';
    }
    return { proposalId, status, memberCommitment: commitment };
  });
}

const secondsLeft = (endsAt: Date, now: Date) =>
  Math.max(0, Math.ceil((endsAt.getTime() - now.getTime()) / 1000));

/** The proposal's ballot public key (base64url: X25519, or the trustees' ristretto255 joint key). */
export function publicKeyOf(p: ProposalRow): string {
  return (
    p.ballot_public_key ?? ballotPublicKey(proposalBallotKey(p.id, p.key_wrapped!)).toString('base64url')
  );
}

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
export async function castBallot(db: Knex, proposalId: string, input: BallotInput): Promise<BallotReceipt> {
  const p = (await db('proposals').where('id', proposalId).first()) as ProposalRow | undefined;
  if (!p) throw notFound('The proposal');
  if (!isOpen(p, new Date())) throw notOpen();
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
    if (!isOpen(locked, new Date())) throw notOpen();
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

/**
 * The close under the trustees' scheme: the ballots are fixed in the chain (their count and root) and
 * the proposal waits for the trustees' partial decryptions; nothing is opened here.
 */
async function sealBallotsForTrustees(trx: Knex.Transaction, p: ProposalRow, now: Date): Promise<void> {
  const ballots = (
    (await trx('ballots').where('proposal_id', p.id).select('nullifier', 'ciphertext')) as Array<{
      nullifier: string;
      ciphertext: Buffer;
    }>
  )
    .map((b) => ({ nullifier: b.nullifier, ciphertext: b.ciphertext.toString('base64url') }))
    .sort(byNullifier);
  await appendEntry(trx, 'proposals', p.id, p, {
    stage: 'vote',
    action: 'vote_closed',
    at: iso(now > p.voting_ends_at! ? now : p.voting_ends_at!),
    actorCommitment: null,
    data: { ballotCount: ballots.length, ballotsRoot: ballotsRoot(ballots) },
  });
  await trx('proposals')
    .where({ id: p.id, status: 'voting' })
    .update({ status: 'decrypting', updated_at: trx.fn.now() });
}

export function packageSubject(
  p: ProposalRow,
  members: number,
  threshold: number,
): GovernancePackage['subject'] {
  return {
    proposalId: p.id,
    roomId: p.room_id,
    title: p.title,
    descriptionHash: p.description_hash,
    options: p.options,
    quorum: p.quorum,
    memberCount: members,
    reviewThreshold: threshold,
    votingOpenedAt: p.voting_opened_at!,
    votingEndsAt: iso(p.voting_ends_at!),
  };
}

/**
 * Closes a vote whose window has passed: opens the ballots, tallies, records the close in the chain and
 * publishes the signed package on the log. Returns false when there was nothing to close.
 */
export async function closeProposal(db: Knex, proposalId: string, now = new Date()): Promise<boolean> {
  return db.transaction(async (trx) => {
    const p = await lockProposal(trx, proposalId);
    if (p.status !== 'voting') return false;
    if (now < p.voting_ends_at!) return false;
    if (p.ballot_scheme === 'threshold') {
      await sealBallotsForTrustees(trx, p, now);
      return true;
    }
    const privateKey = proposalBallotKey(p.id, p.key_wrapped!);
    const rows = (await trx('ballots').where('proposal_id', p.id)) as Array<{
      nullifier: string;
      root: string;
      ciphertext: Buffer;
      proof: Groth16ProofJson;
    }>;
    // A vote that does not open to one of the options is spoiled: published, counted toward nothing.
    const ballots: PublishedBallot[] = rows
      .map((r) => {
        const choice = decryptVote(privateKey, p.id, r.ciphertext);
        return {
          nullifier: r.nullifier,
          root: r.root,
          ciphertext: r.ciphertext.toString('base64url'),
          proof: r.proof,
          choice: choice !== null && p.options.includes(choice) ? choice : null,
        };
      })
      .sort(byNullifier);
    const tally: Tally = tallyBallots(
      p.options,
      ballots.map((b) => b.choice),
      p.quorum,
      true,
    );
    await appendEntry(trx, 'proposals', p.id, p, {
      stage: 'vote',
      action: 'vote_closed',
      at: iso(now > p.voting_ends_at! ? now : p.voting_ends_at!),
      actorCommitment: null,
      data: {
        ballotCount: ballots.length,
        ballotsRoot: ballotsRoot(ballots),
        tallyHash: tallyHash(tally),
        outcome: tally.outcome,
      },
    });
    const proofId = newId('prf');
    const common = await tallyCommon(trx, p, proofId, ballots);
    const pkg = await appendPackageToLog(
      trx,
      buildGovernancePackage(
        {
          ...common,
          ballotKey: { publicKey: publicKeyOf(p), privateKey: privateKey.toString('base64url') },
          ballots,
          tally,
        },
        serviceSigningKey(),
      ),
    );
    await storeTally(trx, p, 'voting', proofId, tally, pkg);
    return true;
  });
}

/** What a tallied package says besides its ballots and how they were opened, as of this transaction. */
export async function tallyCommon(
  trx: Knex.Transaction,
  p: ProposalRow,
  proofId: string,
  ballots: ReadonlyArray<{ root: string }>,
) {
  const identities = (await trx('room_identities').where('room_id', p.room_id).count({ n: '*' }).first()) as {
    n: string;
  };
  const committee = await committeeOrThrow(trx, p.room_id, p.review_committee);
  return {
    proofId,
    phase: 'tallied' as const,
    issuedAt: new Date(),
    subject: packageSubject(p, await memberCount(trx, p.room_id), committee.threshold),
    membership: {
      depth: BALLOT_TREE_DEPTH,
      identityCount: Number(identities.n),
      roots: ballots.map((b) => b.root),
    },
    genesis: p.chain_genesis,
    entries: await loadEntries(trx, p.id),
  };
}

/** Closes the proposal with its tally and published package, from the status it was found in. */
export async function storeTally(
  trx: Knex.Transaction,
  p: ProposalRow,
  from: ProposalStatus,
  proofId: string,
  tally: Tally,
  pkg: GovernancePackage,
): Promise<void> {
  await trx('proposals')
    .where({ id: p.id, status: from })
    .update({
      status: 'closed',
      outcome: tally.outcome,
      tally_proof_id: proofId,
      tally_package: JSON.stringify(pkg),
      updated_at: trx.fn.now(),
    });
}

/** The admin close: refuses while the window is open (saying only when it ends). */
export async function closeProposalNow(db: Knex, proposalId: string, owner: string) {
  const p = (await db('proposals').where('id', proposalId).first()) as ProposalRow | undefined;
  if (!p) throw notFound('The proposal');
  assertOwner(owner, p, 'The proposal');
  const now = new Date();
  if (p.status === 'voting' && p.voting_ends_at && now < p.voting_ends_at)
    throw conflict(
      'voting_open',
      `The vote is open for ${secondsLeft(p.voting_ends_at, now)} more seconds.`,
      {
        timeRemainingSeconds: secondsLeft(p.voting_ends_at, now),
      },
    );
  if (p.status === 'review') throw conflict('not_in_vote', 'The proposal is still in review.');
  await closeProposal(db, proposalId, now);
  return publicProposal(db, proposalId);
}

/** Records what was executed (a hash of it) and publishes the final package. */
export async function recordExecution(db: Knex, proposalId: string, evidenceHash: string, owner: string) {
  await db.transaction(async (trx) => {
    const p = await lockProposal(trx, proposalId);
    assertOwner(owner, p, 'The proposal');
    if (p.status !== 'closed')
      throw conflict('not_closed', 'Only a closed proposal can record its execution.');
    if (p.outcome !== 'passed' || !p.tally_package)
      throw conflict(
        'nothing_to_execute',
        `The vote ended ${p.outcome ?? 'without an outcome'}; nothing is executed.`,
      );
    const at = iso(new Date());
    await appendEntry(trx, 'proposals', p.id, p, {
      stage: 'execution',
      action: 'executed',
      at,
      actorCommitment: null,
      data: { evidenceHash, winner: p.tally_package.tally.winner },
    });
    // The final package repeats the tallied one (whichever ballot scheme it was made under) with the
    // execution added to the chain.
    const { issuer: _i, signature: _s, log: _l, ...tallied } = p.tally_package;
    const entries = await loadEntries(trx, p.id);
    const proofId = newId('prf');
    const pkg = await appendPackageToLog(
      trx,
      signPackage<GovernancePackage>(
        {
          ...tallied,
          proofId,
          phase: 'executed',
          issuedAt: new Date().toISOString(),
          chain: { genesis: p.chain_genesis, head: entries[entries.length - 1]!.entryHash, entries },
        },
        serviceSigningKey(),
      ),
    );
    await trx('proposals')
      .where({ id: p.id, status: 'closed' })
      .update({
        status: 'executed',
        final_proof_id: proofId,
        final_package: JSON.stringify(pkg),
        updated_at: trx.fn.now(),
      });
  });
  return publicProposal(db, proposalId);
}

export type PublicProposal =
  | {
      proposalId: string;
      status: 'review';
      title: string;
      options: string[];
      /** Approvals of the review committee that open the vote, and how long it then runs (or until when). */
      reviewThreshold: number;
      votingSeconds: number | null;
      votingEndsAt: string | null;
    }
  | { proposalId: string; status: 'rejected'; title: string; options: string[] }
  | {
      proposalId: string;
      status: 'voting';
      title: string;
      options: string[];
      votingEndsAt: string;
      timeRemainingSeconds: number;
    }
  | {
      proposalId: string;
      status: 'decrypting';
      title: string;
      options: string[];
      votingEndsAt: string;
      /** Ballots cast (the vote is closed, so the count says nothing of momentum). */
      ballotCount: number;
      /** Trustees whose partial decryptions are in, and how many open the ballots. */
      trusteesDecrypted: number;
      trusteesNeeded: number;
    }
  | {
      proposalId: string;
      status: 'closed' | 'executed';
      title: string;
      options: string[];
      votingEndsAt: string;
      outcome: string;
      winner: string | null;
      tally: Record<string, number>;
      /** Every ballot cast: counted ones and spoiled ones (a vote that opens to none of the options). */
      ballotCount: number;
      countedCount: number;
      spoiledCount: number;
      tallyProofId: string;
      finalProofId: string | null;
      executed: boolean;
    };

/**
 * What anyone may see. During the vote: status and time remaining, nothing else (not the title, not a
 * count). A vote whose window has passed is closed here first, so the outcome never waits on a job.
 */
export async function publicProposal(db: Knex, proposalId: string): Promise<PublicProposal> {
  let p = (await db('proposals').where('id', proposalId).first()) as ProposalRow | undefined;
  if (!p) throw notFound('The proposal');
  const now = new Date();
  if (p.status === 'voting' && p.voting_ends_at && now >= p.voting_ends_at) {
    await closeProposal(db, proposalId, now);
    p = (await db('proposals').where('id', proposalId).first()) as ProposalRow;
  }
  // The question and its options are public from the start: voters must see what they vote on. Only
  // counts stay hidden until the close.
  const question = { title: p.title, options: p.options };
  if (p.status === 'review') {
    const committee = await committeeOrThrow(db, p.room_id, p.review_committee);
    return {
      proposalId: p.id,
      status: 'review',
      ...question,
      reviewThreshold: committee.threshold,
      votingSeconds: p.voting_seconds,
      votingEndsAt: p.voting_ends_at ? iso(p.voting_ends_at) : null,
    };
  }
  if (p.status === 'rejected') return { proposalId: p.id, status: p.status, ...question };
  if (p.status === 'voting')
    return {
      proposalId: p.id,
      status: 'voting',
      ...question,
      votingEndsAt: iso(p.voting_ends_at!),
      timeRemainingSeconds: secondsLeft(p.voting_ends_at!, now),
    };
  if (p.status === 'decrypting') {
    const [ballots, decrypted, trustees] = await Promise.all([
      db('ballots').where('proposal_id', p.id).count({ n: '*' }).first() as Promise<{ n: string }>,
      db('ballot_decryptions').where('proposal_id', p.id).count({ n: '*' }).first() as Promise<{ n: string }>,
      trusteesOf(db, p.room_id),
    ]);
    return {
      proposalId: p.id,
      status: 'decrypting',
      ...question,
      votingEndsAt: iso(p.voting_ends_at!),
      ballotCount: Number(ballots.n),
      trusteesDecrypted: Number(decrypted.n),
      trusteesNeeded: trustees!.threshold,
    };
  }
  const pkg = p.tally_package!;
  return {
    proposalId: p.id,
    status: p.status,
    title: p.title,
    options: p.options,
    votingEndsAt: iso(p.voting_ends_at!),
    outcome: pkg.tally.outcome,
    winner: pkg.tally.winner,
    tally: pkg.tally.counts,
    ballotCount: pkg.ballots.length,
    countedCount: pkg.tally.total,
    spoiledCount: pkg.ballots.length - pkg.tally.total,
    tallyProofId: p.tally_proof_id!,
    finalProofId: p.final_proof_id,
    executed: p.status === 'executed',
  };
}

/** The published package (the final one once executed), or a 409 while there is none yet. */
export async function proposalPackage(
  db: Knex,
  proposalId: string,
  phase?: 'tallied' | 'executed',
): Promise<GovernancePackage> {
  await publicProposal(db, proposalId);
  const p = (await db('proposals').where('id', proposalId).first()) as ProposalRow;
  const pkg =
    phase === 'tallied'
      ? p.tally_package
      : phase === 'executed'
        ? p.final_package
        : (p.final_package ?? p.tally_package);
  if (!pkg) throw conflict('not_published', 'No package is published for this proposal yet.');
  return pkg;
}

/** The admin's view: status and, after the close, the outcome; never a live count. */
export async function adminProposal(db: Knex, proposalId: string, owner: string) {
  const p = (await db('proposals').where('id', proposalId).first()) as ProposalRow | undefined;
  if (!p) throw notFound('The proposal');
  assertOwner(owner, p, 'The proposal');
  return publicProposal(db, proposalId);
}
