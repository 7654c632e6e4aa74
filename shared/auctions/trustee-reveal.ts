// The trustees' reveal of a sealed auction: after the reveal window they fetch the sealed openings and
// post, per bid, a partial decryption with its Chaum–Pedersen proof (each checked against the trustee's
// verification share; one that fails refuses the set). When the threshold of trustees have posted, every
// bid its bidder did not reveal is opened and, where the opening matches its commitment, recorded as
// revealed by the trustees; the auction is then decided as usual.
import type { Knex } from 'knex';
import { AppError, conflict, unprocessable } from '../platform/errors';
import { systemClock } from '../platform/clock';
import type { Clock } from '../platform/clock';
import { bidCommitment } from './commitments';
import {
  DECRYPTION_KIND,
  ballotEphemeral,
  combinePartials,
  decryptionStatement,
  verifyPartialDecryption,
  verifyTrusteeSignature,
} from '../governance/threshold';
import type { PartialDecryption } from '../governance/threshold';
import { trusteesOf } from '../governance/trustees';
import { auctionOrThrow, finalizeAuction, phaseOf } from './auctions';
import type { AuctionRow, BidRow } from './auctions';
import { openSealedOpening, sealedOpeningContext } from './sealed-openings';

const notTrustees = () =>
  conflict('not_trustees', 'This auction’s bids are revealed by their bidders, not by trustees.');

/** Nothing of bids before the reveal window ends: not their openings, not even their number. */
function assertAfterReveal(a: AuctionRow, now: Date) {
  if (a.reveal_by !== 'trustees') throw notTrustees();
  const phase = phaseOf(a, now);
  if (phase === 'bidding' || phase === 'reveal')
    throw conflict(
      'reveal_open',
      `The trustees open the bids after the reveal window (${a.reveal_ends_at}).`,
    );
}

/** The sealed openings, for the trustees: after the reveal window, in bid-id order. */
export async function sealedBids(db: Knex, auctionId: string, clock: Clock = systemClock) {
  const a = await auctionOrThrow(db, auctionId);
  assertAfterReveal(a, clock.now());
  const bids = (await db('bids').where('auction_id', auctionId).orderBy('id')) as BidRow[];
  return {
    auctionId,
    roomId: a.room_id!,
    bids: bids.map((b) => ({
      bidId: b.id,
      commitment: b.commitment,
      sealedOpening: b.sealed_opening!.toString('base64url'),
    })),
  };
}

export interface AuctionDecryptionInput {
  trustee: number;
  shares: Array<PartialDecryption & { bidId: string }>;
  /** The trustee's ed25519 signature over its decryption statement (governance/threshold.ts). */
  signature: string;
}

export async function submitAuctionDecryption(
  db: Knex,
  auctionId: string,
  input: AuctionDecryptionInput,
  clock: Clock = systemClock,
) {
  const result = await db.transaction(async (trx) => {
    const a = await auctionOrThrow(trx, auctionId, true);
    if (a.status === 'finalized') throw conflict('auction_finalized', 'The auction is decided already.');
    assertAfterReveal(a, clock.now());
    const trustees = (await trusteesOf(trx, a.room_id!))!;
    const verification = trustees.verification_shares?.[input.trustee - 1];
    const member = trustees.trustees.find((t) => t.index === input.trustee);
    if (!verification || !member)
      throw unprocessable(
        'unknown_trustee',
        `Trustees of this room are numbered 1 to ${trustees.trustees.length}.`,
      );
    // Cheapest first: the trustee's signature over the set, and whether it posted already, before any
    // proof is checked (only a trustee makes the service spend curve arithmetic here).
    const statement = decryptionStatement({ auctionId }, input.shares);
    if (!verifyTrusteeSignature(member, a.room_id!, DECRYPTION_KIND, statement, input.signature))
      throw new AppError(
        403,
        'signature_invalid',
        'The signature is not this trustee’s over these decryptions (proof-exchange/governance/trustee/v1, kind decryption).',
      );
    if (
      await trx('auction_decryptions').where({ auction_id: auctionId, trustee_index: input.trustee }).first()
    )
      throw conflict('already_decrypted', 'This trustee has already decrypted these bids.');
    const bids = (await trx('bids').where('auction_id', auctionId).orderBy('id')) as BidRow[];
    const byBid = new Map(input.shares.map((s) => [s.bidId, s]));
    if (
      byBid.size !== input.shares.length ||
      byBid.size !== bids.length ||
      bids.some((b) => !byBid.has(b.id))
    )
      throw unprocessable(
        'decryption_incomplete',
        `Give one partial decryption for each of the ${bids.length} bids, and no other.`,
      );
    for (const b of bids) {
      const R = ballotEphemeral(b.sealed_opening!, sealedOpeningContext(auctionId, b.commitment))!;
      if (
        !verifyPartialDecryption(
          byBid.get(b.id)!,
          verification,
          input.trustee,
          sealedOpeningContext(auctionId, b.commitment),
          R,
        )
      )
        throw unprocessable(
          'decryption_invalid',
          `The partial decryption of bid ${b.id} does not prove itself against trustee ${input.trustee}'s verification share.`,
        );
    }
    const inserted = (await trx('auction_decryptions')
      .insert({
        auction_id: auctionId,
        trustee_index: input.trustee,
        shares: JSON.stringify(bids.map((b) => byBid.get(b.id)!)),
        signature: input.signature,
      })
      .onConflict(['auction_id', 'trustee_index'])
      .ignore()
      .returning('trustee_index')) as unknown[];
    if (!inserted.length)
      throw conflict('already_decrypted', 'This trustee has already decrypted these bids.');
    const posted = (await trx('auction_decryptions')
      .where('auction_id', auctionId)
      .orderBy('trustee_index')) as Array<{
      trustee_index: number;
      shares: Array<PartialDecryption & { bidId: string }>;
    }>;
    if (posted.length >= trustees.threshold) {
      const used = posted.slice(0, trustees.threshold);
      for (const b of bids.filter((x) => !x.revealed_at)) {
        const shared = combinePartials(
          used.map((t) => ({ index: t.trustee_index, share: t.shares.find((s) => s.bidId === b.id)!.share })),
        );
        const opening = openSealedOpening(
          shared,
          trustees.joint_key!,
          auctionId,
          b.commitment,
          b.sealed_opening!,
        );
        // An opening that does not match its commitment reveals nothing: the bid stays unrevealed.
        if (!opening || bidCommitment(opening.amount, opening.salt, b.bidder) !== b.commitment) continue;
        await trx('bids').where({ id: b.id }).whereNull('revealed_at').update({
          amount: opening.amount,
          salt: opening.salt,
          // Its opening was delivered, sealed, with the bid: it counts as revealed when bidding ended.
          revealed_at: a.bidding_ends_at,
          reveal_status: 'in_time',
          revealed_by: 'trustees',
        });
      }
    }
    return {
      auctionId,
      trustee: input.trustee,
      trusteesDecrypted: posted.length,
      trusteesNeeded: trustees.threshold,
    };
  });
  // Decided in its own transaction once the trustees have opened the bids (a no-op before).
  await finalizeAuction(db, auctionId, clock.now());
  return result;
}
