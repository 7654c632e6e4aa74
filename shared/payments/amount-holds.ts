// Unique amounts held for quotes (EVM; Bitcoin with a single address; payment-gate requests): who holds
// them and on whose budget (`amountHolderFor`), the caps of a holder and of its kind, reserving one, and
// releasing them.
import { randomInt } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import type { Env } from '../platform/env';
import { AppError } from '../platform/errors';
import type { Asset } from '../chains/assets';
import { BindingUnavailable, bindingKindFor } from './binding-kinds';
import type { BindingSettings } from './binding-kinds';

/**
 * Whose unique amounts are counted together: payment-gate requests (`gate`), the job quotes and
 * checkouts of callers without a paid license (`public`), and those of a paid license or the operator
 * (`licensed`).
 */
export const holderKinds = ['gate', 'public', 'licensed'] as const;
export type HolderKind = (typeof holderKinds)[number];

/** The caller a unique amount is held for, as its budget counts it. */
export interface AmountHolder {
  /** The budget owner (`budgetKey`: `net:<tag>`, `agent:<id>`, `license:<id>`, `operator`), never an address. */
  key: string;
  kind: HolderKind;
  /** Open amounts it may hold per asset and receiving address; undefined: no cap of its own (the operator). */
  cap: number | undefined;
}

/**
 * The caller a unique amount is asked for, as the holds count it: the operator, a paid license, a TRIAL
 * license, or anyone else (an anonymous caller, an agent); `budget` is its own budget owner
 * (`budgetKey`), `network` the budget owner of the network it calls from (`net:<tag>`).
 */
export interface HoldingCaller {
  standing: 'operator' | 'license' | 'trial' | 'other';
  budget: string;
  network: string;
}

/**
 * Whose budget a unique amount (a job quote's, a checkout's, a gate request's) is held on, and in
 * which kind: a paid license its own, with its larger cap (`licensed`, gate requests included: they
 * spend the licenses' room); the operator, uncapped; everyone else its `budgetKey` — a network with its
 * anonymous requests and the free agents it registered — and a TRIAL license the network it calls from
 * (trials are free to claim, so they add no holds), as `public`, or `gate` for a gate request.
 */
export function amountHolderFor(
  caller: HoldingCaller,
  gate = false,
  settings: Pick<Env, 'AMOUNT_HOLDS_PER_LICENSE' | 'AMOUNT_HOLDS_PER_CALLER'> = env,
): AmountHolder {
  if (caller.standing === 'operator') return { key: 'operator', kind: 'licensed', cap: undefined };
  if (caller.standing === 'license') {
    return { key: caller.budget, kind: 'licensed', cap: settings.AMOUNT_HOLDS_PER_LICENSE };
  }
  const key = caller.standing === 'trial' ? caller.network : caller.budget;
  return { key, kind: gate ? 'gate' : 'public', cap: settings.AMOUNT_HOLDS_PER_CALLER };
}

/** Token and address as the chain compares them, so one amount is reserved once per receiving account. */
function reservationKey(asset: Asset, payTo: string) {
  const token = asset.contract
    ? asset.family === 'evm'
      ? asset.contract.toLowerCase()
      : asset.contract
    : 'native';
  const to = asset.family === 'evm' || /^(bc|tb|bcrt)1/i.test(payTo) ? payTo.toLowerCase() : payTo;
  return { network: asset.network, token, pay_to: to };
}

const BLIND_DRAWS = 4;
const MAX_DRAWS = 16;

/** The most holds of one kind, counted over the whole asset and address or over the range drawn from. */
export interface KindLimit {
  max: number;
  over: 'asset' | 'range';
}

/**
 * Reserves `base + offset` (offset 1..spread, random) for `owner` until `openUntil`, unique among the
 * open reservations of the asset and address (the unique index decides races). Expired reservations
 * are dropped first. Then, in this order: the holder's own cap (429 `too_many_open_quotes`, counted
 * under a lock per holder, so concurrent requests of one caller cannot pass it together), the limit of
 * its kind (BindingUnavailable), and a free amount. Undefined when no amount is free.
 */
export async function reserveAmount(
  trx: Knex.Transaction,
  input: {
    asset: Asset;
    payTo: string;
    base: bigint;
    spread: number;
    owner: string;
    holder: AmountHolder;
    /** How many holds of the holder's kind there may be; undefined: no limit of the kind. */
    kindLimit?: KindLimit | undefined;
    openUntil: Date;
    now: Date;
  },
): Promise<bigint | undefined> {
  const key = reservationKey(input.asset, input.payTo);
  await trx('payment_amounts').where(key).andWhere('open_until', '<', input.now).delete();
  await checkHolderCap(trx, key, input);
  if (input.kindLimit) await checkKindLimit(trx, key, input, input.kindLimit);
  for (let attempt = 0; attempt < MAX_DRAWS; attempt++) {
    let offset: number | undefined = 1 + randomInt(input.spread);
    // After a few collisions, draw among the amounts still free, so a crowded range fails only when full.
    if (attempt >= BLIND_DRAWS && input.spread <= 100_000) offset = await freeOffset(trx, key, input);
    if (offset === undefined) return undefined;
    const amount = input.base + BigInt(offset);
    const inserted = await trx('payment_amounts')
      .insert({
        ...key,
        amount: amount.toString(),
        owner: input.owner,
        holder: input.holder.key,
        holder_kind: input.holder.kind,
        open_until: input.openUntil,
      })
      .onConflict(['network', 'token', 'pay_to', 'amount'])
      .ignore()
      .returning('id');
    if (inserted.length > 0) return amount;
  }
  return undefined;
}

type ReservationKey = ReturnType<typeof reservationKey>;

/** One caller holds at most its cap of open amounts per asset and address; over it, 429 and nothing held. */
async function checkHolderCap(
  trx: Knex.Transaction,
  key: ReservationKey,
  input: { asset: Asset; holder: AmountHolder; now: Date },
): Promise<void> {
  const { holder } = input;
  if (holder.cap === undefined) return;
  // Held until the transaction ends: the caller's next reservation counts this one.
  await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [
    `amounts|${key.network}|${key.token}|${key.pay_to}|${holder.key}`,
  ]);
  const [row] = (await trx('payment_amounts')
    .where({ ...key, holder: holder.key })
    .count({ n: '*' })
    .min({ first: 'open_until' })) as Array<{ n: string; first: Date | null }>;
  const held = Number(row?.n ?? 0);
  if (held < holder.cap) return;
  const freeAt = new Date(row?.first ?? input.now);
  const retryAfter = Math.max(1, Math.ceil((freeAt.getTime() - input.now.getTime()) / 1000));
  throw new AppError(
    429,
    'too_many_open_quotes',
    `You hold ${held} open amounts of ${input.asset.id}, the most one caller may hold at once; pay one of your open quotes, or wait until ${freeAt.toISOString()}, when the first is released.`,
    {
      headers: { 'Retry-After': String(retryAfter) },
      extra: { asset: input.asset.id, held, limit: holder.cap, releasedAt: freeAt.toISOString() },
    },
  );
}

/**
 * The gate's holds are counted over the whole asset and address (wherever their amounts lie, none can
 * take more of a price's range than that); the public's over the range drawn from.
 */
async function checkKindLimit(
  trx: Knex.Transaction,
  key: ReservationKey,
  input: { asset: Asset; base: bigint; spread: number; holder: AmountHolder },
  limit: KindLimit,
): Promise<void> {
  const q = trx('payment_amounts').where({ ...key, holder_kind: input.holder.kind });
  if (limit.over === 'range') {
    q.andWhere('amount', '>', input.base.toString()).andWhere(
      'amount',
      '<=',
      (input.base + BigInt(input.spread)).toString(),
    );
  }
  const [row] = (await q.count({ n: '*' })) as Array<{ n: string }>;
  if (Number(row?.n ?? 0) < limit.max) return;
  throw new BindingUnavailable(
    'amounts_exhausted',
    limit.over === 'asset'
      ? `The payment gate may hold ${limit.max} amounts of ${input.asset.id} at once, and all are held by open requests; try again later.`
      : `Callers without a paid license may hold ${limit.max} of the amounts from ${input.base + 1n} to ${input.base + BigInt(input.spread)} base units of ${input.asset.id}, and all are held by open quotes; try again later.`,
  );
}

async function freeOffset(
  trx: Knex.Transaction | Db,
  key: ReservationKey,
  input: { base: bigint; spread: number },
): Promise<number | undefined> {
  const taken = new Set(
    (
      (await trx('payment_amounts')
        .where(key)
        .andWhere('amount', '>', input.base.toString())
        .andWhere('amount', '<=', (input.base + BigInt(input.spread)).toString())
        .pluck('amount')) as string[]
    ).map((a) => Number(BigInt(a) - input.base)),
  );
  let k = input.spread - taken.size;
  if (k <= 0) return undefined;
  k = randomInt(k);
  for (let offset = 1; offset <= input.spread; offset++) {
    if (taken.has(offset)) continue;
    if (k-- === 0) return offset;
  }
  return undefined;
}

/** Frees the amounts of quotes that can take no payment any more (paid, expired, matched). */
export async function releaseAmounts(trx: Knex.Transaction | Db, owners: readonly string[]): Promise<void> {
  if (owners.length > 0) await trx('payment_amounts').whereIn('owner', owners).delete();
}

/** Frees every amount whose owner's watch window is over (each sweeper tick). */
export async function releaseExpiredAmounts(db: Db, now = new Date()): Promise<number> {
  return db('payment_amounts').where('open_until', '<', now).delete();
}

/** The range of unique offsets of a quote's amount in an asset bound by amount. */
export const quoteSpread = (asset: Asset) => asset.amountSpread ?? 9_999;

/**
 * What the holds of one kind may fill. The gate: a share of the asset's quote spread, counted over the
 * whole asset and address, and only where job quotes are told apart by amount (elsewhere gate requests
 * take no room from anyone but each other). The public: a share of the range of the price drawn from,
 * so paid licenses always find the rest free. Paid licenses and the operator: no limit of their kind.
 */
export function kindLimitFor(
  asset: Asset,
  kind: HolderKind,
  spread: number,
  settings: Pick<
    BindingSettings,
    'TREASURY_BITCOIN_XPUB' | 'AMOUNT_PUBLIC_SHARE' | 'AMOUNT_GATE_SHARE'
  > = env,
): KindLimit | undefined {
  switch (kind) {
    case 'gate':
      return bindingKindFor(asset.family, settings) === 'amount'
        ? { max: Math.floor(quoteSpread(asset) * settings.AMOUNT_GATE_SHARE), over: 'asset' }
        : undefined;
    case 'public':
      return { max: Math.floor(spread * settings.AMOUNT_PUBLIC_SHARE), over: 'range' };
    case 'licensed':
      return undefined;
  }
}
