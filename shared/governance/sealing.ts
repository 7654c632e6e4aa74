// Ballot secrecy at rest: a random AES-256-GCM key per proposal, wrapped under the service ballot key
// (BALLOT_KEY, else derived from the signing key); each ballot sealed with its proposal and ballot ids
// as associated data, so a ciphertext opens only in its own row.
import { hkdfSync, randomBytes } from 'node:crypto';
import { env } from '../env';
import { open, purposeKey, seal } from '../sealing';

/** The key that wraps each proposal's own key. */
const ballotKey = (): Buffer => purposeKey('ballot-key', { name: 'BALLOT_KEY', value: env.BALLOT_KEY });

/** A key for HMACs the governance routes issue (membership challenges); separate from the wrap key. */
export function challengeKey(): Buffer {
  return Buffer.from(hkdfSync('sha256', ballotKey(), 'proof-exchange', 'governance-challenge/v1', 32));
}

/** A fresh per-proposal key, returned wrapped for storage. */
export const newWrappedProposalKey = (proposalId: string): Buffer =>
  seal(ballotKey(), `proposal-key:${proposalId}`, randomBytes(32));

const unwrap = (proposalId: string, wrapped: Buffer): Buffer =>
  open(ballotKey(), `proposal-key:${proposalId}`, wrapped);

export interface SealedBallot {
  choice: string;
  salt: string;
}

export function sealBallot(
  proposalId: string,
  wrappedKey: Buffer,
  ballotId: string,
  b: SealedBallot,
): Buffer {
  return seal(
    unwrap(proposalId, wrappedKey),
    `ballot:${proposalId}:${ballotId}`,
    Buffer.from(JSON.stringify({ choice: b.choice, salt: b.salt })),
  );
}

/** Opens every ballot of a proposal with one unwrap of its key (only the close calls this). */
export function ballotOpener(
  proposalId: string,
  wrappedKey: Buffer,
): (ballotId: string, sealed: Buffer) => SealedBallot {
  const key = unwrap(proposalId, wrappedKey);
  return (ballotId, sealed) =>
    JSON.parse(open(key, `ballot:${proposalId}:${ballotId}`, sealed).toString('utf8')) as SealedBallot;
}
