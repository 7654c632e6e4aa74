// The commitments and signed messages of auctions. Pure: a bidder recomputes each of them offline with
// nothing but their own inputs.
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';

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

export const bidMessage = (auctionId: string, commitment: string, depositRef: string): string =>
  `proof-exchange/auction/bid/v1\nauction:${auctionId}\ncommitment:${commitment}\ndeposit:${depositRef}`;
