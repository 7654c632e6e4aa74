// What a chain adapter's answer means for something awaiting payment: one rule set for job payments
// and license checkouts, so both treat underpaid, late, expired and unsettled transfers alike. Late or
// not is judged by the block time the chain reports, never by when the transfer was submitted: a payer
// cannot sign in time, broadcast after expiry and still be on time.
import type { VerifyResult } from '../chains';
import type { Env } from '../platform/env';
import { classifyPayment } from './pricing';

export type VerdictSettings = Pick<
  Env,
  'QUOTE_LATE_WINDOW_SECONDS' | 'PAYMENT_RECHECK_MS' | 'PAYMENT_RECHECK_MAX_MS'
>;

export const lateWindowMs = (s: Pick<Env, 'QUOTE_LATE_WINDOW_SECONDS'>): number =>
  s.QUOTE_LATE_WINDOW_SECONDS * 1000;

/** What the chain showed, carried onto the row whatever the outcome. */
export interface Found {
  amount?: string;
  output?: string;
  confirmations?: number;
  payer?: string;
  /** When the chain says the transfer was made (ISO 8601). */
  blockTime?: string;
}

export interface Verdict extends Found {
  status: 'confirmed' | 'rejected' | 'underpaid' | 'expired';
  settlement?: 'exact' | 'overpaid' | 'paid_late';
  reason?: string;
  detail?: string | null;
}

export type Judgement =
  | { kind: 'settle'; verdict: Verdict }
  | { kind: 'recheck'; delayMs: number; reason: string; detail: string | null; found: Found };

export interface Expected {
  /** Base units asked for. */
  amount: string;
  expiresAt: Date;
  /** When the transfer was submitted: only used if the chain gave no block time (rows from before). */
  submittedAt: Date;
  /** How many times the transfer has been checked, this time included. */
  checks: number;
  /** Names what asked for the amount in messages ("the quote", "the checkout"). */
  what: string;
}

export function foundOf(result: VerifyResult): Found {
  return {
    ...(result.amount !== undefined ? { amount: result.amount } : {}),
    ...(result.output !== undefined ? { output: result.output } : {}),
    ...(result.confirmations !== undefined ? { confirmations: result.confirmations } : {}),
    ...(result.payer ? { payer: result.payer } : {}),
    ...(result.blockTime ? { blockTime: result.blockTime } : {}),
  };
}

export function judgeTransfer(
  result: VerifyResult,
  expected: Expected,
  settings: VerdictSettings,
  now: Date,
): Judgement {
  const found = foundOf(result);
  const settle = (verdict: Verdict): Judgement => ({ kind: 'settle', verdict: { ...verdict, ...found } });
  const short = `Received ${result.amount ?? '0'} base units; ${expected.what} asks for ${expected.amount}.`;

  if (result.status === 'confirmed') {
    const settlement = classifyPayment(
      { amount: expected.amount, expiresAt: expected.expiresAt },
      {
        amount: result.amount ?? '0',
        seenAt: result.blockTime ? new Date(result.blockTime) : expected.submittedAt,
      },
      { lateWindowMs: lateWindowMs(settings) },
    );
    if (settlement === 'expired') return settle({ status: 'expired', reason: 'paid_after_window' });
    if (settlement === 'underpaid')
      return settle({ status: 'underpaid', reason: 'underpaid', detail: short });
    return settle({ status: 'confirmed', settlement });
  }
  if (result.status === 'mismatch') {
    if (result.reason === 'underpaid')
      return settle({ status: 'underpaid', reason: 'underpaid', detail: short });
    return settle({ status: 'rejected', reason: result.reason ?? 'mismatch', detail: result.detail ?? null });
  }

  // pending or not_found: ask again later, until the watch window closes.
  const reason = result.status === 'not_found' ? 'not_found' : (result.reason ?? 'pending');
  const watchEnds = expected.expiresAt.getTime() + lateWindowMs(settings);
  const at = now.getTime();
  if (at >= watchEnds) {
    return settle({
      status: 'expired',
      reason,
      detail: `The watch window ended at ${new Date(watchEnds).toISOString()} before the transfer was confirmed.`,
    });
  }
  const backoff = Math.min(
    settings.PAYMENT_RECHECK_MS * 2 ** Math.min(20, Math.max(0, expected.checks - 1)),
    settings.PAYMENT_RECHECK_MAX_MS,
  );
  return {
    kind: 'recheck',
    delayMs: Math.max(1, Math.min(backoff, watchEnds - at + 10)),
    reason,
    detail: result.detail ?? null,
    found,
  };
}

/** The columns a transfer asked about again later is left with (payments and checkouts alike). */
export function recheckColumns(judged: Extract<Judgement, { kind: 'recheck' }>, now: Date) {
  return {
    status: 'pending' as const,
    reason: judged.reason,
    detail: judged.detail,
    amount_received: judged.found.amount ?? null,
    confirmations: judged.found.confirmations ?? null,
    next_check_at: new Date(now.getTime() + judged.delayMs),
  };
}
