// Proposals: Proposal → Review → Vote → Execution → Proof. Creating and reviewing one, recording its
// execution, and what the public and its admin see of it; casting is ballots.ts, the close close.ts.
// Until the close nothing here returns or logs anything but status and time remaining.
import type { Knex } from 'knex';
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import { AppError, conflict, notFound, unprocessable } from '../platform/errors';
import { systemClock } from '../platform/clock';
import type { Clock } from '../platform/clock';
import { newId } from '../platform/ids';
import { serviceSigningKey } from '../platform/keys';
import { signPackage } from '../proofs/envelope';
import { reviewMessage } from './commitments';
import { appendEntry, appendPackageToLog, loadEntries } from '../proofs/ledger';
import { governanceGenesis } from './package';
import type { GovernancePackage } from './package';
import { assertOwner, committeeOrThrow, roomOrThrow, walletCommitment } from './rooms';
import { newProposalBallotKey } from './ballot-key';
import { trusteesOf } from './trustees';
import { closeProposal } from './close';
import { iso, lockProposal, secondsLeft, publicKeyOf } from './proposal-row';
import type { ProposalStatus, ProposalRow } from './proposal-row';

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

export async function createProposal(
  db: Knex,
  input: CreateProposalInput,
  owner: string,
  clock: Clock = systemClock,
) {
  if (new Set(input.options).size !== input.options.length)
    throw unprocessable('duplicate_option', 'Every option must be different.');
  if ((input.votingEndsAt === undefined) === (input.votingSeconds === undefined))
    throw unprocessable('voting_window', 'Give exactly one of votingEndsAt or votingSeconds.');
  return db.transaction(async (trx) => {
    await roomOrThrow(trx, input.roomId, owner);
    const committee = await committeeOrThrow(trx, input.roomId, input.reviewCommittee);
    const id = newId('prop');
    const genesis = governanceGenesis(id);
    const createdAt = iso(clock.now());
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
  clock: Clock = systemClock,
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
    const at = iso(clock.now());
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
      const openedAt = clock.now();
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

/** The admin close: refuses while the window is open (saying only when it ends). */
export async function closeProposalNow(
  db: Knex,
  proposalId: string,
  owner: string,
  clock: Clock = systemClock,
) {
  const p = (await db('proposals').where('id', proposalId).first()) as ProposalRow | undefined;
  if (!p) throw notFound('The proposal');
  assertOwner(owner, p, 'The proposal');
  const now = clock.now();
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
  return publicProposal(db, proposalId, clock);
}

/** Records what was executed (a hash of it) and publishes the final package. */
export async function recordExecution(
  db: Knex,
  proposalId: string,
  evidenceHash: string,
  owner: string,
  clock: Clock = systemClock,
) {
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
    const at = iso(clock.now());
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
          issuedAt: at,
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
  return publicProposal(db, proposalId, clock);
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
export async function publicProposal(
  db: Knex,
  proposalId: string,
  clock: Clock = systemClock,
): Promise<PublicProposal> {
  let p = (await db('proposals').where('id', proposalId).first()) as ProposalRow | undefined;
  if (!p) throw notFound('The proposal');
  const now = clock.now();
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
  clock: Clock = systemClock,
): Promise<GovernancePackage> {
  await publicProposal(db, proposalId, clock);
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
export async function adminProposal(db: Knex, proposalId: string, owner: string, clock: Clock = systemClock) {
  const p = (await db('proposals').where('id', proposalId).first()) as ProposalRow | undefined;
  if (!p) throw notFound('The proposal');
  assertOwner(owner, p, 'The proposal');
  return publicProposal(db, proposalId, clock);
}
