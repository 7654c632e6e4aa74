// Sealed-bid auctions: commit during bidding, reveal in the reveal window, finalize after it (on the
// admin's call or the first read past the window) into a signed package on the transparency log.
// Until finalization the public view holds the stated rules, status and time remaining — nothing of bids.
import type { Knex } from 'knex';
import { AppError, conflict, notFound, unprocessable } from '../platform/errors';
import { systemClock } from '../platform/clock';
import type { Clock } from '../platform/clock';
import { newId } from '../platform/ids';
import { serviceSigningKey } from '../platform/keys';
import { findAsset } from '../chains/assets';
import { bidCommitment, bidMessage, legacyBidCommitment } from './commitments';
import { appendPackageToLog } from '../proofs/ledger';
import { assertOwner, isMember, roomOrThrow, walletCommitment } from '../governance/rooms';
import { verifyWalletSignature } from '../platform/wallet';
import { buildAuctionPackage } from './package';
import { ballotEphemeral } from '../governance/threshold';
import { trusteesOf } from '../governance/trustees';
import { sealedOpeningContext, trusteeProgress, trusteesOpened } from './sealed-openings';
import type { AuctionPackage, AuctionSubject } from './package';
import { statedRules } from './rules';
import type { BidRecord, DepositPolicy, Pricing } from './rules';

export interface AuctionRow {
  id: string;
  room_id: string | null;
  title: string;
  pricing: Pricing;
  asset: string;
  reserve: string;
  unrevealed_deposit: DepositPolicy;
  created_at_iso: string;
  bidding_ends_at: string;
  reveal_ends_at: string;
  status: 'open' | 'finalized';
  proof_id: string | null;
  package: AuctionPackage | null;
  owner: string;
  reveal_by: 'bidders' | 'trustees';
}

export interface BidRow {
  id: string;
  auction_id: string;
  bidder: string;
  commitment: string;
  deposit_ref: string;
  committed_at: string;
  amount: string | null;
  salt: string | null;
  revealed_at: string | null;
  sealed_opening: Buffer | null;
}

export interface CreateAuctionInput {
  title: string;
  roomId?: string | undefined;
  pricing: Pricing;
  asset: string;
  reserve?: string | undefined;
  unrevealedDeposit?: DepositPolicy | undefined;
  biddingEndsAt: Date;
  revealEndsAt: Date;
  /** `trustees`: each bid's opening is sealed to the room's trustees, who open every bid after the reveal window. */
  revealBy?: 'bidders' | 'trustees' | undefined;
}

const subjectOf = (a: AuctionRow): AuctionSubject => {
  const terms = {
    pricing: a.pricing,
    reserve: String(a.reserve),
    biddingEndsAt: a.bidding_ends_at,
    revealEndsAt: a.reveal_ends_at,
    unrevealedDeposit: a.unrevealed_deposit,
    ...(a.reveal_by === 'trustees' ? { revealBy: 'trustees' as const } : {}),
  };
  return {
    auctionId: a.id,
    title: a.title,
    visibility: a.room_id ? 'private-room' : 'public',
    asset: a.asset,
    ...terms,
    rules: statedRules(terms),
  };
};

export async function createAuction(
  db: Knex,
  input: CreateAuctionInput,
  owner: string,
  clock: Clock = systemClock,
) {
  if (!findAsset(input.asset))
    throw unprocessable('unknown_asset', `"${input.asset}" is not a payment asset.`);
  if (input.revealEndsAt <= input.biddingEndsAt)
    throw unprocessable('reveal_window', 'The reveal window must end after bidding ends.');
  if (input.roomId) await roomOrThrow(db, input.roomId, owner);
  if (input.revealBy === 'trustees') {
    if (!input.roomId)
      throw unprocessable('room_required', 'Bids are sealed to a room’s trustees: give the room (roomId).');
    const trustees = await trusteesOf(db, input.roomId);
    if (trustees?.status !== 'ready')
      throw conflict(
        'trustees_not_ready',
        trustees
          ? 'The room’s trustees have not finished their key ceremony.'
          : 'The room has no trustees (POST /api/governance/rooms/{roomId}/trustees).',
      );
  }
  const id = newId('auc');
  await db('auctions').insert({
    id,
    room_id: input.roomId ?? null,
    title: input.title,
    pricing: input.pricing,
    asset: input.asset,
    reserve: input.reserve ?? '0',
    unrevealed_deposit: input.unrevealedDeposit ?? 'refunded',
    created_at_iso: clock.now().toISOString(),
    bidding_ends_at: input.biddingEndsAt.toISOString(),
    reveal_ends_at: input.revealEndsAt.toISOString(),
    owner,
    reveal_by: input.revealBy ?? 'bidders',
  });
  return publicAuction(db, id, clock);
}

export async function auctionOrThrow(
  db: Knex | Knex.Transaction,
  id: string,
  lock = false,
): Promise<AuctionRow> {
  const q = db('auctions').where('id', id);
  const row = (await (lock ? q.forUpdate() : q).first()) as AuctionRow | undefined;
  if (!row) throw notFound('The auction');
  return row;
}

export const phaseOf = (a: AuctionRow, now: Date): 'bidding' | 'reveal' | 'closing' | 'finalized' =>
  a.status === 'finalized'
    ? 'finalized'
    : now < new Date(a.bidding_ends_at)
      ? 'bidding'
      : now < new Date(a.reveal_ends_at)
        ? 'reveal'
        : 'closing';

/** A sealed bid: the commitment, the deposit reference and the bidder's signature over both. */
export async function placeBid(
  db: Knex,
  auctionId: string,
  input: {
    bidder: string;
    commitment: string;
    depositRef: string;
    signature: string;
    sealedOpening?: string | undefined;
  },
  clock: Clock = systemClock,
) {
  return db.transaction(async (trx) => {
    const a = await auctionOrThrow(trx, auctionId, true);
    if (
      !verifyWalletSignature(
        input.bidder,
        bidMessage(auctionId, input.commitment, input.depositRef),
        input.signature,
      )
    )
      throw new AppError(403, 'signature_invalid', 'The wallet signature does not verify for this bid.');
    const now = clock.now();
    if (phaseOf(a, now) !== 'bidding')
      throw conflict('bidding_closed', 'Bidding has ended for this auction.');
    if (a.room_id) {
      const room = await roomOrThrow(trx, a.room_id);
      const member = walletCommitment(
        room,
        input.bidder,
        bidMessage(auctionId, input.commitment, input.depositRef),
        input.signature,
      );
      if (!(await isMember(trx, a.room_id, member)))
        throw new AppError(
          403,
          'not_a_member',
          'This private-room auction takes bids from room members only.',
        );
    }
    const sealed = input.sealedOpening === undefined ? null : Buffer.from(input.sealedOpening, 'base64url');
    if (a.reveal_by === 'trustees') {
      if (!sealed)
        throw unprocessable(
          'sealed_opening_required',
          'This auction takes each bid’s opening sealed to the room’s trustees.',
        );
      // Proved made for this commitment: a copy of another bid's sealed opening cannot ride along.
      if (!ballotEphemeral(sealed, sealedOpeningContext(auctionId, input.commitment)))
        throw unprocessable(
          'invalid_sealed_opening',
          'The sealed opening does not prove itself made for this auction and commitment.',
        );
    } else if (sealed)
      throw unprocessable(
        'sealed_opening_unexpected',
        'This auction’s bids are revealed by their bidders; send no sealed opening.',
      );
    const id = newId('bid');
    const committedAt = now.toISOString();
    const inserted = (await trx('bids')
      .insert({
        id,
        auction_id: auctionId,
        bidder: input.bidder,
        commitment: input.commitment,
        deposit_ref: input.depositRef,
        committed_at: committedAt,
        sealed_opening: sealed,
      })
      .onConflict()
      .ignore()
      .returning('id')) as unknown[];
    if (!inserted.length)
      throw conflict(
        'already_bid',
        'This wallet already has a bid in this auction (or the commitment is reused).',
      );
    return { bidId: id, auctionId, commitment: input.commitment, committedAt };
  });
}

/** Opens a bid. Refusals are the same whether the bidder has no bid or the opening does not match. */
export async function revealBid(
  db: Knex,
  auctionId: string,
  input: { bidder: string; amount: string; salt: string },
  clock: Clock = systemClock,
) {
  return db.transaction(async (trx) => {
    const a = await auctionOrThrow(trx, auctionId, true);
    const now = clock.now();
    const phase = phaseOf(a, now);
    if (phase === 'bidding')
      throw conflict('reveal_not_open', `Reveals open when bidding ends (${a.bidding_ends_at}).`);
    if (phase === 'finalized')
      throw conflict('auction_finalized', 'The auction is finalized; reveals are closed.');
    const bid = (await trx('bids')
      .where({ auction_id: auctionId, bidder: input.bidder })
      .forUpdate()
      .first()) as BidRow | undefined;
    const opens = (commit: typeof bidCommitment) =>
      commit(input.amount, input.salt, input.bidder) === bid?.commitment;
    // Bids committed before bidder tags open with the first formula.
    if (!bid || !(opens(bidCommitment) || opens(legacyBidCommitment)))
      throw unprocessable('reveal_mismatch', 'No bid of this bidder matches this amount and salt.');
    if (bid.revealed_at) throw conflict('already_revealed', 'This bid is already revealed.');
    const revealedAt = now.toISOString();
    await trx('bids')
      .where({ id: bid.id })
      .whereNull('revealed_at')
      .update({
        amount: input.amount,
        salt: input.salt,
        revealed_at: revealedAt,
        reveal_status: phase === 'reveal' ? 'in_time' : 'late',
        revealed_by: 'bidder',
      });
    return { auctionId, commitment: bid.commitment, revealedAt, late: phase !== 'reveal' };
  });
}

const recordOf = (b: BidRow): BidRecord => ({
  commitment: b.commitment,
  bidder: b.bidder,
  depositRef: b.deposit_ref,
  committedAt: b.committed_at,
  reveal: b.revealed_at ? { amount: b.amount!, salt: b.salt!, revealedAt: b.revealed_at } : null,
});

/** Decides and publishes an auction whose reveal window has passed; false when not yet due or already done. */
export async function finalizeAuction(db: Knex, auctionId: string, now = new Date()): Promise<boolean> {
  return db.transaction(async (trx) => {
    const a = await auctionOrThrow(trx, auctionId, true);
    if (phaseOf(a, now) !== 'closing') return false;
    // Under trustees the decision waits until they have opened the sealed bids.
    if (a.reveal_by === 'trustees' && !(await trusteesOpened(trx, a))) return false;
    const bids = ((await trx('bids').where('auction_id', auctionId)) as BidRow[]).map(recordOf);
    const proofId = newId('prf');
    const pkg = await appendPackageToLog(
      trx,
      buildAuctionPackage({ proofId, issuedAt: now, subject: subjectOf(a), bids }, serviceSigningKey()),
    );
    await trx('auctions')
      .where({ id: auctionId, status: 'open' })
      .update({
        status: 'finalized',
        proof_id: proofId,
        package: JSON.stringify(pkg),
        updated_at: trx.fn.now(),
      });
    return true;
  });
}

export async function finalizeAuctionNow(
  db: Knex,
  auctionId: string,
  owner: string,
  clock: Clock = systemClock,
) {
  const a = await auctionOrThrow(db, auctionId);
  assertOwner(owner, a, 'The auction');
  const now = clock.now();
  const phase = phaseOf(a, now);
  if (phase === 'bidding' || phase === 'reveal')
    throw conflict(
      'auction_open',
      `The auction is in its ${phase} window until ${phase === 'bidding' ? a.bidding_ends_at : a.reveal_ends_at}.`,
    );
  await finalizeAuction(db, auctionId, now);
  return publicAuction(db, auctionId, clock);
}

async function trusteeKeyOf(db: Knex, roomId: string) {
  const t = (await trusteesOf(db, roomId))!;
  return {
    jointKey: t.joint_key!,
    threshold: t.threshold,
    ceremony: `/api/governance/rooms/${roomId}/trustees`,
  };
}

const secondsUntil = (t: string, now: Date) => Math.max(0, Math.ceil((Date.parse(t) - now.getTime()) / 1000));

/** The public view; finalizes first when the reveal window has passed. */
export async function publicAuction(db: Knex, auctionId: string, clock: Clock = systemClock) {
  let a = await auctionOrThrow(db, auctionId);
  const now = clock.now();
  if (phaseOf(a, now) === 'closing') {
    await finalizeAuction(db, auctionId, now);
    a = await auctionOrThrow(db, auctionId);
  }
  const subject = subjectOf(a);
  const phase = phaseOf(a, now);
  const base = {
    auctionId: a.id,
    title: a.title,
    visibility: subject.visibility,
    asset: a.asset,
    pricing: a.pricing,
    reserve: subject.reserve,
    biddingEndsAt: a.bidding_ends_at,
    revealEndsAt: a.reveal_ends_at,
    unrevealedDeposit: a.unrevealed_deposit,
    rules: subject.rules,
    // What a bidder seals its opening to, when the room's trustees reveal the bids.
    ...(a.reveal_by === 'trustees' ? { trustees: await trusteeKeyOf(db, a.room_id!) } : {}),
  };
  if (phase === 'closing') {
    // Past the reveal window and not decided: the trustees have yet to open the sealed bids.
    const { decrypted, needed } = await trusteeProgress(db, a);
    return {
      ...base,
      status: 'awaiting_trustees' as const,
      timeRemainingSeconds: 0,
      trusteesDecrypted: decrypted,
      trusteesNeeded: needed,
      result: null,
    };
  }
  if (phase !== 'finalized') {
    const until = phase === 'bidding' ? a.bidding_ends_at : a.reveal_ends_at;
    return { ...base, status: phase, timeRemainingSeconds: secondsUntil(until, now), result: null };
  }
  const pkg = a.package!;
  return {
    ...base,
    status: 'finalized' as const,
    timeRemainingSeconds: 0,
    result: {
      winner: pkg.outcome.winner,
      price: pkg.outcome.price,
      reason: pkg.outcome.reason,
      counts: pkg.outcome.counts,
      proofId: a.proof_id!,
      commitmentsRoot: pkg.commitmentsRoot,
      revealsRoot: pkg.revealsRoot,
    },
  };
}

export async function auctionPackage(
  db: Knex,
  auctionId: string,
  clock: Clock = systemClock,
): Promise<AuctionPackage> {
  await publicAuction(db, auctionId, clock);
  const a = await auctionOrThrow(db, auctionId);
  if (!a.package) throw conflict('not_published', 'The auction is not finalized yet; no package.');
  return a.package;
}
