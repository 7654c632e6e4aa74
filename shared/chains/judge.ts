// The one policy every adapter applies to the transfers it found in a transaction: the asset, the
// recipient, the quote's binding (reference key or exact amount), the time, finality and the amount.
import type { Transfer, VerifyReason, VerifyRequest, VerifyResult } from './types';

/**
 * Clocks disagree: a wallet may broadcast a moment after the quote was shown while the block's own
 * timestamp runs a little behind (Bitcoin allows up to two hours of drift; Solana and EVM seconds).
 * A transfer is "before the quote" only when its block time is earlier by more than this.
 */
export const CLOCK_SKEW_MS = 2 * 60_000;

export interface Finality {
  final: boolean;
  confirmations?: number;
  /** Why it is not final yet. */
  reason?: VerifyReason;
}

/** What the adapter knows of the transaction beyond its transfers. */
export interface TransactionFacts {
  /** When its block was made; undefined while it is in no block. */
  blockTime?: Date | undefined;
  /** Solana: every account key the transaction names, for the reference binding. */
  accountKeys?: readonly string[];
}

const mismatch = (reason: VerifyReason, detail: string, extra: Partial<VerifyResult> = {}): VerifyResult => ({
  status: 'mismatch',
  reason,
  ...extra,
  detail,
});

/**
 * Picks the transfer that pays `req` and says what it amounts to. Among transfers of the asset to
 * the recipient (outputs not already claimed): with an amount binding only one of exactly minAmount
 * counts; otherwise the first that covers minAmount wins, else the largest (reported as underpaid).
 * A transaction without the quote's reference key, or whose block is older than the quote, pays
 * nothing. Nothing is confirmed before it is final; an underpayment is only called once final too,
 * since the transaction could still be replaced before then.
 */
export function judgeTransfers(
  transfers: readonly Transfer[],
  req: Pick<VerifyRequest, 'to' | 'minAmount' | 'skipOutputs' | 'binding' | 'quotedAt'>,
  token: string,
  finality: Finality,
  sameAddress: (a: string, b: string) => boolean = (a, b) => a === b,
  facts: TransactionFacts = {},
): VerifyResult {
  const min = BigInt(req.minAmount);
  const skip = new Set(req.skipOutputs ?? []);
  const toUs = transfers.filter((t) => sameAddress(t.to, req.to));
  const ofAsset = toUs.filter((t) => t.token === token);
  const open = ofAsset.filter((t) => !skip.has(t.output));
  const base = {
    ...(finality.confirmations === undefined ? {} : { confirmations: finality.confirmations }),
    ...(facts.blockTime ? { blockTime: facts.blockTime.toISOString() } : {}),
  };

  if (req.binding?.kind === 'reference' && !(facts.accountKeys ?? []).includes(req.binding.reference)) {
    return mismatch(
      'reference_missing',
      `The transaction does not name the quote's reference key ${req.binding.reference}, so it was not made for this quote.`,
      base,
    );
  }

  if (open.length === 0) {
    if (ofAsset.length > 0) return mismatch('already_claimed', 'Every matching output is claimed.', base);
    if (toUs.length > 0)
      return mismatch('wrong_asset', 'The transfer to the recipient is of another asset.', base);
    if (transfers.some((t) => t.token === token))
      return mismatch('wrong_recipient', 'The asset went to another address.', base);
    if (transfers.length > 0)
      return mismatch('wrong_asset', 'The transaction moves another asset to another address.', base);
    return mismatch('not_a_transfer', 'The transaction transfers nothing.', base);
  }

  let chosen: Transfer | undefined;
  if (req.binding?.kind === 'amount') {
    // The amount is the quote's identity: any other amount may be another quote's, so it pays none here.
    chosen = open.find((t) => t.amount === min);
    if (!chosen) {
      if (ofAsset.some((t) => t.amount === min && skip.has(t.output)))
        return mismatch('already_claimed', 'The output of this amount is claimed.', base);
      const largest = open.reduce((a, b) => (b.amount > a.amount ? b : a));
      return mismatch(
        'amount_mismatch',
        `Received ${largest.amount} base units; this quote is identified by exactly ${min}.`,
        { amount: largest.amount.toString(), ...base },
      );
    }
  } else {
    chosen = open.find((t) => t.amount >= min) ?? open.reduce((a, b) => (b.amount > a.amount ? b : a));
  }
  const found = {
    amount: chosen.amount.toString(),
    output: chosen.output,
    ...(chosen.payer ? { payer: chosen.payer } : {}),
    ...base,
  };
  if (facts.blockTime && req.quotedAt && facts.blockTime.getTime() < req.quotedAt.getTime() - CLOCK_SKEW_MS) {
    return mismatch(
      'transfer_before_quote',
      `The transfer's block is from ${facts.blockTime.toISOString()}, before the quote was made (${req.quotedAt.toISOString()}).`,
      found,
    );
  }
  if (!finality.final)
    return { status: 'pending', reason: finality.reason ?? 'too_few_confirmations', ...found };
  if (req.quotedAt && !facts.blockTime)
    return {
      status: 'pending',
      reason: 'block_time_unknown',
      ...found,
      detail: 'The block time is not known yet.',
    };
  if (chosen.amount < min) {
    return mismatch('underpaid', `Received ${chosen.amount}, expected ${min}.`, found);
  }
  return { status: 'confirmed', ...found };
}
