// The random-amount payment gate: a request reserves `base + random` base units of one asset for a
// window, unique among every open quote of that asset and address (job quotes and checkouts too), so a
// transfer of exactly that amount identifies the request without a memo. It is bound to its transfer
// by the same rules as every quote: the family's binding, and a transfer made after the request.
// A request opens with its client secret (gs_…, returned once by prepare), never by its id alone.
import { DatabaseError } from 'pg';
import { capabilityMatches } from '../platform/capabilities';
import { adapterFor } from '../chains';
import { sha256Hex } from '../platform/crypto';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { AppError, conflict, notFound, unprocessable, validationFailed } from '../platform/errors';
import { newId } from '../platform/ids';
import type { AssetId } from '../chains/assets';
import { findAsset } from '../chains/assets';
import { releaseAmounts } from './amount-holds';
import type { AmountHolder } from './amount-holds';
import { bindQuote, prepareBinding } from './binding';
import { BindingUnavailable } from './binding-kinds';
import type { BindingKind } from './binding-kinds';
import { paymentInstructions } from './instructions';
import { verifyRequestFor } from './terms';
import { assetAvailability } from './availability';
import { normalizeTxRef } from './submit';
import { QuoteError, createQuote, formatUnits } from './pricing';
import type { RateSource } from './pricing';

export const gateStatuses = ['open', 'matched', 'expired'] as const;
export type GateStatus = (typeof gateStatuses)[number];

export interface GateRow {
  id: string;
  asset: AssetId;
  network: string;
  decimals: number;
  contract: string | null;
  token_program: string | null;
  pay_to: string;
  binding: BindingKind | null;
  reference_key: string | null;
  address_index: number | null;
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
  /** sha256 of the request's client secret; null for requests made before there were client secrets. */
  client_secret_hash: string | null;
}

export type GateSettings = Pick<typeof env, 'PAYMENT_GATE_WINDOW_SECONDS' | 'PAYMENT_GATE_SPREAD'>;

const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);
const MAX_ATTEMPTS = 3;

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
    ...(row.binding ? { binding: row.binding } : {}),
    paymentInstructions: paymentInstructions(
      { ...row, amount: String(row.amount) },
      { reference: row.id, label: 'proof-exchange', message: `Payment request ${row.id}` },
    ),
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
  const expired = (await db('payment_gate_requests')
    .where({ status: 'open', ...where })
    .andWhere('expires_at', '<=', now)
    .update({ status: 'expired', reason: 'window_closed', updated_at: now })
    .returning('id')) as Array<{ id: string }>;
  await releaseAmounts(
    db,
    expired.map((r) => r.id),
  );
  return expired.length;
}

export interface PrepareGateInput {
  asset: AssetId;
  baseAmount?: string | undefined;
  usdCents?: number | undefined;
  /** Whose budget the amount is held on (`gate` unless a paid license or the operator asks). */
  holder: AmountHolder;
  /** The hash of the request's client secret (`newCapability('gate')`), which the caller shows once. */
  clientSecretHash: string;
}

/**
 * Reserves a unique amount: base (given, or priced from USD cents) plus 1..spread random base units,
 * unique among every open quote of the asset and address (the shared reservation's unique index decides
 * races), with the asset family's binding besides (a Solana Pay reference key, an address of its own).
 * The amount counts against the holder's cap (429 `too_many_open_quotes`) and, unless a paid license
 * holds it, against the gate's share of the asset (503 `gate_amounts_exhausted`).
 */
export async function prepareGateRequest(
  db: Db,
  input: PrepareGateInput,
  opts: { now?: Date; rates?: RateSource; settings?: GateSettings } = {},
): Promise<GateRow> {
  const settings = opts.settings ?? env;
  const now = opts.now ?? new Date();
  const status = (await assetAvailability()).find((s) => s.asset.id === input.asset);
  if (!status) throw validationFailed([{ path: 'body.asset', message: 'unknown asset' }]);
  if (!status.enabled) {
    throw unprocessable('asset_unavailable', `${input.asset} cannot be paid in now: ${status.detail}`, {
      reason: status.reason,
    });
  }
  let quote;
  try {
    quote = await createQuote({
      // A given base amount needs no price: quote it as a zero-cent stable amount, then set the base.
      asset: input.baseAmount === undefined ? status.asset : { ...status.asset, stable: true },
      usdCents: input.usdCents ?? 0,
      now,
      ttlSeconds: settings.PAYMENT_GATE_WINDOW_SECONDS,
      ...(opts.rates ? { rates: opts.rates } : {}),
    });
  } catch (err) {
    if (!(err instanceof QuoteError)) throw err;
    if (err.code === 'rate_unavailable' || err.code === 'rate_stale')
      throw new AppError(503, err.code, err.message, { headers: { 'Retry-After': '60' } });
    throw unprocessable('asset_unavailable', err.message, { reason: err.code });
  }
  if (input.baseAmount !== undefined) quote = { ...quote, amount: BigInt(input.baseAmount).toString() };
  const id = newId('gate');
  let pre;
  try {
    pre = await prepareBinding(status.asset, id);
  } catch (err) {
    if (!(err instanceof BindingUnavailable)) throw err;
    throw unprocessable('asset_unavailable', err.message, { reason: err.code });
  }
  await expireGateRequests(db, { asset: input.asset }, now);
  const expiresAt = new Date(now.getTime() + settings.PAYMENT_GATE_WINDOW_SECONDS * 1000);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      return await db.transaction(async (trx) => {
        const bound = await bindQuote(trx, {
          owner: id,
          // A gate request holds the gate's room, unless a paid license spends its own.
          holder: { ...input.holder, kind: input.holder.kind === 'licensed' ? 'licensed' : 'gate' },
          quote: quote,
          asset: status.asset,
          pre,
          openUntil: expiresAt,
          now,
          uniqueAmountSpread: settings.PAYMENT_GATE_SPREAD,
        });
        const [row] = (await trx('payment_gate_requests')
          .insert({
            id,
            asset: status.asset.id,
            network: status.asset.network,
            decimals: status.asset.decimals,
            contract: status.asset.contract ?? null,
            base_amount: quote.amount,
            usd_cents: input.usdCents ?? null,
            client_secret_hash: input.clientSecretHash,
            ...bound,
            status: 'open',
            created_at: now,
            updated_at: now,
            expires_at: expiresAt,
          })
          .returning('*')) as GateRow[];
        return row!;
      });
    } catch (err) {
      if (err instanceof BindingUnavailable) {
        throw new AppError(503, 'gate_amounts_exhausted', err.message, { headers: { 'Retry-After': '30' } });
      }
      // An open request of the same amount whose window closed a moment ago: draw again.
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
    `No free amount of ${input.asset} could be reserved; try again later.`,
    {
      headers: { 'Retry-After': '30' },
    },
  );
}

// Compared when no request has the id, so an absent request costs what a wrong secret does.
const NO_SECRET = sha256Hex('no gate request');

/**
 * The request with this id whose client secret this is, or the same 404 as for no request at all. The
 * secret is checked before anything is written (not even the request's expiry).
 */
export async function getGateRequest(
  db: Db,
  id: string,
  clientSecret: string | undefined,
  now = new Date(),
): Promise<GateRow> {
  const found = (await db('payment_gate_requests').where({ id }).first('client_secret_hash')) as
    Pick<GateRow, 'client_secret_hash'> | undefined;
  if (!capabilityMatches('gate', clientSecret, found?.client_secret_hash ?? NO_SECRET) || !found) {
    throw notFound(`Payment gate request ${id}`);
  }
  await expireGateRequests(db, { id }, now);
  return (await db('payment_gate_requests').where({ id }).first()) as GateRow;
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
  input: { requestId: string; clientSecret: string | undefined; txRef: string },
  now = new Date(),
): Promise<{ request: GateRow; verification: GateVerification }> {
  const request = await getGateRequest(db, input.requestId, input.clientSecret, now);
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
  const result = await lookup.adapter.verifyTransfer(
    verifyRequestFor({ ...request, amount: String(request.amount) }, { txRef }),
  );
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
    await releaseAmounts(trx, [row.id]);
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
