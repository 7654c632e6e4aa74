// An organization's own treasury requests, newest first: the terms it recorded and their state, never
// another owner's.
import { ownedList } from '../proofs/owned-list';

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

interface Row {
  id: string;
  room_id: string;
  committee: string;
  operation: string;
  asset: string;
  amount: string;
  status: string;
  created_at_iso: string;
}

/** The treasury requests `owner` (a license id, or 'operator') made. */
export const listOwnedTreasuryRequests = ownedList<Row, OwnedTreasuryRequest>({
  table: 'treasury_requests',
  list: 'treasury',
  columns: ['id', 'room_id', 'committee', 'operation', 'asset', 'amount', 'status', 'created_at_iso'],
  view: (r) => ({
    requestId: r.id,
    roomId: r.room_id,
    committee: r.committee,
    operation: r.operation,
    asset: r.asset,
    amount: String(r.amount),
    status: r.status,
    createdAt: r.created_at_iso,
  }),
});
