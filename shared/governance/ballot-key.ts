// Keys at rest under the service ballot key (BALLOT_KEY, else derived from the signing key): each
// proposal's X25519 ballot key, wrapped (voters encrypt to its public half), and each room's salt.
// They open under BALLOT_KEY or an earlier key of BALLOT_KEY_PREVIOUS; `release` seals them again under
// the current one (ballotSealedColumns).
import { hkdfSync, randomBytes } from 'node:crypto';
import { AppError } from '../platform/errors';
import { keyRing, openWithRing, seal } from '../platform/sealing';
import type { SealedColumn } from '../platform/sealed-columns';
import { ballotPublicKey } from './ballot-protocol';

/** The key that wraps each proposal's own key. */
const ballotKey = (): Buffer => keyRing('BALLOT_KEY').current;

/** A key for HMACs the governance routes issue (membership challenges); separate from the wrap key. */
export function challengeKey(): Buffer {
  return Buffer.from(hkdfSync('sha256', ballotKey(), 'proof-exchange', 'governance-challenge/v1', 32));
}

const proposalAad = (proposalId: string) => `proposal-key:${proposalId}`;
const roomAad = (roomId: string) => `room-salt:${roomId}`;

/**
 * A value sealed under a ballot key this process does not hold: the deployment's keys are wrong, not
 * the request. Said as such (503, with what the operator must do), never as an internal error.
 */
const unopenable = (what: string) =>
  new AppError(
    503,
    'ballot_key_unavailable',
    `${what} is sealed under a ballot key this service is not configured with; the operator must add that key to BALLOT_KEY_PREVIOUS (docs/operations.md, "Rotating keys").`,
    { headers: { 'Retry-After': '60' } },
  );

function openBallotSealed(aad: string, sealed: Buffer, what: string): Buffer {
  try {
    return openWithRing(keyRing('BALLOT_KEY'), aad, sealed).plain;
  } catch {
    throw unopenable(what);
  }
}

/** A fresh per-proposal X25519 ballot key: wrapped for storage, and its public half for voters. */
export function newProposalBallotKey(proposalId: string): { wrapped: Buffer; publicKey: string } {
  const privateKey = randomBytes(32);
  return {
    wrapped: seal(ballotKey(), proposalAad(proposalId), privateKey),
    publicKey: ballotPublicKey(privateKey).toString('base64url'),
  };
}

/** The proposal's ballot private key (X25519); the close publishes it, so nothing stored relies on it staying secret after. */
export const proposalBallotKey = (proposalId: string, wrapped: Buffer): Buffer =>
  openBallotSealed(proposalAad(proposalId), wrapped, "The proposal's ballot key");

/** The room salt at rest: sealed to the room's row, so the database alone cannot test a wallet for membership. */
export const sealRoomSalt = (roomId: string, salt: string): Buffer =>
  seal(ballotKey(), roomAad(roomId), Buffer.from(salt, 'hex'));

export const openRoomSalt = (roomId: string, sealed: Buffer): string =>
  openBallotSealed(roomAad(roomId), sealed, "The room's salt").toString('hex');

/** What BALLOT_KEY seals, for `release`'s re-seal and report. */
export const ballotSealedColumns: readonly SealedColumn[] = [
  { table: 'proposals', column: 'key_wrapped', ring: 'BALLOT_KEY', aad: (row) => proposalAad(row.id) },
  { table: 'rooms', column: 'salt_sealed', ring: 'BALLOT_KEY', aad: (row) => roomAad(row.id) },
];
