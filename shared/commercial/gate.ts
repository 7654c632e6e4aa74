// The random-amount payment gate: a request reserves `base + random` base units of one asset for a
// window, unique among open requests, so a transfer of exactly that amount to the treasury identifies
// the request without a memo.
import { randomInt } from 'node:crypto';
import { DatabaseError } from 'pg';
import { adapterFor } from '../chains';
import type { Db } from '../db/knex';
import { env } from '../env';
import { AppError, conflict, notFound, unprocessable, validationFailed } from '../errors';
import { newId } from '../ids';
import type { AssetId } from '../payments/assets';
import { findAsset } from '../payments/assets';
import { assetAvailability, normalizeTxRef } from '../payments/payments';
import { QuoteError, createQuote, formatUnits } from '../payments/quote';
import type { RateSource } from '../payments/quote';

export const gateStatuses = ['open', 'matched', 'expired'] as const;
export type GateStatus = (typeof gateStatuses)[number];

export interface GateRow {
  id: string;
  asset: AssetId;
  network: string;
  decimals: number;
  contract: string | null;
  pay_to: string;
  base_amount: string;
  amount: string;
  usd_cents: number | null;
  status: GateStatus;
  tx_ref: string | null;
  output: string | null;
  payer: string | null;
  reason: string | null;
  detail: string | null;
  created_at: Date;
  updated_at: Date;
  expires_at: Date;
  matched_at: Date | null;
}

export type GateSettings = Pick<typeof env, 'PAYMENT_GATE_WINDOW_SECONDS' | 'PAYMENT_GATE_SPREAD'>;

const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);
const MAX_ATTEMPTS = 16;
const RANDOM_DRAWS = 4;

/** A random offset in 1..spread whose amount no open request of the asset holds, if one is left. */
async function freeOffset(db: Db, asset: string, base: bigint, spread: number): Promise<number | undefined> {
  const taken = new Set(
    (
      (await db('payment_gate_requests')
        .where({ asset, status: 'open' })
        .andWhere('amount', '>', base.toString())
        .andWhere('amount', '<=', (base + BigInt(spread)).toString())
        .pluck('amount')) as string[]
    ).map((a) => Number(BigInt(a) - base)),
  );
  const free = spread - taken.size;
  if (free <= 0) return undefined;
  // The k-th free offset, k uniform: walk the range skipping taken ones.
  let k = randomInt(free);
  for (let offset = 1; offset <= spread; offset++) {
    if (taken.has(offset)) continue;
    if (k-- === 0) return offset;
  }
  return undefined;
}

export function gateView(row: GateRow) {
  return {
    id: row.id,
    asset: row.asset,
    network: row.network,
    amount: String(row.amount),
    amountDisplay: formatUnits(BigInt(row.amount), row.decimals),
    baseAmount: String(row.base_amount),
    decimals: row.decimals,
    ...(row.contract ? { contract: row.contract } : {}),
    payTo: row.pay_to,
    usdCents: row.usd_cents,
    status: row.status,
    txRef: row.tx_ref,
    payer: row.payer,
    reason: row.reason,
    detail: row.detail,
    createdAt: iso(row.created_at)!,
    expiresAt: iso(row.expires_at)!,
    matchedAt: iso(row.matched_at),
  };
}

/** Releases the amounts of requests whose window is over. */
export async function expireGateRequests(
  db: Db,
  where: { asset?: string; id?: string } = {},
  now = new Date(),
) {
  return db('payment_gate_requests')
    .where({ status: 'open', ...where })
    .andWhere('expires_at', '<=', now)
    .update({ status: 'expired', reason: 'window_closed', updated_at: now });
}

export interface PrepareGateInput {
  asset: AssetId;
  baseAmount?: string | undefined;
  usdCents?: number | undefined;
}

/**
 * Reserves a unique amount: base (given, or priced from USD cents) plus 1..spread random base units.
 * The partial unique index on open (asset, amount) decides collisions; a collision draws again.
 */
export async function prepareGateRequest(
  db: Db,
  input: PrepareGateInput,
  opts: { now?: Date; rates?: RateSource; settings?: GateSettings } = {},
): Promise<GateRow> {
  const settings = opts.settings ?? env;
  const now = opts.now ?? new Date();
  const status = assetAvailability().find((s) => s.asset.id === input.asset);
  if (!status) throw validationFailed([{ path: 'body.asset', message: 'unknown asset' }]);
  if (!status.enabled) {
    throw unprocessable('asset_unavailable', `${input.asset} cannot be paid in now: ${status.detail}`, {
      reason: status.reason,
    });
  }
  let base: bigint;
  if (input.baseAmount !== undefined) {
    base = BigInt(input.baseAmount);
  } else {
    try {
      const quote = await createQuote({
        asset: status.asset,
        usdCents: input.usdCents!,
        now,
        ...(opts.rates ? { rates: opts.rates } : {}),
      });
      base = BigInt(quote.amount);
    } catch (err) {
      if (!(err instanceof QuoteError)) throw err;
      if (err.code === 'rate_unavailable' || err.code === 'rate_stale')
        throw new AppError(503, err.code, err.message, { headers: { 'Retry-After': '60' } });
      throw unprocessable('asset_unavailable', err.message, { reason: err.code });
    }
  }
  await expireGateRequests(db, { asset: input.asset }, now);
  const spread = settings.PAYMENT_GATE_SPREAD;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    // Blind draws first (cheap while the range is sparse); after a few collisions, draw among the
    // amounts still free, so a crowded range fails only when it is really full.
    let offset: number | undefined = 1 + randomInt(spread);
    // (A range too wide to walk cannot be crowded by open requests.)
    if (attempt >= RANDOM_DRAWS && spread <= 100_000)
      offset = await freeOffset(db, input.asset, base, spread);
    if (offset === undefined) break;
    const amount = base + BigInt(offset);
    try {
      const [row] = (await db('payment_gate_requests')
        .insert({
          id: newId('gate'),
          asset: status.asset.id,
          network: status.asset.network,
          decimals: status.asset.decimals,
          contract: status.asset.contract ?? null,
          pay_to: status.payTo,
          base_amount: base.toString(),
          amount: amount.toString(),
          usd_cents: input.usdCents ?? null,
          status: 'open',
          created_at: now,
          updated_at: now,
          expires_at: new Date(now.getTime() + settings.PAYMENT_GATE_WINDOW_SECONDS * 1000),
        })
        .returning('*')) as GateRow[];
      return row!;
    } catch (err) {
      if (
        err instanceof DatabaseError &&
        err.code === '23505' &&
        err.constraint === 'payment_gate_open_amount'
      )
        continue;
      throw err;
    }
  }
  throw new AppError(
    503,
    'gate_amounts_exhausted',
    `Every amount from ${base + 1n} to ${base + BigInt(spread)} of ${input.asset} is reserved by an open request; try again later.`,
    { headers: { 'Retry-After': '30' } },
  );
}

export async function getGateRequest(db: Db, id: string, now = new Date()): Promise<GateRow> {
  await expireGateRequests(db, { id }, now);
  const row = (await db('payment_gate_requests').where({ id }).first()) as GateRow | undefined;
  if (!row) throw notFound(`Payment gate request ${id}`);
  return row;
}

export interface GateVerification {
  matched: boolean;
  status: 'matched' | 'pending' | 'not_found' | 'mismatch';
  reason?: string;
  detail?: string;
  confirmations?: number;
  amountReceived?: string;
}

/**
 * Looks for the transfer through the chain adapter: it must pay the request's asset to the treasury
 * in exactly the reserved amount. A match takes the claim on the transfer (one transfer, one purchase)
 * and closes the request; anything else leaves the request open and says why.
 */
export async function verifyGateRequest(
  db: Db,
  input: { requestId: string; txRef: string },
  now = new Date(),
): Promise<{ request: GateRow; verification: GateVerification }> {
  const request = await getGateRequest(db, input.requestId, now);
  const asset = findAsset(request.asset);
  if (!asset) throw conflict('gate_not_payable', `${request.asset} is no longer configured.`);
  const txRef = normalizeTxRef(asset, input.txRef);
  if (request.status === 'matched') {
    if (request.tx_ref === txRef) return { request, verification: { matched: true, status: 'matched' } };
    throw conflict('gate_already_matched', 'This request was already paid by another transaction.');
  }
  if (request.status === 'expired') {
    throw conflict(
      'gate_expired',
      'This request’s window is over and its amount released; prepare a new one.',
    );
  }
  const claim = await db('payment_claims').where({ chain: request.network, tx_ref: txRef }).first();
  if (claim) throw conflict('payment_already_claimed', 'This transaction has already been credited.');

  const lookup = adapterFor(asset.family);
  if (!lookup.configured) {
    return {
      request,
      verification: {
        matched: false,
        status: 'pending',
        reason: 'adapter_unconfigured',
        detail: lookup.detail,
      },
    };
  }
  const result = await lookup.adapter.verifyTransfer({
    asset,
    txRef,
    to: request.pay_to,
    minAmount: String(request.amount),
    reference: request.id,
  });
  const seen = {
    ...(result.confirmations !== undefined ? { confirmations: result.confirmations } : {}),
    ...(result.amount !== undefined ? { amountReceived: result.amount } : {}),
  };
  if (result.status === 'pending' || result.status === 'not_found') {
    return {
      request,
      verification: {
        matched: false,
        status: result.status,
        ...(result.reason ? { reason: result.reason } : {}),
        ...(result.detail ? { detail: result.detail } : {}),
        ...seen,
      },
    };
  }
  const exact = result.status === 'confirmed' && BigInt(result.amount ?? '-1') === BigInt(request.amount);
  if (!exact) {
    const reason =
      result.status === 'confirmed' || result.reason === 'underpaid'
        ? 'amount_mismatch'
        : (result.reason ?? 'mismatch');
    return {
      request,
      verification: {
        matched: false,
        status: 'mismatch',
        reason,
        detail:
          reason === 'amount_mismatch'
            ? `The transfer pays ${result.amount ?? '0'} base units; this request matches exactly ${request.amount}.`
            : (result.detail ?? 'The transaction does not pay this request.'),
        ...seen,
      },
    };
  }
  const matched = await db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`${request.network}|${txRef}`]);
    const inserted = await trx('payment_claims')
      .insert({
        chain: request.network,
        tx_ref: txRef,
        output: result.output ?? 'tx',
        gate_request_id: request.id,
      })
      .onConflict(['chain', 'tx_ref', 'output'])
      .ignore()
      .returning('gate_request_id');
    if (inserted.length === 0)
      throw conflict('payment_already_claimed', 'This transaction has already been credited.');
    const [row] = (await trx('payment_gate_requests')
      .where({ id: request.id, status: 'open' })
      .update({
        status: 'matched',
        tx_ref: txRef,
        output: result.output ?? 'tx',
        payer: result.payer ?? null,
        matched_at: now,
        updated_at: now,
      })
      .returning('*')) as GateRow[];
    if (!row) throw conflict('gate_already_matched', 'This request was matched by another verification.');
    return row;
  });
  return { request: matched, verification: { matched: true, status: 'matched', ...seen } };
}

/** Gate settings and the number of open requests per asset (for the status route). */
export async function gateOverview(db: Db, settings: GateSettings = env) {
  await expireGateRequests(db);
  const counts = (await db('payment_gate_requests')
    .where({ status: 'open' })
    .groupBy('asset')
    .select('asset')
    .count({ n: '*' })) as Array<{ asset: string; n: string }>;
  return {
    windowSeconds: settings.PAYMENT_GATE_WINDOW_SECONDS,
    randomSpread: { min: 1, max: settings.PAYMENT_GATE_SPREAD },
    open: Object.fromEntries(counts.map((c) => [c.asset, Number(c.n)])),
  };
}
