// Paying a checkout: submitting a transfer, the `checkouts` processor's check of it through the chain
// adapter with the job-payment rules (settling it and issuing the license once), and ending checkouts
// that failed or expired.
import { findAsset } from '../chains/assets';
import { releaseAmounts } from '../payments/amount-holds';
import { verifyRequestFor } from '../payments/terms';
import { verifyWithAdapter } from '../payments/check';
import type { PaymentSettings } from '../payments/rows';
import { normalizeTxRef } from '../payments/submit';
import { judgeTransfer, lateWindowMs, recheckColumns } from '../payments/verdict';
import type { Verdict } from '../payments/verdict';
import { capabilityMatches } from '../platform/capabilities';
import { sha256Hex } from '../platform/crypto';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { conflict, notFound, validationFailed } from '../platform/errors';
import { logger } from '../platform/log';
import type { Queues } from '../platform/queues';
import { issueLicense } from './licenses';
import { termsOf } from './rows';
import type { CheckoutRow, CheckoutSettlement, CheckoutStatus } from './rows';

const open: CheckoutStatus[] = ['pending', 'verifying'];
/** States in which a (new) transfer may be submitted. */
const payable: CheckoutStatus[] = ['awaiting_payment', 'underpaid', 'rejected'];

// Compared when no checkout has the id, so an absent checkout costs what a wrong secret does.
const NO_SECRET = sha256Hex('no checkout');

/**
 * The checkout with this id whose client secret this is, or the same 404 as for no checkout at all:
 * an id without its secret (none, a wrong one, another checkout's) opens nothing and learns nothing.
 */
export async function checkoutOpenedBy(
  db: Db,
  checkoutId: string,
  clientSecret: string | undefined,
  opts: { forUpdate?: boolean } = {},
): Promise<CheckoutRow> {
  const q = db('checkouts').where({ id: checkoutId });
  if (opts.forUpdate) q.forUpdate();
  const row = (await q.first()) as CheckoutRow | undefined;
  const opens = capabilityMatches('checkout', clientSecret, row?.client_secret_hash ?? NO_SECRET);
  if (!row || !opens) throw notFound(`Checkout ${checkoutId}`);
  return row;
}

/** Ends checkouts whose quote and watch window are over without a transfer under verification. */
export async function expireCheckouts(db: Db, checkoutId?: string, now = new Date()): Promise<number> {
  const q = db('checkouts')
    .where({ status: 'awaiting_payment' })
    .andWhere('expires_at', '<', new Date(now.getTime() - lateWindowMs(env)));
  if (checkoutId) q.andWhere({ id: checkoutId });
  return q.update({
    status: 'expired',
    reason: 'quote_expired',
    detail: 'The quote and its watch window ended before a transfer was submitted.',
    settled_at: now,
    updated_at: now,
  });
}

export interface SubmitCheckoutInput {
  checkoutId: string;
  /** The checkout's client secret: without it the checkout does not exist for this caller. */
  clientSecret: string | undefined;
  txRef: string;
  txKey?: string | undefined;
}

/**
 * Binds a transfer to a checkout and queues its verification. The same transfer again is harmless
 * (answers the checkout as it is); another transfer while one is being verified, a transfer already
 * credited anywhere, a paid or expired checkout are refused with 409 and change nothing.
 */
export async function submitCheckoutPayment(
  db: Db,
  queues: Queues,
  input: SubmitCheckoutInput,
  now = new Date(),
): Promise<{ checkout: CheckoutRow; enqueued: boolean }> {
  const result = await db.transaction(async (trx) => {
    // The secret first: a caller without it changes nothing, not even the checkout's expiry.
    await checkoutOpenedBy(trx, input.checkoutId, input.clientSecret, { forUpdate: true });
    await expireCheckouts(trx, input.checkoutId, now);
    const checkout = (await trx('checkouts').where({ id: input.checkoutId }).first()) as CheckoutRow;
    if (checkout.license_type === 'TRIAL' || !checkout.asset) {
      throw conflict(
        'checkout_not_payable',
        'A trial checkout takes no payment; its license is already issued.',
      );
    }
    const asset = findAsset(checkout.asset);
    if (!asset) throw conflict('checkout_not_payable', `${checkout.asset} is no longer configured.`);
    const txRef = normalizeTxRef(asset, input.txRef);
    if (asset.family === 'monero') {
      if (!input.txKey || !/^[0-9a-fA-F]{64}$/.test(input.txKey))
        throw validationFailed([
          { path: 'body.txKey', message: 'XMR payments need the 64-hex transaction key' },
        ]);
    } else if (input.txKey !== undefined) {
      throw validationFailed([{ path: 'body.txKey', message: 'only XMR payments take a transaction key' }]);
    }
    if (checkout.tx_ref === txRef && (open.includes(checkout.status) || checkout.status === 'confirmed')) {
      return { checkout, enqueued: open.includes(checkout.status) };
    }
    if (checkout.status === 'confirmed') {
      throw conflict('checkout_already_paid', 'This checkout is paid; its license is issued.');
    }
    if (open.includes(checkout.status)) {
      throw conflict('checkout_verifying', 'Another transaction is being verified for this checkout.');
    }
    if (checkout.status === 'expired' || !payable.includes(checkout.status)) {
      throw conflict('checkout_expired', 'This checkout has expired; prepare a new one.');
    }
    // Submissions of one transaction are serialised with job payments' (same lock key). One being
    // verified elsewhere is no reason to refuse: the checkout's binding decides whom it pays.
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`${checkout.network}|${txRef}`]);
    const claim = await trx('payment_claims').where({ chain: checkout.network, tx_ref: txRef }).first();
    if (claim) throw conflict('payment_already_claimed', 'This transaction has already been credited.');
    const [row] = (await trx('checkouts')
      .where({ id: checkout.id })
      .whereIn('status', payable)
      .update({
        status: 'pending',
        tx_ref: txRef,
        tx_key: input.txKey ?? null,
        payer: null,
        reason: null,
        detail: null,
        amount_received: null,
        output: null,
        confirmations: null,
        settlement: null,
        submitted_at: now,
        next_check_at: null,
        updated_at: now,
      })
      .returning('*')) as CheckoutRow[];
    return { checkout: row!, enqueued: true };
  });
  if (result.enqueued) await enqueueCheckout(queues, result.checkout.id);
  return result;
}

/**
 * Enqueues a checkout check. The BullMQ job id is the checkout id, so a finished job of an earlier
 * transfer is removed first; a Redis failure is logged and the sweeper enqueues from Postgres later.
 */
export async function enqueueCheckout(queues: Queues, checkoutId: string): Promise<void> {
  try {
    const previous = await queues.get('checkouts').getJob(checkoutId);
    if (previous) {
      const state = await previous.getState();
      if (state === 'completed' || state === 'failed') await previous.remove();
    }
    await queues.enqueue('checkouts', { checkoutId });
  } catch (err) {
    logger.warn({ checkoutId, err: (err as Error).message }, 'enqueue failed; the sweeper will retry');
  }
}

export type CheckoutOutcome =
  | { outcome: 'skipped' }
  | { outcome: 'settled'; status: CheckoutStatus; settlement?: CheckoutSettlement; licenseId?: string }
  | { outcome: 'recheck'; delayMs: number; reason: string };

export interface CheckoutProcessOptions {
  now?: () => Date;
  settings?: PaymentSettings;
}

/**
 * One check of one checkout's transfer; settles it (and issues the license once) or asks to be run
 * again later. Safe to run twice or concurrently: only a row in pending/verifying is touched, and the
 * settling update is conditional on `verifying`.
 */
export async function processCheckout(
  db: Db,
  checkoutId: string,
  opts: CheckoutProcessOptions = {},
): Promise<CheckoutOutcome> {
  const settings = opts.settings ?? env;
  const now = opts.now ?? (() => new Date());
  const [checkout] = (await db('checkouts')
    .whereIn('status', open)
    .andWhere({ id: checkoutId })
    .update({ status: 'verifying', checks: db.raw('checks + 1'), updated_at: db.fn.now() })
    .returning('*')) as CheckoutRow[];
  if (!checkout) return { outcome: 'skipped' };
  if (!checkout.asset) {
    return settle(db, checkout, {
      status: 'rejected',
      reason: 'unsupported_asset',
      detail: 'The checkout has no asset to pay in.',
    });
  }
  const claimed = (await db('payment_claims')
    .where({ chain: checkout.network, tx_ref: checkout.tx_ref })
    .pluck('output')) as string[];
  const result = await verifyWithAdapter(
    verifyRequestFor(termsOf(checkout), {
      txRef: checkout.tx_ref!,
      txKey: checkout.tx_key,
      skipOutputs: claimed,
    }),
  );
  const judged = judgeTransfer(
    result,
    {
      amount: String(checkout.amount),
      expiresAt: new Date(checkout.expires_at!),
      submittedAt: new Date(checkout.submitted_at!),
      checks: checkout.checks,
      what: 'the checkout',
    },
    settings,
    now(),
  );
  if (judged.kind === 'settle') return settle(db, checkout, judged.verdict);
  const updated = await db('checkouts')
    .where({ id: checkout.id, status: 'verifying' })
    .update({ ...recheckColumns(judged, now()), updated_at: db.fn.now() });
  return updated
    ? { outcome: 'recheck', delayMs: judged.delayMs, reason: judged.reason }
    : { outcome: 'skipped' };
}

/** Another delivery settled the row first: roll back and do nothing. */
class StaleSettlement extends Error {}

/** Writes the verdict in one transaction: the claim on the transfer, the checkout, and the license. */
async function settle(db: Db, checkout: CheckoutRow, verdict: Verdict): Promise<CheckoutOutcome> {
  const done = await db
    .transaction(async (trx) => {
      let v = verdict;
      if (v.status === 'confirmed' || v.status === 'underpaid') {
        v = { ...v, output: v.output ?? 'tx' };
        await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [
          `${checkout.network}|${checkout.tx_ref}`,
        ]);
        const inserted = await trx('payment_claims')
          .insert({
            chain: checkout.network,
            tx_ref: checkout.tx_ref,
            output: v.output!,
            checkout_id: checkout.id,
          })
          .onConflict(['chain', 'tx_ref', 'output'])
          .ignore()
          .returning('checkout_id');
        if (inserted.length === 0) {
          v = {
            status: 'rejected',
            reason: 'already_claimed',
            detail: 'This transfer has already been credited to another purchase.',
            ...(v.amount !== undefined ? { amount: v.amount } : {}),
            output: v.output!,
          };
        }
      }
      const [row] = (await trx('checkouts')
        .where({ id: checkout.id, status: 'verifying' })
        .update({
          status: v.status,
          settlement: v.settlement ?? null,
          reason: v.reason ?? null,
          detail: v.detail ?? null,
          amount_received: v.amount ?? null,
          output: v.output ?? null,
          confirmations: v.confirmations ?? null,
          block_time: v.blockTime ? new Date(v.blockTime) : null,
          payer: v.payer ?? null,
          next_check_at: null,
          settled_at: trx.fn.now(),
          updated_at: trx.fn.now(),
        })
        .returning('*')) as CheckoutRow[];
      if (!row) throw new StaleSettlement();
      if (v.status !== 'confirmed') return { row };
      await releaseAmounts(trx, [row.id]);
      const { license, sealed } = await issueLicense(trx, row, new Date(row.settled_at!));
      if (!sealed) {
        // Prepared before client secrets: the key can be shown to no one (only its hash is kept).
        logger.warn(
          { checkoutId: row.id, licenseId: license.id },
          'license issued for a checkout without a client secret; its key cannot be shown',
        );
      }
      return { row, license };
    })
    .catch((err: unknown) => {
      if (err instanceof StaleSettlement) return undefined;
      throw err;
    });
  if (!done) return { outcome: 'skipped' };
  return {
    outcome: 'settled',
    status: done.row.status,
    ...(done.row.settlement ? { settlement: done.row.settlement } : {}),
    ...(done.license ? { licenseId: done.license.id } : {}),
  };
}

/** For the sweeper: a checkout whose queue job ran out of attempts is ended with the reason. */
export async function failCheckout(db: Db, checkoutId: string, reason: string): Promise<number> {
  return db('checkouts')
    .where({ id: checkoutId })
    .whereIn('status', open)
    .update({
      status: 'rejected',
      reason: 'verification_failed',
      detail: reason.slice(0, 500),
      settled_at: db.fn.now(),
      updated_at: db.fn.now(),
    });
}
