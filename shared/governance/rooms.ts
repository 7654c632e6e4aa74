// Rooms and committees: members kept only as commitments under a private room salt (sealed at rest); a
// member proves membership with a wallet signature (over a review, a bid, or a challenge the service
// issued). Ballots use the room's identity tree instead (identities.ts).
import { createHmac, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { safeEqual } from '../platform/crypto';
import { AppError, conflict, notFound, unprocessable } from '../platform/errors';
import { verifyWalletSignature } from '../platform/wallet';
import { newId } from '../platform/ids';
import { memberCommitment, membershipMessage } from './commitments';
import { challengeKey, openRoomSalt, sealRoomSalt } from './ballot-key';

type Conn = Knex | Knex.Transaction;

export interface RoomRow {
  id: string;
  name: string;
  /** Opened from `salt_sealed` on read; the plaintext column is empty once sealed. */
  salt: string;
  owner: string;
  created_at: Date;
}

interface StoredRoom extends Omit<RoomRow, 'salt'> {
  salt: string | null;
  salt_sealed: Buffer | null;
}

/** A room of the first schema keeps its salt in plaintext: seal it, clear the plaintext, return it. */
async function sealLegacySalt(db: Conn, room: StoredRoom): Promise<string> {
  const salt = room.salt!;
  await db('rooms')
    .where({ id: room.id })
    .whereNull('salt_sealed')
    .update({ salt_sealed: sealRoomSalt(room.id, salt), salt: null });
  return salt;
}

/** Seals the salt of every room still holding it in plaintext (run at release). Returns how many. */
export async function sealLegacyRoomSalts(db: Knex): Promise<number> {
  const rooms = (await db('rooms').whereNull('salt_sealed').whereNotNull('salt')) as StoredRoom[];
  for (const room of rooms) await sealLegacySalt(db, room);
  return rooms.length;
}

/** Who administers a room and what hangs off it: the operator, or one license. */
export function assertOwner(owner: string, row: { owner: string }, what: string): void {
  if (owner !== 'operator' && owner !== row.owner) throw notFound(what);
}

export async function roomOrThrow(db: Conn, roomId: string, owner?: string): Promise<RoomRow> {
  const stored = (await db('rooms').where('id', roomId).first()) as StoredRoom | undefined;
  if (!stored) throw notFound('The room');
  if (owner !== undefined) assertOwner(owner, stored, 'The room');
  const { salt_sealed: sealed, ...room } = stored;
  return { ...room, salt: sealed ? openRoomSalt(room.id, sealed) : await sealLegacySalt(db, stored) };
}

function uniqueKeys(keys: readonly string[]): string[] {
  const set = new Set(keys);
  if (set.size !== keys.length) throw unprocessable('duplicate_member', 'A wallet key is listed twice.');
  return [...set];
}

export async function createRoom(
  db: Knex,
  input: { name: string; members: string[] },
  owner: string,
): Promise<{ room: RoomRow; memberCommitments: string[] }> {
  const keys = uniqueKeys(input.members);
  const salt = randomBytes(32).toString('hex');
  const id = newId('room');
  const commitments = keys.map((k) => memberCommitment(salt, k));
  return db.transaction(async (trx) => {
    const [room] = (await trx('rooms')
      .insert({ id, name: input.name, salt_sealed: sealRoomSalt(id, salt), owner })
      .returning(['id', 'name', 'owner', 'created_at'])) as Array<Omit<RoomRow, 'salt'>>;
    if (commitments.length)
      await trx('room_members').insert(commitments.map((c) => ({ room_id: id, member_commitment: c })));
    return { room: { ...room!, salt }, memberCommitments: commitments };
  });
}

export async function addMembers(
  db: Knex,
  roomId: string,
  members: string[],
  owner: string,
): Promise<{ added: string[]; memberCount: number }> {
  const keys = uniqueKeys(members);
  return db.transaction(async (trx) => {
    const room = await roomOrThrow(trx, roomId, owner);
    const commitments = keys.map((k) => memberCommitment(room.salt, k));
    const added = (await trx('room_members')
      .insert(commitments.map((c) => ({ room_id: roomId, member_commitment: c })))
      .onConflict(['room_id', 'member_commitment'])
      .ignore()
      .returning('member_commitment')) as Array<{ member_commitment: string }>;
    return { added: added.map((a) => a.member_commitment), memberCount: await memberCount(trx, roomId) };
  });
}

export async function memberCount(db: Conn, roomId: string): Promise<number> {
  const row = (await db('room_members').where('room_id', roomId).count({ n: '*' }).first()) as { n: string };
  return Number(row.n);
}

export async function isMember(db: Conn, roomId: string, commitment: string): Promise<boolean> {
  return !!(await db('room_members').where({ room_id: roomId, member_commitment: commitment }).first());
}

export interface CommitteeRow {
  room_id: string;
  slug: string;
  name: string;
  threshold: number;
}

export async function createCommittee(
  db: Knex,
  roomId: string,
  input: { slug: string; name: string; members: string[]; threshold: number },
  owner: string,
): Promise<{ committee: CommitteeRow; memberCommitments: string[] }> {
  const keys = uniqueKeys(input.members);
  if (input.threshold > keys.length)
    throw unprocessable(
      'threshold_too_high',
      `The threshold (${input.threshold}) is larger than the committee (${keys.length} members).`,
    );
  return db.transaction(async (trx) => {
    const room = await roomOrThrow(trx, roomId, owner);
    const commitments = keys.map((k) => memberCommitment(room.salt, k));
    const known = (await trx('room_members')
      .where('room_id', roomId)
      .whereIn('member_commitment', commitments)
      .pluck('member_commitment')) as string[];
    if (known.length !== commitments.length)
      throw unprocessable('not_a_member', 'Every committee member must first be a member of the room.');
    const exists = await trx('committees').where({ room_id: roomId, slug: input.slug }).first();
    if (exists) throw conflict('committee_exists', `The room already has a committee "${input.slug}".`);
    const [committee] = (await trx('committees')
      .insert({ room_id: roomId, slug: input.slug, name: input.name, threshold: input.threshold })
      .returning(['room_id', 'slug', 'name', 'threshold'])) as CommitteeRow[];
    await trx('committee_members').insert(
      commitments.map((c) => ({ room_id: roomId, committee: input.slug, member_commitment: c })),
    );
    return { committee: committee!, memberCommitments: commitments };
  });
}

export async function committeeOrThrow(
  db: Conn,
  roomId: string,
  slug: string,
): Promise<CommitteeRow & { members: string[] }> {
  const committee = (await db('committees').where({ room_id: roomId, slug }).first()) as
    CommitteeRow | undefined;
  if (!committee) throw unprocessable('unknown_committee', `The room has no committee "${slug}".`);
  const members = (await db('committee_members')
    .where({ room_id: roomId, committee: slug })
    .pluck('member_commitment')) as string[];
  return { ...committee, members };
}

export async function roomView(db: Knex, roomId: string, owner: string) {
  const room = await roomOrThrow(db, roomId, owner);
  const committees = (await db('committees').where('room_id', roomId).orderBy('slug')) as CommitteeRow[];
  const sizes = (await db('committee_members')
    .where('room_id', roomId)
    .groupBy('committee')
    .select('committee')
    .count({ n: '*' })) as Array<{ committee: string; n: string }>;
  return {
    roomId: room.id,
    name: room.name,
    memberCount: await memberCount(db, roomId),
    committees: committees.map((c) => ({
      slug: c.slug,
      name: c.name,
      threshold: c.threshold,
      size: Number(sizes.find((s) => s.committee === c.slug)?.n ?? 0),
    })),
    createdAt: room.created_at.toISOString(),
  };
}

/**
 * A wallet proves it is the member it claims: the signature must hold before membership is looked at,
 * so nobody without the key learns whether a key is a member.
 */
export function walletCommitment(
  room: Pick<RoomRow, 'salt'>,
  walletPublicKey: string,
  message: string,
  signature: string,
): string {
  if (!verifyWalletSignature(walletPublicKey, message, signature))
    throw new AppError(403, 'signature_invalid', 'The wallet signature does not verify for this message.');
  return memberCommitment(room.salt, walletPublicKey);
}

const CHALLENGE_TTL_MS = 5 * 60_000;

const challengeMac = (body: string): string =>
  createHmac('sha256', challengeKey()).update(body).digest('hex').slice(0, 32);

/** A stateless challenge: room, nonce, expiry and a MAC, so any web process can check it. */
export function membershipChallenge(
  roomId: string,
  now = new Date(),
): { challenge: string; expiresAt: string } {
  const expiresAt = new Date(now.getTime() + CHALLENGE_TTL_MS).toISOString();
  const body = `room:${roomId}\nnonce:${randomBytes(16).toString('hex')}\nexpires:${expiresAt}`;
  return { challenge: `${body}\nmac:${challengeMac(body)}`, expiresAt };
}

export async function proveMembership(
  db: Knex,
  roomId: string,
  input: { walletPublicKey: string; challenge: string; signature: string },
  now = new Date(),
): Promise<{ member: boolean; memberCommitment?: string }> {
  const room = await roomOrThrow(db, roomId);
  const m = /^(room:(\S+)\nnonce:[0-9a-f]{32}\nexpires:(\S+))\nmac:([0-9a-f]{32})$/.exec(input.challenge);
  if (!m || m[2] !== roomId || !safeEqual(challengeMac(m[1]!), m[4]!))
    throw unprocessable('challenge_invalid', 'The challenge was not issued by this service for this room.');
  if (Date.parse(m[3]!) <= now.getTime())
    throw unprocessable('challenge_expired', 'The challenge has expired; ask for a new one.');
  const commitment = walletCommitment(
    room,
    input.walletPublicKey,
    membershipMessage(input.challenge),
    input.signature,
  );
  return (await isMember(db, roomId, commitment))
    ? { member: true, memberCommitment: commitment }
    : { member: false };
}
