// A room's anonymous voters: identity commitments (Poseidon of a secret only the member holds) in a
// fixed-depth Poseidon tree, and the history of the tree's roots. A ballot proves membership against a
// recent root without saying which leaf; nothing here records which identity belongs to which wallet.
import type { Knex } from 'knex';
import { AppError, conflict, unprocessable } from '../platform/errors';
import {
  BALLOT_TREE_DEPTH,
  MAX_ROOM_IDENTITIES,
  isFieldElement,
  memberTreeLevels,
  memberTreeRoot,
  zeroHashes,
} from './ballot-protocol';
import { identityMessage } from './commitments';
import { isMember, roomOrThrow, walletCommitment } from './rooms';

type Conn = Knex | Knex.Transaction;

/**
 * Ballots are taken against the room's last ROOT_HISTORY roots: a voter who proved just before another
 * member joined is not turned away, and a proof against an old tree (a member since removed from the
 * count, a long-kept ballot) is.
 */
export const ROOT_HISTORY = 8;

async function leaves(db: Conn, roomId: string): Promise<string[]> {
  return (await db('room_identities')
    .where('room_id', roomId)
    .orderBy('leaf_index')
    .pluck('identity_commitment')) as string[];
}

/** The roots a ballot may be proved against, newest first. */
export async function acceptedRoots(db: Conn, roomId: string): Promise<string[]> {
  return (await db('room_roots')
    .where('room_id', roomId)
    .orderBy('seq', 'desc')
    .limit(ROOT_HISTORY)
    .pluck('root')) as string[];
}

function checkCommitments(commitments: readonly string[]): void {
  if (new Set(commitments).size !== commitments.length)
    throw unprocessable('duplicate_identity', 'An identity commitment is listed twice.');
  if (!commitments.every((c) => isFieldElement(c) && c !== '0'))
    throw unprocessable(
      'invalid_identity',
      'An identity commitment is a non-zero BN254 field element, decimal.',
    );
}

/**
 * Appends identities to the room's tree under the room's row lock (leaf indexes stay dense and the
 * root history in order) and records the new root.
 */
async function appendIdentities(trx: Knex.Transaction, roomId: string, commitments: readonly string[]) {
  await trx('rooms').where('id', roomId).forUpdate().first();
  const existing = await leaves(trx, roomId);
  const known = new Set(existing);
  const added = commitments.filter((c) => !known.has(c));
  if (existing.length + added.length > MAX_ROOM_IDENTITIES)
    throw unprocessable(
      'room_full',
      `A room holds at most ${MAX_ROOM_IDENTITIES} identities (a tree of depth ${BALLOT_TREE_DEPTH}).`,
    );
  const all = [...existing, ...added];
  let root = (await acceptedRoots(trx, roomId))[0] ?? null;
  if (added.length) {
    await trx('room_identities').insert(
      added.map((c, i) => ({ room_id: roomId, leaf_index: existing.length + i, identity_commitment: c })),
    );
    root = String(await memberTreeRoot(all.map(BigInt)));
    const last = (await trx('room_roots').where('room_id', roomId).max({ seq: 'seq' }).first()) as {
      seq: number | null;
    };
    await trx('room_roots').insert({ room_id: roomId, seq: (last.seq ?? -1) + 1, root, size: all.length });
  }
  return { added, identityCount: all.length, root };
}

/** The administrator adds identity commitments the members made (and handed over) themselves. */
export async function addIdentities(db: Knex, roomId: string, commitments: string[], owner: string) {
  checkCommitments(commitments);
  return db.transaction(async (trx) => {
    await roomOrThrow(trx, roomId, owner);
    return appendIdentities(trx, roomId, commitments);
  });
}

/**
 * A wallet member registers their own identity: once per wallet. The service keeps that the wallet
 * registered, and the identity, in two tables with nothing joining them. The tree keeps its leaves in
 * registration order (a public fact), so the claims must keep none: a room's claims are one sorted set,
 * rewritten whole by each registration, so no row order, id, time or sequence says which claim came
 * when (docs/governance.md says what still can).
 */
export async function registerIdentity(
  db: Knex,
  roomId: string,
  input: { walletPublicKey: string; identityCommitment: string; signature: string },
) {
  checkCommitments([input.identityCommitment]);
  return db.transaction(async (trx) => {
    const room = await roomOrThrow(trx, roomId);
    const member = walletCommitment(
      room,
      input.walletPublicKey,
      identityMessage(roomId, input.identityCommitment),
      input.signature,
    );
    if (!(await isMember(trx, roomId, member)))
      throw new AppError(403, 'not_a_member', 'This wallet is not a member of the room.');
    // Under the room's lock, as the tree: two registrations of one room take turns.
    await trx('rooms').where('id', roomId).forUpdate().first();
    const claimed = await identityClaims(trx, roomId);
    if (claimed.includes(member))
      throw conflict(
        'identity_already_registered',
        'This wallet has already registered an identity in the room.',
      );
    const result = await appendIdentities(trx, roomId, [input.identityCommitment]);
    if (!result.added.length) throw conflict('identity_exists', 'This identity is already in the room.');
    const claims = [...claimed, member].sort(byCodeUnits);
    await trx('room_identity_claims')
      .insert({ room_id: roomId, member_commitments: claims })
      .onConflict('room_id')
      .merge();
    return { identityCount: result.identityCount, root: result.root! };
  });
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The member commitments of the room's wallets that registered an identity (a set, in byte order). */
export async function identityClaims(db: Conn, roomId: string): Promise<string[]> {
  const row = (await db('room_identity_claims').where('room_id', roomId).first('member_commitments')) as
    { member_commitments: string[] } | undefined;
  return row?.member_commitments ?? [];
}

// Every node of a tree, kept per root for the pages that prove in a browser without a Poseidon of their
// own: a tree changes only when identities join, and hashing a full one costs about 2000 Poseidons.
const levelsByRoot = new Map<string, Promise<string[][]>>();
const LEVELS_KEPT = 32;

function treeLevels(root: string, leaves: readonly string[]): Promise<string[][]> {
  let levels = levelsByRoot.get(root);
  if (!levels) {
    levels = memberTreeLevels(leaves.map(BigInt)).then((l) => l.map((level) => level.map(String)));
    levels.catch(() => levelsByRoot.delete(root));
    levelsByRoot.set(root, levels);
    if (levelsByRoot.size > LEVELS_KEPT) levelsByRoot.delete(levelsByRoot.keys().next().value!);
  }
  return levels;
}

/**
 * The room's public tree: every commitment in leaf order, and the roots ballots are accepted against;
 * with `levels`, also every node and the empty-subtree hashes, so a client can take its path as is.
 */
export async function roomTree(db: Knex, roomId: string, options: { levels?: boolean } = {}) {
  await roomOrThrow(db, roomId);
  const [identityCommitments, roots] = await Promise.all([leaves(db, roomId), acceptedRoots(db, roomId)]);
  const root = roots[0] ?? String(await memberTreeRoot([]));
  return {
    roomId,
    depth: BALLOT_TREE_DEPTH,
    identityCommitments,
    root,
    acceptedRoots: roots,
    ...(options.levels
      ? {
          levels: (await treeLevels(root, identityCommitments)).slice(0, BALLOT_TREE_DEPTH),
          zeros: (await zeroHashes()).slice(0, BALLOT_TREE_DEPTH).map(String),
        }
      : {}),
  };
}
