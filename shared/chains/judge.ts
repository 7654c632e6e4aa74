// The one policy every adapter applies to the transfers it found in a transaction.
import type { Transfer, VerifyReason, VerifyRequest, VerifyResult } from './types';

export interface Finality {
  final: boolean;
  confirmations?: number;
  /** Why it is not final yet. */
  reason?: VerifyReason;
}

/**
 * Picks the transfer that pays `req` and says what it amounts to. Among transfers of the asset to
 * the recipient (outputs not already claimed), the first that covers minAmount wins, else the
 * largest (reported as underpaid). Nothing is confirmed before it is final; an underpayment is
 * only called once final too, since the transaction could still be replaced before then.
 */
export function judgeTransfers(
  transfers: readonly Transfer[],
  req: Pick<VerifyRequest, 'to' | 'minAmount' | 'skipOutputs'>,
  token: string,
  finality: Finality,
  sameAddress: (a: string, b: string) => boolean = (a, b) => a === b,
): VerifyResult {
  const min = BigInt(req.minAmount);
  const skip = new Set(req.skipOutputs ?? []);
  const toUs = transfers.filter((t) => sameAddress(t.to, req.to));
  const ofAsset = toUs.filter((t) => t.token === token);
  const open = ofAsset.filter((t) => !skip.has(t.output));
  const base = finality.confirmations === undefined ? {} : { confirmations: finality.confirmations };

  if (open.length === 0) {
    if (ofAsset.length > 0) {
      return {
        status: 'mismatch',
        reason: 'already_claimed',
        ...base,
        detail: 'Every matching output is claimed.',
      };
    }
    if (toUs.length > 0) {
      return {
        status: 'mismatch',
        reason: 'wrong_asset',
        ...base,
        detail: 'The transfer to the recipient is of another asset.',
      };
    }
    if (transfers.some((t) => t.token === token)) {
      return {
        status: 'mismatch',
        reason: 'wrong_recipient',
        ...base,
        detail: 'The asset went to another address.',
      };
    }
    if (transfers.length > 0) {
      return {
        status: 'mismatch',
        reason: 'wrong_asset',
        ...base,
        detail: 'The transaction moves another asset to another address.',
      };
    }
    return {
      status: 'mismatch',
      reason: 'not_a_transfer',
      ...base,
      detail: 'The transaction transfers nothing.',
    };
  }

  const chosen = open.find((t) => t.amount >= min) ?? open.reduce((a, b) => (b.amount > a.amount ? b : a));
  const found = {
    amount: chosen.amount.toString(),
    output: chosen.output,
    ...(chosen.payer ? { payer: chosen.payer } : {}),
    ...base,
  };
  if (!finality.final)
    return { status: 'pending', reason: finality.reason ?? 'too_few_confirmations', ...found };
  if (chosen.amount < min) {
    return {
      status: 'mismatch',
      reason: 'underpaid',
      ...found,
      detail: `Received ${chosen.amount}, expected ${min}.`,
    };
  }
  return { status: 'confirmed', ...found };
}
