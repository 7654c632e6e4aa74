// Keys at rest under the service ballot key (BALLOT_KEY, else derived from the signing key): each
// proposal's X25519 ballot key, wrapped (voters encrypt to its public half), and each room's salt.
import { hkdfSync, randomBytes } from 'node:crypto';
import { env } from '../platform/env';
import { derivedKeyPurposes, open, purposeKey, seal } from '../platform/sealing';
import { ballotPublicKey } from './ballot-protocol';

/** The key that wraps each proposal's own key. */
const ballotKey = (): Buffer =>
  purposeKey(derivedKeyPurposes.BALLOT_KEY, { name: 'BALLOT_KEY', value: env.BALLOT_KEY });

/** A key for HMACs the governance routes issue (membership challenges); separate from the wrap key. */
export function challengeKey(): Buffer {
  return Buffer.from(hkdfSync('sha256', ballotKey(), 'proof-exchange', 'governance-challenge/v1', 32));
}

/** A fresh per-proposal X25519 ballot key: wrapped for storage, and its public half for voters. */
export function newProposalBallotKey(proposalId: string): { wrapped: Buffer; publicKey: string } {
  const privateKey = randomBytes(32);
  return {
    wrapped: seal(ballotKey(), `proposal-key:${proposalId}`, privateKey),
    publicKey: ballotPublicKey(privateKey).toString('base64url'),
  };
}

const unwrap = (proposalId: string, wrapped: Buffer): Buffer =>
  open(ballotKey(), `proposal-key:${proposalId}`, wrapped);

/** The proposal's ballot private key (X25519); the close publishes it, so nothing stored relies on it staying secret after. */
export const proposalBallotKey = (proposalId: string, wrapped: Buffer): Buffer => unwrap(proposalId, wrapped);

/** The room salt at rest: sealed to the room's row, so the database alone cannot test a wallet for membership. */
export const sealRoomSalt = (roomId: string, salt: string): Buffer =>
  seal(ballotKey(), `room-salt:${roomId}`, Buffer.from(salt, 'hex'));

export const openRoomSalt = (roomId: string, sealed: Buffer): string =>
  open(ballotKey(), `room-salt:${roomId}`, sealed).toString('hex');
