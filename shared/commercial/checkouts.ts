// License checkout: a quote in one asset (or a trial license at once), the payer's transfer checked
// through the chain adapter with the job-payment rules, and the one-time issue of a signed license.
import { DatabaseError } from 'pg';
import type { Knex } from 'knex';
import type { Db } from '../db/knex';
import { env } from '../env';
import { AppError, conflict, notFound, unprocessable, validationFailed } from '../errors';
import { newId } from '../ids';
import { serviceSigningKey } from '../keys';
import { logger } from '../log';
import { findAsset } from '../payments/assets';
import type { AssetId } from '../payments/assets';
import {
  BindingUnavailable,
  bindQuote,
  paymentInstructions,
  prepareBinding,
  releaseAmounts,
  verifyRequestFor,
} from '../payments/binding';
import type { BindingKind, TermsRow } from '../payments/binding';
import { assetAvailability, normalizeTxRef, verifyWithAdapter } from '../payments/payments';
import type { PaymentSettings } from '../payments/payments';
import { QuoteError, createQuote, formatUnits } from '../payments/quote';
import { judgeTransfer, lateWindowMs as watchWindowMs, recheckColumns } from '../payments/verdict';
import type { Verdict } from '../payments/verdict';
import type { RateSource } from '../payments/quote';
import type { Queues } from '../queues';
import { initialCredit } from './entitlements';
import { signLicense, verifyLicense } from './license-token';
import type { LicensePayload } from './license-token';
import { findTier } from './tiers';
import { checkTrialAddress, checkTrialSignature, spendTrialChallenge } from './trials';
import type { TrialProof } from './trials';
import type { LicenseType } from './tiers';

export const checkoutStatuses = [
  'awaiting_payment',
  'pending',
  'verifying',
  'confirmed',
  'rejected',
  'underpaid',
  'expired',
] as const;
export type CheckoutStatus = (typeof checkoutStatuses)[number];
export const checkoutSettlements = ['exact', 'overpaid', 'paid_late', 'trial'] as const;
export type CheckoutSettlement = (typeof checkoutSettlements)[number];
const open: CheckoutStatus[] = ['pending', 'verifying'];
/** States in which a (new) transfer may be submitted. */
const payable: CheckoutStatus[] = ['awaiting_payment', 'underpaid', 'rejected'];

export interface CheckoutRow {
  id: string;
  license_type: LicenseType;
  organization: string;
  organization_key: string;
  email: string;
  asset: AssetId | null;
  network: string | null;
  amount: string | null;
  decimals: number | null;
  contract: string | null;
  token_program: string | null;
  pay_to: string | null;
  base_amount: string | null;
  binding: BindingKind | null;
  reference_key: string | null;
  address_index: number | null;
  usd_cents: number;
  rate: { usd: string; asOf: string; source: string } | null;
  status: CheckoutStatus;
  settlement: CheckoutSettlement | null;
  reason: string | null;
  detail: string | null;
  tx_ref: string | null;
  tx_key: string | null;
  payer: string | null;
  amount_received: string | null;
  output: string | null;
  confirmations: number | null;
  checks: number;
  block_time: Date | null;
  submitted_at: Date | null;
  created_at: Date;
  updated_at: Date;
  expires_at: Date | null;
  next_check_at: Date | null;
  settled_at: Date | null;
}

export interface LicenseRow {
  id: string;
  checkout_id: string;
  tier: LicenseType;
  organization: string;
  organization_key: string;
  period_days: number;
  token: string;
  key_id: string;
  issued_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  credit_usd_cents: number;
}

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);
const lateWindowMs = () => watchWindowMs(env);

// Legal-form words dropped from the end of a name, so "Acme, Inc." and "ACME" are one organization.
const legalSuffixes = new Set([
  'inc',
  'incorporated',
  'llc',
  'ltd',
  'limited',
  'gmbh',
  'ag',
  'sa',
  'sas',
  'sarl',
  'bv',
  'nv',
  'plc',
  'corp',
  'corporation',
  'co',
  'company',
  'lp',
  'llp',
  'oy',
  'ab',
  'as',
  'srl',
  'spa',
  'pty',
  'kk',
]);

/**
 * One spelling per organization: accents stripped (NFKD, marks removed), NFKC, case-folded, everything
 * but letters and digits removed (whitespace too), trailing legal-form words dropped — so "Acmé Corp",
 * "ACME corp." and "Acme, Inc." are one organization.
 */
export function normalizeOrganization(name: string): string {
  const words = name
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .normalize('NFKC')
    .toLowerCase()
    .replace(/ß/g, 'ss')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
    .split(' ')
    .filter(Boolean);
  while (words.length > 1 && legalSuffixes.has(words[words.length - 1]!)) words.pop();
  return words.join('');
}

const isUniqueViolation = (err: unknown, constraint?: string) =>
  err instanceof DatabaseError && err.code === '23505' && (!constraint || err.constraint === constraint);

// ---------------------------------------------------------------------------------------------------
// Licenses

/** Signs and stores the license of a settled checkout, inside the caller's transaction. */
export async function issueLicense(
  trx: Knex.Transaction,
  checkout: CheckoutRow,
  at: Date,
): Promise<LicenseRow> {
  const tier = findTier(checkout.license_type);
  if (!tier) throw new Error(`no license tier ${checkout.license_type}`);
  const id = newId('lic');
  const expiresAt = new Date(at.getTime() + tier.periodDays * 86_400_000);
  const key = serviceSigningKey();
  const token = signLicense(
    {
      licenseId: id,
      checkoutId: checkout.id,
      tier: checkout.license_type,
      organization: checkout.organization,
      periodDays: tier.periodDays,
      issuedAt: at.toISOString(),
      expiresAt: expiresAt.toISOString(),
    },
    key,
  );
  const [row] = (await trx('licenses')
    .insert({
      id,
      checkout_id: checkout.id,
      tier: checkout.license_type,
      organization: checkout.organization,
      organization_key: checkout.organization_key,
      period_days: tier.periodDays,
      token,
      key_id: key.keyId,
      issued_at: at,
      expires_at: expiresAt,
      credit_usd_cents: initialCredit(checkout.license_type),
    })
    .returning('*')) as LicenseRow[];
  return row!;
}

export type LicensePrincipal = { kind: 'license'; licenseId: string; tier: string; organization: string };

/**
 * Resolves a bearer license token: a valid signature by this service, a stored license, not revoked,
 * not expired. Null for anything that is not one of our tokens; AppError for a license that was ours.
 */
export async function resolveLicenseToken(
  db: Db,
  token: string,
  now = new Date(),
): Promise<LicensePrincipal | null> {
  const check = verifyLicense(token, serviceSigningKey().publicKey, now);
  if (!check.valid && check.reason !== 'expired') return null;
  const row = (await db('licenses').where({ id: check.license.licenseId }).first()) as LicenseRow | undefined;
  if (!row || row.token !== token) return null;
  if (row.revoked_at) throw new AppError(401, 'license_revoked', 'This license has been revoked.');
  if (check.expired || new Date(row.expires_at).getTime() <= now.getTime()) {
    throw new AppError(
      401,
      'license_expired',
      `This license expired at ${iso(row.expires_at)}; buy or renew one through the checkout.`,
    );
  }
  return { kind: 'license', licenseId: row.id, tier: row.tier, organization: row.organization };
}

// ---------------------------------------------------------------------------------------------------
// Prepare

export interface PrepareCheckoutInput {
  license: LicenseType;
  asset?: AssetId | undefined;
  organization: string;
  email: string;
  /** TRIAL only: the wallet's signature over a trial challenge, and who asks (an address key). */
  trial?: { proof: TrialProof; addressKey: string; perAddressPerDay: number } | undefined;
}

export interface PreparedCheckout {
  checkout: CheckoutRow;
  license?: LicenseRow;
}

function trialUsed(): AppError {
  return conflict(
    'trial_already_used',
    'This organization or wallet has already had its trial; choose a paid license (Starter, Business or Enterprise).',
  );
}

/**
 * A paid license gets a checkout with a locked quote in the chosen asset; a TRIAL is issued at once,
 * once per normalized organization name (the unique index decides a race).
 */
export async function prepareCheckout(
  db: Db,
  input: PrepareCheckoutInput,
  opts: { now?: Date; rates?: RateSource } = {},
): Promise<PreparedCheckout> {
  const now = opts.now ?? new Date();
  const organizationKey = normalizeOrganization(input.organization);
  if (!organizationKey) {
    throw validationFailed([{ path: 'body.organization', message: 'needs at least one letter or digit' }]);
  }
  const tier = findTier(input.license);
  if (!tier) throw validationFailed([{ path: 'body.license', message: 'unknown license type' }]);
  const base = {
    license_type: input.license,
    organization: input.organization.trim(),
    organization_key: organizationKey,
    email: input.email,
    usd_cents: tier.priceUsdCents,
    created_at: now,
    updated_at: now,
  };

  if (input.license === 'TRIAL') {
    const trial = input.trial;
    if (!trial) {
      throw validationFailed(
        ['wallet', 'challenge', 'signature'].map((f) => ({
          path: `body.${f}`,
          message:
            'a TRIAL is claimed with a wallet signature over a challenge from POST /api/v1/commercial/trial/challenge',
        })),
      );
    }
    checkTrialSignature(trial.proof);
    try {
      return await db.transaction(async (trx) => {
        await checkTrialAddress(trx, trial.addressKey, trial.perAddressPerDay, now);
        await spendTrialChallenge(trx, trial.proof, now);
        const used = await trx('licenses')
          .where({ organization_key: organizationKey, tier: 'TRIAL' })
          .first('id');
        const walletUsed = await trx('trial_claims').where({ wallet: trial.proof.wallet }).first('wallet');
        if (used || walletUsed) throw trialUsed();
        const [checkout] = (await trx('checkouts')
          .insert({
            id: newId('chk'),
            ...base,
            status: 'confirmed',
            settlement: 'trial',
            settled_at: now,
          })
          .returning('*')) as CheckoutRow[];
        await trx('trial_claims').insert({
          checkout_id: checkout!.id,
          wallet: trial.proof.wallet,
          address_key: trial.addressKey,
          created_at: now,
        });
        const license = await issueLicense(trx, checkout!, now);
        return { checkout: checkout!, license };
      });
    } catch (err) {
      if (
        isUniqueViolation(err, 'licenses_one_trial_per_organization') ||
        isUniqueViolation(err, 'trial_claims_wallet_unique')
      )
        throw trialUsed();
      throw err;
    }
  }

  if (!input.asset) {
    throw unprocessable('asset_required', 'A paid license needs the asset you will pay in.');
  }
  const status = (await assetAvailability()).find((s) => s.asset.id === input.asset);
  if (!status) throw validationFailed([{ path: 'body.asset', message: 'unknown asset' }]);
  if (!status.enabled) {
    throw unprocessable('asset_unavailable', `${input.asset} cannot be paid in now: ${status.detail}`, {
      reason: status.reason,
    });
  }
  const id = newId('chk');
  let quote;
  try {
    quote = await createQuote({
      asset: status.asset,
      usdCents: tier.priceUsdCents,
      now,
      reference: id,
      ...(opts.rates ? { rates: opts.rates } : {}),
    });
  } catch (err) {
    if (!(err instanceof QuoteError)) throw err;
    if (err.code === 'rate_unavailable' || err.code === 'rate_stale') {
      throw new AppError(503, err.code, err.message, { headers: { 'Retry-After': '60' } });
    }
    throw unprocessable('asset_unavailable', err.message, { reason: err.code });
  }
  let pre;
  try {
    pre = await prepareBinding(status.asset, id);
  } catch (err) {
    if (!(err instanceof BindingUnavailable)) throw err;
    throw unprocessable('asset_unavailable', err.message, { reason: err.code });
  }
  const expiresAt = new Date(quote.expiresAt);
  const checkout = await db.transaction(async (trx) => {
    let bound;
    try {
      bound = await bindQuote(trx, {
        owner: id,
        quote,
        asset: status.asset,
        pre,
        openUntil: new Date(expiresAt.getTime() + lateWindowMs()),
        now,
      });
    } catch (err) {
      if (!(err instanceof BindingUnavailable)) throw err;
      throw new AppError(503, err.code, err.message, { headers: { 'Retry-After': '30' } });
    }
    const [row] = (await trx('checkouts')
      .insert({
        id,
        ...base,
        asset: quote.asset,
        network: quote.network,
        decimals: quote.decimals,
        contract: quote.contract ?? null,
        base_amount: quote.amount,
        ...bound,
        rate: quote.rate ? JSON.stringify(quote.rate) : null,
        status: 'awaiting_payment',
        expires_at: expiresAt,
      })
      .returning('*')) as CheckoutRow[];
    return row!;
  });
  return { checkout };
}

// ---------------------------------------------------------------------------------------------------
// Reads

/** Ends checkouts whose quote and watch window are over without a transfer under verification. */
export async function expireCheckouts(db: Db, checkoutId?: string, now = new Date()): Promise<number> {
  const q = db('checkouts')
    .where({ status: 'awaiting_payment' })
    .andWhere('expires_at', '<', new Date(now.getTime() - lateWindowMs()));
  if (checkoutId) q.andWhere({ id: checkoutId });
  return q.update({
    status: 'expired',
    reason: 'quote_expired',
    detail: 'The quote and its watch window ended before a transfer was submitted.',
    settled_at: now,
    updated_at: now,
  });
}

export async function getCheckout(
  db: Db,
  checkoutId: string,
): Promise<{ checkout: CheckoutRow; license: LicenseRow | undefined }> {
  await expireCheckouts(db, checkoutId);
  const checkout = (await db('checkouts').where({ id: checkoutId }).first()) as CheckoutRow | undefined;
  if (!checkout) throw notFound(`Checkout ${checkoutId}`);
  const license = (await db('licenses').where({ checkout_id: checkoutId }).first()) as LicenseRow | undefined;
  return { checkout, license };
}

/** The public view of a license (the token is the holder's credential: shown to the checkout holder). */
export function licenseView(row: LicenseRow) {
  const key = serviceSigningKey();
  return {
    id: row.id,
    tier: row.tier,
    organization: row.organization,
    periodDays: row.period_days,
    issuedAt: iso(row.issued_at)!,
    expiresAt: iso(row.expires_at)!,
    revoked: !!row.revoked_at,
    token: row.token,
    keyId: row.key_id,
    verification: {
      publicKey: key.publicKey,
      format:
        'lk_ + base64url(canonical JSON payload) + "." + base64url(ed25519 signature over the payload segment)',
    },
  };
}

/** The public view of a checkout: never the email, never a Monero transaction key. */
export function checkoutView(row: CheckoutRow, license?: LicenseRow) {
  const watchUntil = row.expires_at ? new Date(new Date(row.expires_at).getTime() + lateWindowMs()) : null;
  return {
    id: row.id,
    licenseType: row.license_type,
    organization: row.organization,
    status: row.status,
    settlement: row.settlement,
    reason: row.reason,
    detail: row.detail,
    usdCents: row.usd_cents,
    payment: row.asset
      ? {
          asset: row.asset,
          network: row.network!,
          amount: String(row.amount),
          amountDisplay: formatUnits(BigInt(row.amount!), row.decimals!),
          decimals: row.decimals!,
          ...(row.contract ? { contract: row.contract } : {}),
          payTo: row.pay_to!,
          reference: row.id,
          ...(row.rate ? { rate: row.rate } : {}),
          ...(row.binding ? { binding: row.binding } : {}),
          expiresAt: iso(row.expires_at)!,
          watchUntil: iso(watchUntil)!,
          paymentInstructions: paymentInstructions(termsOf(row), {
            reference: row.id,
            label: 'proof-exchange',
            message: `${row.license_type} license for ${row.organization}`,
          }),
        }
      : null,
    transaction: row.tx_ref
      ? {
          txRef: row.tx_ref,
          payer: row.payer,
          amountReceived: row.amount_received === null ? null : String(row.amount_received),
          confirmations: row.confirmations,
          blockTime: iso(row.block_time),
          submittedAt: iso(row.submitted_at),
          nextCheckAt: iso(row.next_check_at),
        }
      : null,
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
    settledAt: iso(row.settled_at),
    license: license ? licenseView(license) : null,
  };
}

// ---------------------------------------------------------------------------------------------------
// Submission (the verify route)

export interface SubmitCheckoutInput {
  checkoutId: string;
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
  await expireCheckouts(db, input.checkoutId, now);
  const result = await db.transaction(async (trx) => {
    const checkout = (await trx('checkouts').where({ id: input.checkoutId }).forUpdate().first()) as
      CheckoutRow | undefined;
    if (!checkout) throw notFound(`Checkout ${input.checkoutId}`);
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

// ---------------------------------------------------------------------------------------------------
// Verification (the `checkouts` processor)

export type CheckoutOutcome =
  | { outcome: 'skipped' }
  | { outcome: 'settled'; status: CheckoutStatus; settlement?: CheckoutSettlement; licenseId?: string }
  | { outcome: 'recheck'; delayMs: number; reason: string };

export interface CheckoutProcessOptions {
  now?: () => Date;
  settings?: PaymentSettings;
}

/** A checkout's payable terms, as the row recorded them (set for every checkout but a trial). */
function termsOf(row: CheckoutRow): TermsRow {
  return {
    asset: row.asset!,
    network: row.network!,
    decimals: row.decimals!,
    contract: row.contract,
    token_program: row.token_program,
    pay_to: row.pay_to!,
    amount: String(row.amount),
    binding: row.binding,
    reference_key: row.reference_key,
    address_index: row.address_index,
    created_at: row.created_at,
    expires_at: row.expires_at!,
  };
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
      const license = await issueLicense(trx, row, new Date(row.settled_at!));
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

export type { LicensePayload };
