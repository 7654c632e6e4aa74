// An organization's own auctions, newest first: their stated terms and state as stored, nothing of
// bids; never another owner's.
import type { Db } from '../platform/db/knex';
import { decodeListCursor, listPage } from '../platform/paging';
import type { ListPage } from '../platform/paging';

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

/** The auctions `owner` (a license id, or 'operator') created. */
export async function listOwnedAuctions(
  db: Db,
  owner: string,
  opts: { limit: number; cursor?: string | undefined },
): Promise<ListPage<OwnedAuction>> {
  const after = decodeListCursor(opts.cursor, 'auctions');
  const q = db('auctions')
    .where({ owner })
    .select(
      'id',
      'room_id',
      'title',
      'pricing',
      'asset',
      'status',
      'bidding_ends_at',
      'reveal_ends_at',
      'created_at_iso',
    )
    .orderBy('id', 'desc')
    .limit(opts.limit + 1);
  if (after) q.where('id', '<', after);
  const rows = (await q) as Array<{
    id: string;
    room_id: string | null;
    title: string;
    pricing: string;
    asset: string;
    status: string;
    bidding_ends_at: string;
    reveal_ends_at: string;
    created_at_iso: string;
  }>;
  return listPage(rows, opts.limit, 'auctions', (r) => ({
    auctionId: r.id,
    roomId: r.room_id,
    title: r.title,
    pricing: r.pricing,
    asset: r.asset,
    status: r.status,
    biddingEndsAt: r.bidding_ends_at,
    revealEndsAt: r.reveal_ends_at,
    createdAt: r.created_at_iso,
  }));
}
