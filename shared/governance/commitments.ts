// The commitments and signed messages of governance, treasury and auctions. Pure: a voter, approver or
// bidder recomputes each of them offline with nothing but their own inputs.
import { canonicalJson } from '../canonical';
import { sha256Hex } from '../crypto';

export const HEX64 = /^[0-9a-f]{64}$/;

/** sha256(room salt bytes ‖ UTF-8 wallet public key): a member as the room stores it. */
export function memberCommitment(roomSalt: string, walletPublicKey: string): string {
  return sha256Hex(Buffer.concat([Buffer.from(roomSalt, 'hex'), Buffer.from(walletPublicKey, 'utf8')]));
}

/**
 * sha256(ballot ‖ salt ‖ proposal id), concatenated as the canonical JSON array [choice, salt,
 * proposalId] so that no two inputs share bytes.
 */
export const ballotCommitment = (choice: string, salt: string, proposalId: string): string =>
  sha256Hex(canonicalJson([choice, salt, proposalId]));

/** sha256(amount ‖ salt ‖ bidder), as the canonical JSON array [amount, salt, bidder]. */
export const bidCommitment = (amount: string, salt: string, bidder: string): string =>
  sha256Hex(canonicalJson([amount, salt, bidder]));

/** What a voter's wallet signs to cast a ballot: only the commitment, so the signature reveals no choice. */
export const ballotMessage = (proposalId: string, commitment: string): string =>
  `proof-exchange/governance/ballot/v1\nproposal:${proposalId}\ncommitment:${commitment}`;

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
