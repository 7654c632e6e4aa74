// An organization's own rooms and proposals, newest first: names, states and times, never a salt, a
// member, a ballot or a key; never another owner's.
import { ownedList } from '../proofs/owned-list';

export interface OwnedRoom {
  roomId: string;
  name: string;
  createdAt: string;
}

/** The rooms `owner` (a license id, or 'operator') created. */
export const listOwnedRooms = ownedList<{ id: string; name: string; created_at: Date }, OwnedRoom>({
  table: 'rooms',
  list: 'rooms',
  columns: ['id', 'name', 'created_at'],
  view: (r) => ({ roomId: r.id, name: r.name, createdAt: new Date(r.created_at).toISOString() }),
});

export interface OwnedProposal {
  proposalId: string;
  roomId: string;
  title: string;
  status: string;
  createdAt: string;
}

interface ProposalRow {
  id: string;
  room_id: string;
  title: string;
  status: string;
  created_at_iso: string;
}

/** The proposals `owner` created. */
export const listOwnedProposals = ownedList<ProposalRow, OwnedProposal>({
  table: 'proposals',
  list: 'proposals',
  columns: ['id', 'room_id', 'title', 'status', 'created_at_iso'],
  view: (r) => ({
    proposalId: r.id,
    roomId: r.room_id,
    title: r.title,
    status: r.status,
    createdAt: r.created_at_iso,
  }),
});
