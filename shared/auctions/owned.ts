// An organization's own auctions, newest first: their stated terms and state as stored, nothing of
// bids; never another owner's.
import { ownedList } from '../proofs/owned-list';

export interface OwnedAuction {
  auctionId: string;
  roomId: string | null;
  title: string;
  pricing: string;
  asset: string;
  status: string;
  biddingEndsAt: string;
  revealEndsAt: string;
  createdAt: string;
}

interface Row {
  id: string;
  room_id: string | null;
  title: string;
  pricing: string;
  asset: string;
  status: string;
  bidding_ends_at: string;
  reveal_ends_at: string;
  created_at_iso: string;
}

/** The auctions `owner` (a license id, or 'operator') created. */
export const listOwnedAuctions = ownedList<Row, OwnedAuction>({
  table: 'auctions',
  list: 'auctions',
  columns: [
    'id',
    'room_id',
    'title',
    'pricing',
    'asset',
    'status',
    'bidding_ends_at',
    'reveal_ends_at',
    'created_at_iso',
  ],
  view: (r) => ({
    auctionId: r.id,
    roomId: r.room_id,
    title: r.title,
    pricing: r.pricing,
    asset: r.asset,
    status: r.status,
    biddingEndsAt: r.bidding_ends_at,
    revealEndsAt: r.reveal_ends_at,
    createdAt: r.created_at_iso,
  }),
});
