// What a member, bidder, reviewer or organization computes on their own machine before calling the
// service: ed25519 wallet keys and signatures (base58, as Solana wallets print them) over the exact texts
// the routes check, sealed bids, actor commitments and evidence hashes. Each text and commitment is the
// one the service itself uses (commitments.ts of shared/governance, shared/auctions and shared/treasury,
// shared/governance/identities.ts): nothing here re-states a format. Secrets stay in the caller's hands;
// nothing is sent or logged from here.
import { randomBytes } from 'node:crypto';
import bs58 from 'bs58';
import { approvalMessage } from '../../shared/treasury/commitments';
import { bidCommitment, bidMessage } from '../../shared/auctions/commitments';
import { identityMessage, membershipMessage, reviewMessage } from '../../shared/governance/commitments';
import { sha256Hex, signingKeyFromSeed } from '../../shared/platform/crypto';
import { verifyWalletSignature } from '../../shared/platform/wallet';
import { requestHash } from '../../shared/treasury/package';
import type { TreasuryTerms } from '../../shared/treasury/package';

export type Decision = 'approve' | 'reject';

/** An ed25519 wallet: its address (public key, base58) and its 32-byte seed (base58): the secret. */
export interface Wallet {
  address: string;
  seed: string;
}

export function newWallet(): Wallet {
  return walletFromSeed(bs58.encode(randomBytes(32)));
}

export function walletFromSeed(seed: string): Wallet {
  const key = signingKeyFromSeed(bs58.decode(seed));
  return { address: bs58.encode(Buffer.from(key.publicKey, 'base64url')), seed };
}

/** The wallet's signature (base58) over the UTF-8 bytes of `text`, as a Solana wallet signs a message. */
export function signText(wallet: Wallet, text: string): string {
  const signature = bs58.encode(
    Buffer.from(signingKeyFromSeed(bs58.decode(wallet.seed)).sign(text), 'base64url'),
  );
  // A wallet that does not make its own address's signatures is a broken key file: say so here.
  if (!verifyWalletSignature(wallet.address, text, signature))
    throw new Error('the wallet key does not match its address');
  return signature;
}

/** A TRIAL claim: the challenge text exactly as issued, signed. */
export const trialClaim = (wallet: Wallet, challenge: string) => ({
  wallet: wallet.address,
  challenge,
  signature: signText(wallet, challenge),
});

/** A proof of room membership over a challenge from POST /api/governance/rooms/{id}/challenge. */
export const membershipProof = (wallet: Wallet, challenge: string) => ({
  walletPublicKey: wallet.address,
  challenge,
  signature: signText(wallet, membershipMessage(challenge)),
});

/** A wallet member's registration of their own anonymous-voter identity commitment in a room. */
export const identityRegistration = (wallet: Wallet, roomId: string, identityCommitment: string) => ({
  walletPublicKey: wallet.address,
  identityCommitment,
  signature: signText(wallet, identityMessage(roomId, identityCommitment)),
});

/** A review committee member's signed decision on a proposal. */
export const proposalReview = (wallet: Wallet, proposalId: string, decision: Decision) => ({
  walletPublicKey: wallet.address,
  decision,
  signature: signText(wallet, reviewMessage(proposalId, decision)),
});

/**
 * A committee member's signed decision on a treasury request, over the hash of the terms the member
 * was shown (recomputed here: a request whose stated hash is not its terms' is refused).
 */
export function treasuryDecision(
  wallet: Wallet,
  request: { requestId: string; terms: TreasuryTerms; requestHash?: string },
  decision: Decision,
) {
  if (request.terms.requestId !== request.requestId)
    throw new Error(`the terms are those of ${request.terms.requestId}, not of ${request.requestId}`);
  const hash = requestHash(request.terms);
  if (request.requestHash !== undefined && request.requestHash !== hash)
    throw new Error(`the request's hash ${request.requestHash} is not the hash of its terms (${hash})`);
  return {
    walletPublicKey: wallet.address,
    decision,
    signature: signText(wallet, approvalMessage(request.requestId, hash, decision)),
  };
}

/**
 * A sealed bid: a fresh 32-byte salt (or the one kept from an attempt that got no answer), the commitment sha256([amount, sha256([salt, bidder])]) and the
 * bidder's signature over it. `reveal` is what the bidder keeps (secret until the reveal window) and
 * sends then.
 */
export function sealedBid(
  wallet: Wallet,
  auctionId: string,
  amount: string,
  depositRef: string,
  salt: string = randomBytes(32).toString('hex'),
) {
  if (!/^(0|[1-9]\d{0,77})$/.test(amount)) throw new Error('an amount is base units, a decimal string');
  if (!/^[0-9a-f]{64}$/.test(salt)) throw new Error('a salt is 32 bytes, hex');
  const commitment = bidCommitment(amount, salt, wallet.address);
  return {
    bid: {
      bidder: wallet.address,
      commitment,
      depositRef,
      signature: signText(wallet, bidMessage(auctionId, commitment, depositRef)),
    },
    reveal: { bidder: wallet.address, amount, salt },
  };
}

/**
 * A workflow actor as the organization records them: sha256(actor salt ‖ UTF-8 name), the salt a
 * 32-byte secret the organization keeps, so one actor always has one commitment (distinct approvers
 * stay distinct) and nobody without the salt can test a name against it.
 */
export const actorCommitment = (actorSalt: string, actor: string): string =>
  sha256Hex(Buffer.concat([Buffer.from(actorSalt, 'hex'), Buffer.from(actor, 'utf8')]));

/** The hash a document is known by (evidence, purposes, execution records): sha256 of its bytes, hex. */
export const documentHash = (bytes: string | Uint8Array): string => sha256Hex(bytes);
