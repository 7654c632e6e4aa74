// An organization's own treasury requests, newest first: the terms it recorded and their state, never
// another owner's.
import type { Db } from '../platform/db/knex';
import { decodeListCursor, listPage } from '../platform/paging';
import type { ListPage } from '../platform/paging';

export interface OwnedTreasuryRequest {
  requestId: string;
  roomId: string;
  committee: string;
  operation: string;
  asset: string;
  amount: string;
  status: string;
  createdAt: string;
}

/** The treasury requests `owner` (a license id, or 'operator') made. */
export async function listOwnedTreasuryRequests(
  db: Db,
  owner: string,
  opts: { limit: number; cursor?: string | undefined },
): Promise<ListPage<OwnedTreasuryRequest>> {
  const after = decodeListCursor(opts.cursor, 'treasury');
  const q = db('treasury_requests')
    .where({ owner })
    .select('id', 'room_id', 'committee', 'operation', 'asset', 'amount', 'status', 'created_at_iso')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1);
  if (after) q.where('id', '<', after);
  const rows = (await q) as Array<{
    id: string;
    room_id: string;
    committee: string;
    operation: string;
    asset: string;
    amount: string;
    status: string;
    created_at_iso: string;
  }>;
  return listPage(rows, opts.limit, 'treasury', (r) => ({
    requestId: r.id,
    roomId: r.room_id,
    committee: r.committee,
    operation: r.operation,
    asset: r.asset,
    amount: String(r.amount),
    status: r.status,
    createdAt: r.created_at_iso,
  }));
}
