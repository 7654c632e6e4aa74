// The typed client's crypto, checked against the service's own verifiers and an independent
// computation of each format: a wallet's signatures verify over the exact texts the routes check, a
// sealed bid's commitment is sha256([amount, sha256([salt, bidder])]) in canonical JSON, a treasury
// decision is refused when the request's stated hash is not its terms'.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  actorCommitment,
  identityRegistration,
  membershipProof,
  newWallet,
  problemLine,
  proposalReview,
  sealedBid,
  treasuryDecision,
  trialClaim,
  walletFromSeed,
} from '../../cli/client';
import { verifyWalletSignature } from '../../shared/platform/wallet';
import { requestHash } from '../../shared/treasury/package';

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

describe('the client crypto', () => {
  it('a wallet is its seed: the same address again, and signatures over the routes’ texts that verify', () => {
    const w = newWallet();
    expect(walletFromSeed(w.seed)).toEqual(w);
    const other = newWallet();
    const review = proposalReview(w, 'prop_x', 'approve');
    expect(
      verifyWalletSignature(
        w.address,
        'proof-exchange/governance/review/v1\nproposal:prop_x\ndecision:approve',
        review.signature,
      ),
    ).toBe(true);
    // Another wallet's key, or another decision, does not verify.
    expect(
      verifyWalletSignature(
        other.address,
        'proof-exchange/governance/review/v1\nproposal:prop_x\ndecision:approve',
        review.signature,
      ),
    ).toBe(false);
    expect(
      verifyWalletSignature(
        w.address,
        'proof-exchange/governance/review/v1\nproposal:prop_x\ndecision:reject',
        review.signature,
      ),
    ).toBe(false);
    const reg = identityRegistration(w, 'room_1', '42');
    expect(
      verifyWalletSignature(
        w.address,
        'proof-exchange/governance/identity/v1\nroom:room_1\nidentity:42',
        reg.signature,
      ),
    ).toBe(true);
    const proof = membershipProof(w, 'c.h.a.l');
    expect(
      verifyWalletSignature(w.address, 'proof-exchange/governance/membership/v1\nc.h.a.l', proof.signature),
    ).toBe(true);
    const trial = trialClaim(w, 'any challenge text');
    expect(verifyWalletSignature(w.address, 'any challenge text', trial.signature)).toBe(true);
  });

  it('a sealed bid commits to amount, salt and bidder as the auction line reveals it', () => {
    const w = newWallet();
    const { bid, reveal } = sealedBid(w, 'auc_1', '1500000', 'deposit 1');
    expect(reveal.salt).toMatch(/^[0-9a-f]{64}$/);
    const tag = sha(JSON.stringify([reveal.salt, w.address]));
    expect(bid.commitment).toBe(sha(JSON.stringify(['1500000', tag])));
    expect(
      verifyWalletSignature(
        w.address,
        `proof-exchange/auction/bid/v1\nauction:auc_1\ncommitment:${bid.commitment}\ndeposit:deposit 1`,
        bid.signature,
      ),
    ).toBe(true);
    // A fresh salt each time: two bids of one amount do not share a commitment.
    expect(sealedBid(w, 'auc_1', '1500000', 'deposit 1').bid.commitment).not.toBe(bid.commitment);
    expect(() => sealedBid(w, 'auc_1', '1.5', 'd')).toThrow(/base units/);
  });

  it('a treasury decision signs the hash of the terms it was shown, and refuses a request whose hash is not theirs', () => {
    const w = newWallet();
    const terms = {
      requestId: 'trq_1',
      roomId: 'room_1',
      committee: 'signers',
      threshold: 2,
      committeeSize: 3,
      operation: 'spend',
      asset: 'USDC-SOL',
      amount: '1250000',
      recipient: 'Acme',
      purposeHash: sha('Q3 audit'),
    } as unknown as Parameters<typeof requestHash>[0];
    const hash = requestHash(terms);
    const d = treasuryDecision(w, { requestId: 'trq_1', terms, requestHash: hash }, 'approve');
    expect(
      verifyWalletSignature(
        w.address,
        `proof-exchange/treasury/approval/v1\nrequest:trq_1\nrequestHash:${hash}\ndecision:approve`,
        d.signature,
      ),
    ).toBe(true);
    expect(() =>
      treasuryDecision(
        w,
        { requestId: 'trq_1', terms: { ...terms, amount: '9' }, requestHash: hash },
        'approve',
      ),
    ).toThrow(/is not the hash of its terms/);
    // Terms of another request are not this request's.
    expect(() => treasuryDecision(w, { requestId: 'trq_2', terms }, 'approve')).toThrow(/not of trq_2/);
  });

  it('an actor commitment is salted: one actor one commitment, and a name alone does not give it', () => {
    const salt = 'ab'.repeat(32);
    expect(actorCommitment(salt, 'analyst')).toBe(actorCommitment(salt, 'analyst'));
    expect(actorCommitment(salt, 'analyst')).toBe(
      sha(Buffer.concat([Buffer.from(salt, 'hex'), Buffer.from('analyst')])),
    );
    expect(actorCommitment(salt, 'analyst')).not.toBe(sha('analyst'));
    expect(actorCommitment('cd'.repeat(32), 'analyst')).not.toBe(actorCommitment(salt, 'analyst'));
  });

  it('a refusal is one line with its status and code', () => {
    expect(
      problemLine(403, { code: 'not_a_member', detail: 'This wallet is not a member of the room.' }),
    ).toBe('refused (403 not_a_member): This wallet is not a member of the room.');
    expect(problemLine(502, 'Bad Gateway')).toBe('refused (502): Bad Gateway');
  });
});
