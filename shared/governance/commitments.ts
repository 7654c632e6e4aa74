// The commitments and signed messages of governance, treasury and auctions. Pure: a voter, approver or
// bidder recomputes each of them offline with nothing but their own inputs.
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';

export const HEX64 = /^[0-9a-f]{64}$/;

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

/**
 * A bidder hidden behind the bid's salt: sha256 of [salt, bidder]. A package can then show a losing
 * bid's amount, and let anyone check it against its commitment, without naming the bidder.
 */
export const bidderTag = (salt: string, bidder: string): string => sha256Hex(canonicalJson([salt, bidder]));

/** sha256(amount ‖ sha256(salt ‖ bidder)), as canonical JSON arrays: [amount, bidderTag(salt, bidder)]. */
export const bidCommitment = (amount: string, salt: string, bidder: string): string =>
  sha256Hex(canonicalJson([amount, bidderTag(salt, bidder)]));

/** The first bid commitment, sha256 of [amount, salt, bidder]: bids made before bidder tags still reveal. */
export const legacyBidCommitment = (amount: string, salt: string, bidder: string): string =>
  sha256Hex(canonicalJson([amount, salt, bidder]));

export const reviewMessage = (proposalId: string, decision: 'approve' | 'reject'): string =>
  `proof-exchange/governance/review/v1\nproposal:${proposalId}\ndecision:${decision}`;

/** What an approver signs: the request's canonical hash, so an approval cannot be moved to other terms. */
export const approvalMessage = (
  requestId: string,
  requestHash: string,
  decision: 'approve' | 'reject',
): string =>
  `proof-exchange/treasury/approval/v1\nrequest:${requestId}\nrequestHash:${requestHash}\ndecision:${decision}`;

export const bidMessage = (auctionId: string, commitment: string, depositRef: string): string =>
  `proof-exchange/auction/bid/v1\nauction:${auctionId}\ncommitment:${commitment}\ndeposit:${depositRef}`;

export const membershipMessage = (challenge: string): string =>
  `proof-exchange/governance/membership/v1\n${challenge}`;
