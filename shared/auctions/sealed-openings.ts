// A bid's opening (amount and salt) sealed to the room's trustees: the bidder's side makes it, the service
// checks it was made for this auction and commitment, and after the reveal window the trustees' partial
// decryptions open it. The encryption is the trustees' ballot scheme (shared/governance/threshold.ts)
// under a context naming the auction and the commitment.
import type { Knex } from 'knex';
import { canonicalJson } from '../platform/canonical';
import { auctionOpeningContext, encryptThresholdVote, openThresholdVote } from '../governance/threshold';
import { trusteesOf } from '../governance/trustees';

/** What a sealed opening is bound to: its proof of knowledge and key both name it. */
export const sealedOpeningContext = auctionOpeningContext;

/** The bidder's side: the opening sealed to the trustees' joint key (base64url). */
export const sealBidOpening = (
  jointKey: string,
  auctionId: string,
  commitment: string,
  opening: { amount: string; salt: string },
): string =>
  encryptThresholdVote(
    jointKey,
    sealedOpeningContext(auctionId, commitment),
    canonicalJson({ amount: opening.amount, salt: opening.salt }),
  ).toString('base64url');

/** Opens a sealed opening with the combined partials; null when it is not a well-formed opening. */
export function openSealedOpening(
  shared: string,
  jointKey: string,
  auctionId: string,
  commitment: string,
  sealed: Uint8Array,
): { amount: string; salt: string } | null {
  const text = openThresholdVote(shared, jointKey, sealedOpeningContext(auctionId, commitment), sealed);
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as { amount?: unknown; salt?: unknown };
    return typeof v.amount === 'string' &&
      /^(0|[1-9]\d{0,77})$/.test(v.amount) &&
      typeof v.salt === 'string' &&
      /^[0-9a-f]{64}$/.test(v.salt)
      ? { amount: v.amount, salt: v.salt }
      : null;
  } catch {
    return null;
  }
}

/** How many trustees have decrypted the auction's sealed bids, and how many open them. */
export async function trusteeProgress(
  db: Knex | Knex.Transaction,
  a: { id: string; room_id: string | null },
): Promise<{ decrypted: number; needed: number }> {
  const trustees = await trusteesOf(db, a.room_id!);
  const row = (await db('auction_decryptions').where('auction_id', a.id).count({ n: '*' }).first()) as {
    n: string;
  };
  return { decrypted: Number(row.n), needed: trustees?.threshold ?? 1 };
}

export const trusteesOpened = async (
  db: Knex | Knex.Transaction,
  a: { id: string; room_id: string | null },
) => {
  const { decrypted, needed } = await trusteeProgress(db, a);
  return decrypted >= needed;
};
