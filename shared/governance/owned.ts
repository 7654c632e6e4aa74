// An organization's own rooms and proposals, newest first: names, states and times, never a salt, a
// member, a ballot or a key; never another owner's.
import type { Db } from '../platform/db/knex';
import { decodeListCursor, listPage } from '../platform/paging';
import type { ListPage } from '../platform/paging';

type Opts = { limit: number; cursor?: string | undefined };

export interface OwnedRoom {
  roomId: string;
  name: string;
  createdAt: string;
}

/** The rooms `owner` (a license id, or 'operator') created. */
export async function listOwnedRooms(db: Db, owner: string, opts: Opts): Promise<ListPage<OwnedRoom>> {
  const after = decodeListCursor(opts.cursor, 'rooms');
  const q = db('rooms')
    .where({ owner })
    .select('id', 'name', 'created_at')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1);
  if (after) q.where('id', '<', after);
  const rows = (await q) as Array<{ id: string; name: string; created_at: Date }>;
  return listPage(rows, opts.limit, 'rooms', (r) => ({
    roomId: r.id,
    name: r.name,
    createdAt: new Date(r.created_at).toISOString(),
  }));
}

export interface OwnedProposal {
  proposalId: string;
  roomId: string;
  title: string;
  status: string;
  createdAt: string;
}

/** The proposals `owner` created. */
export async function listOwnedProposals(
  db: Db,
  owner: string,
  opts: Opts,
): Promise<ListPage<OwnedProposal>> {
  const after = decodeListCursor(opts.cursor, 'proposals');
  const q = db('proposals')
    .where({ owner })
    .select('id', 'room_id', 'title', 'status', 'created_at_iso')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1);
  if (after) q.where('id', '<', after);
  const rows = (await q) as Array<{
    id: string;
    room_id: string;
    title: string;
    status: string;
    created_at_iso: string;
  }>;
  return listPage(rows, opts.limit, 'proposals', (r) => ({
    proposalId: r.id,
    roomId: r.room_id,
    title: r.title,
    status: r.status,
    createdAt: r.created_at_iso,
  }));
}
