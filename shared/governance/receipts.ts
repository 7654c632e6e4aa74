// Ballot receipts: what the service signs for a cast ballot (the digest of its ciphertext, nothing of
// the time or the voter), and a voter's check of one. Pure: no configuration.
import { z } from 'zod';
import { canonicalJson } from '../platform/canonical';
import { asTrust, verifySignedBy } from '../platform/trust';
import type { Trust } from '../platform/trust';
import type { Signer } from '../platform/crypto';
import { HEX64 } from '../proofs/records';

const hex64 = z.string().regex(HEX64);

export const receiptSchema = z
  .object({
    type: z.literal('proof-exchange/ballot-receipt/v2'),
    proposalId: z.string().max(100),
    /** sha256 of the ballot's ciphertext: names the ballot in the package (fixed length, like the rest). */
    ballotDigest: hex64,
    keyId: z.string().regex(/^[0-9a-f]{16}$/),
    signature: z.string().regex(/^[A-Za-z0-9_-]{86}$/),
  })
  .strict()
  .meta({
    id: 'BallotReceipt',
    description:
      'Signed by the service: binds a ballot (the digest of its ciphertext) to the proposal. No time, no choice, nothing of the voter.',
  });
export type BallotReceipt = z.infer<typeof receiptSchema>;

const receiptMessage = (r: Omit<BallotReceipt, 'signature'>): string =>
  `proof-exchange/ballot-receipt/v2\n${canonicalJson(r)}`;

export function signReceipt(
  body: Omit<BallotReceipt, 'signature' | 'keyId' | 'type'>,
  key: Signer,
): BallotReceipt {
  const unsigned = { type: 'proof-exchange/ballot-receipt/v2' as const, ...body, keyId: key.keyId };
  return { ...unsigned, signature: key.sign(receiptMessage(unsigned)) };
}

/**
 * A ballot receipt carries no time (nothing that could place a voter): it verifies under a key the trust
 * root lists with role `receipt`, not revoked (or under the bare public key).
 */
export function verifyReceipt(receipt: unknown, trust: Trust): boolean {
  const parsed = receiptSchema.safeParse(receipt);
  if (!parsed.success) return false;
  const { signature, ...body } = parsed.data;
  return verifySignedBy(
    asTrust(trust),
    { keyId: body.keyId, role: 'receipt', signedAt: undefined },
    receiptMessage(body),
    signature,
  ).ok;
}
