// Closing a vote: on the first read past its window, open every vote (or seal the ballots for the
// trustees to decrypt), tally, and publish the package on the log, all in one transaction.
import type { Knex } from 'knex';
import { newId } from '../platform/ids';
import { serviceSigningKey } from '../platform/keys';
import { BALLOT_TREE_DEPTH, decryptVote } from './ballot-protocol';
import type { Groth16ProofJson } from './ballot-protocol';
import { appendEntry, appendPackageToLog, loadEntries } from '../proofs/ledger';
import { ballotsRoot, byNullifier, tallyBallots, tallyHash } from './tally';
import { buildGovernancePackage } from './package';
import type { GovernancePackage } from './package';
import type { PublishedBallot, Tally } from './tally';
import { committeeOrThrow, memberCount } from './rooms';
import { proposalBallotKey } from './ballot-key';
import { iso, lockProposal, publicKeyOf } from './proposal-row';
import type { ProposalStatus, ProposalRow } from './proposal-row';

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
    const common = await tallyCommon(trx, p, proofId, ballots, now);
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
  issuedAt: Date,
) {
  const identities = (await trx('room_identities').where('room_id', p.room_id).count({ n: '*' }).first()) as {
    n: string;
  };
  const committee = await committeeOrThrow(trx, p.room_id, p.review_committee);
  return {
    proofId,
    phase: 'tallied' as const,
    issuedAt,
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
