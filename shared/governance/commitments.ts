// The commitments and signed messages of governance: rooms' members, reviews, the first ballots. Pure:
// a member or voter recomputes each of them offline with nothing but their own inputs.
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';

/** sha256(room salt bytes ‖ UTF-8 wallet public key): a member as the room stores it. */
export function memberCommitment(roomSalt: string, walletPublicKey: string): string {
  return sha256Hex(Buffer.concat([Buffer.from(roomSalt, 'hex'), Buffer.from(walletPublicKey, 'utf8')]));
}

/**
 * The first, wallet-signed ballot scheme's commitment: sha256 of the canonical JSON array [choice, salt,
 * proposalId]. Kept to verify packages published under it; ballots are now anonymous (ballot-protocol.ts).
 */
export const legacyBallotCommitment = (choice: string, salt: string, proposalId: string): string =>
  sha256Hex(canonicalJson([choice, salt, proposalId]));

/** What a wallet member signs to register their own identity commitment in a room. */
export const identityMessage = (roomId: string, identityCommitment: string): string =>
  `proof-exchange/governance/identity/v1\nroom:${roomId}\nidentity:${identityCommitment}`;

export const reviewMessage = (proposalId: string, decision: 'approve' | 'reject'): string =>
  `proof-exchange/governance/review/v1\nproposal:${proposalId}\ndecision:${decision}`;

export const membershipMessage = (challenge: string): string =>
  `proof-exchange/governance/membership/v1\n${challenge}`;
