// What ties a transfer to the one quote it pays, with one rule set for job quotes, license checkouts
// and payment-gate requests: per chain family, what the quote gives the payer (a Solana Pay reference
// key, a unique amount, an address of its own), the terms stored with it, and the payer's instructions.
import bs58 from 'bs58';
import { randomBytes, randomInt } from 'node:crypto';
import type { Knex } from 'knex';
import { moneroWallet } from '../chains';
import type { ChainSettings, TransferBinding, VerifyRequest } from '../chains';
import { deriveAddress, parseAccountKey } from '../chains/bitcoin-address';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import type { Env } from '../platform/env';
import { AppError } from '../platform/errors';
import { builtInAsset, findAsset } from '../chains/assets';
import type { Asset, AssetId, ChainFamily } from '../chains/assets';
import { formatUnits } from './quote';
import type { Quote } from './quote';

export type BindingKind = TransferBinding['kind'];
export const bindingKinds = ['reference', 'amount', 'address'] as const;

export type BindingSettings = Pick<
  Env,
  'TREASURY_BITCOIN_XPUB' | 'AMOUNT_PUBLIC_SHARE' | 'AMOUNT_GATE_SHARE'
> &
  ChainSettings;

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

/** The binding could not be made now: the asset is left out of the offer, with this reason. */
export class BindingUnavailable extends Error {
  constructor(
    readonly code: 'amounts_exhausted' | 'address_unavailable',
    detail: string,
  ) {
    super(detail);
    this.name = 'BindingUnavailable';
  }
}

/** The columns every payable row keeps of its terms (quotes, checkouts, payment gate requests). */
export interface TermsRow {
  asset: AssetId | string;
  network: string;
  decimals: number;
  contract: string | null;
  token_program: string | null;
  pay_to: string;
  amount: string;
  binding: BindingKind | null;
  reference_key: string | null;
  address_index: number | null;
  created_at: Date;
  expires_at: Date;
}

/** The binding columns a new row is written with. */
export interface BoundColumns {
  pay_to: string;
  amount: string;
  binding: BindingKind;
  reference_key: string | null;
  address_index: number | null;
  token_program: string | null;
}

/** How quotes in an asset are told apart, by family (and, for Bitcoin, by what is configured). */
export function bindingKindFor(
  family: ChainFamily,
  settings: Pick<Env, 'TREASURY_BITCOIN_XPUB'> = env,
): BindingKind {
  switch (family) {
    case 'solana':
      return 'reference';
    case 'evm':
      return 'amount';
    case 'bitcoin':
      return settings.TREASURY_BITCOIN_XPUB ? 'address' : 'amount';
    case 'monero':
      return 'address';
  }
}

/** Work done before the row's transaction (a wallet RPC call must not hold a database transaction open). */
export interface PreBinding {
  kind: BindingKind;
  referenceKey?: string;
  /** Monero: the subaddress the wallet made for this quote. */
  address?: string;
  index?: number;
}

/**
 * First half of binding a quote: a fresh Solana Pay reference key (32 random bytes, as Solana Pay's own
 * `Keypair.generate().publicKey`; no one needs its secret), or a Monero subaddress labelled with the
 * quote's reference. Throws BindingUnavailable when the wallet cannot make one.
 */
export async function prepareBinding(
  asset: Asset,
  reference: string,
  settings: BindingSettings = env,
): Promise<PreBinding> {
  const kind = bindingKindFor(asset.family, settings);
  if (kind === 'reference') return { kind, referenceKey: bs58.encode(randomBytes(32)) };
  if (asset.family === 'monero') {
    const wallet = moneroWallet(settings);
    if (!wallet) {
      throw new BindingUnavailable(
        'address_unavailable',
        'MONERO_WALLET_RPC_URL is not set, so no subaddress can be made for a quote.',
      );
    }
    try {
      const sub = await wallet.createSubaddress(reference);
      return { kind, address: sub.address, index: sub.index };
    } catch (err) {
      throw new BindingUnavailable(
        'address_unavailable',
        `The Monero wallet could not make a subaddress: ${(err as Error).message}`,
      );
    }
  }
  return { kind };
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

/** The next unused index of a BIP84 receiving chain; the counter row is locked until the caller commits. */
async function nextAddressIndex(trx: Knex.Transaction | Db, scheme: string): Promise<number> {
  const { rows } = await trx.raw(
    `insert into address_counters (scheme, next_index) values (?, 1)
     on conflict (scheme) do update set next_index = address_counters.next_index + 1
     returning next_index - 1 as index`,
    [scheme],
  );
  return Number((rows as Array<{ index: number }>)[0]!.index);
}

/** The range of unique offsets of a quote's amount in an asset bound by amount. */
const quoteSpread = (asset: Asset) => asset.amountSpread ?? 9_999;

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

/**
 * Second half, inside the row's transaction: the unique amount is reserved (EVM; Bitcoin with a single
 * address; and always for payment-gate requests, whose amount is their identity), the BIP84 address
 * derived at the next index. Throws BindingUnavailable when every amount is taken.
 */
export async function bindQuote(
  trx: Knex.Transaction,
  input: {
    owner: string;
    quote: Quote;
    asset: Asset;
    pre: PreBinding;
    openUntil: Date;
    now: Date;
    /** Whose budget the amount is held on (and so which limits apply). */
    holder: AmountHolder;
    /** Reserve a unique amount whatever the family, with this spread (the payment gate). */
    uniqueAmountSpread?: number;
  },
  settings: BindingSettings = env,
): Promise<BoundColumns> {
  const { quote, asset, pre } = input;
  let payTo = quote.payTo;
  let addressIndex: number | null = null;
  if (pre.kind === 'address') {
    if (asset.family === 'monero') {
      payTo = pre.address!;
      addressIndex = pre.index!;
    } else {
      const account = parseAccountKey(settings.TREASURY_BITCOIN_XPUB!);
      addressIndex = await nextAddressIndex(trx, account.scheme);
      payTo = deriveAddress(account, addressIndex, asset.network);
    }
  }
  let amount = BigInt(quote.amount);
  const spread = input.uniqueAmountSpread ?? (pre.kind === 'amount' ? quoteSpread(asset) : undefined);
  if (spread !== undefined) {
    const reserved = await reserveAmount(trx, {
      asset,
      payTo,
      base: amount,
      spread,
      owner: input.owner,
      holder: input.holder,
      kindLimit: kindLimitFor(asset, input.holder.kind, spread, settings),
      openUntil: input.openUntil,
      now: input.now,
    });
    if (reserved === undefined) {
      throw new BindingUnavailable(
        'amounts_exhausted',
        `Every amount from ${amount + 1n} to ${amount + BigInt(spread)} base units of ${asset.id} is held by an open quote; try again later.`,
      );
    }
    amount = reserved;
  }
  return {
    pay_to: payTo,
    amount: amount.toString(),
    binding: pre.kind,
    reference_key: pre.referenceKey ?? null,
    address_index: addressIndex,
    token_program: asset.tokenProgram ?? null,
  };
}

// ---------------------------------------------------------------------------------------------------
// Reading stored terms

/**
 * The asset as the row recorded it: network, contract/mint, decimals and token program are the row's,
 * never today's configuration; only names and the family come from the registry.
 */
export function assetSnapshot(row: TermsRow): Asset {
  const base = builtInAsset(row.asset) ?? findAsset(row.asset);
  if (!base) throw new Error(`unknown asset ${row.asset}`);
  const { contract: _contract, tokenProgram: _program, ...rest } = base;
  const tokenProgram = row.token_program ?? base.tokenProgram;
  return {
    ...rest,
    network: row.network,
    decimals: row.decimals,
    ...(row.contract ? { contract: row.contract } : {}),
    ...(tokenProgram ? { tokenProgram } : {}),
  };
}

/** The binding a row was made with; undefined for rows made before bindings existed. */
export function bindingOf(row: TermsRow): TransferBinding | undefined {
  switch (row.binding) {
    case 'reference':
      return row.reference_key ? { kind: 'reference', reference: row.reference_key } : undefined;
    case 'amount':
      return { kind: 'amount' };
    case 'address':
      return { kind: 'address', index: row.address_index ?? 0 };
    default:
      return undefined;
  }
}

/** Everything an adapter is asked for one row and one transaction, from the row alone. */
export function verifyRequestFor(
  row: TermsRow,
  tx: { txRef: string; txKey?: string | null; skipOutputs?: readonly string[] },
): VerifyRequest {
  const binding = bindingOf(row);
  return {
    asset: assetSnapshot(row),
    txRef: tx.txRef,
    to: row.pay_to,
    minAmount: String(row.amount),
    ...(binding ? { binding } : {}),
    quotedAt: new Date(row.created_at),
    ...(tx.txKey ? { txKey: tx.txKey } : {}),
    ...(tx.skipOutputs ? { skipOutputs: tx.skipOutputs } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------
// What the payer is told

export interface PaymentInstructions {
  /** The request format: Solana Pay transfer request, EIP-681, BIP21, or the Monero URI scheme. */
  scheme: 'solana-pay' | 'eip-681' | 'bip-21' | 'monero';
  /** Open in a wallet (or show as a QR code): it carries the recipient, amount and identifying fields. */
  uri: string;
  payTo: string;
  asset: string;
  network: string;
  contract?: string;
  /** Base units to send. */
  amount: string;
  amountDisplay: string;
  /** True where the amount itself identifies the quote: send exactly this, no more, no less. */
  exactAmount: boolean;
  /** Solana Pay: the public key the transaction must include as a read-only account. */
  reference?: string;
  /** Submit the transaction id (and for Monero its tx key) to this quote's payment route after sending. */
  notes: string[];
}

const sameTime = 'Send it only after this quote was made: a transfer older than the quote pays nothing.';

/** Builds the payer's instructions and wallet URI from the stored row. */
export function paymentInstructions(
  row: TermsRow,
  meta: { reference: string; label: string; message: string },
): PaymentInstructions {
  const asset = assetSnapshot(row);
  const amount = String(row.amount);
  const display = formatUnits(BigInt(amount), row.decimals);
  const binding = bindingOf(row);
  const common = {
    payTo: row.pay_to,
    asset: String(row.asset),
    network: row.network,
    ...(row.contract ? { contract: row.contract } : {}),
    amount,
    amountDisplay: display,
    exactAmount: binding?.kind === 'amount',
  };
  switch (asset.family) {
    case 'solana': {
      // The Solana Pay transfer request (solana:<recipient>?amount&spl-token&reference&label&message&memo).
      const params = new URLSearchParams({ amount: display });
      if (row.contract) params.set('spl-token', row.contract);
      if (row.reference_key) params.set('reference', row.reference_key);
      params.set('label', meta.label);
      params.set('message', meta.message);
      params.set('memo', meta.reference);
      return {
        scheme: 'solana-pay',
        uri: `solana:${row.pay_to}?${params.toString()}`,
        ...common,
        ...(row.reference_key ? { reference: row.reference_key } : {}),
        notes: [
          `Include ${row.reference_key} as a read-only, non-signer account of the transfer instruction (Solana Pay wallets do this from the URI): a transaction without it pays nothing.`,
          sameTime,
        ],
      };
    }
    case 'evm': {
      // EIP-681: native value to the address, or the token contract's transfer(address, uint256).
      const chainId = row.network.split(':')[1];
      const uri = row.contract
        ? `ethereum:${row.contract}@${chainId}/transfer?address=${row.pay_to}&uint256=${amount}`
        : `ethereum:${row.pay_to}@${chainId}?value=${amount}`;
      return {
        scheme: 'eip-681',
        uri,
        ...common,
        notes: [
          `Send exactly ${amount} base units (${display} ${asset.symbol}): the amount tells this quote from every other open one, so any other amount pays nothing here.`,
          sameTime,
        ],
      };
    }
    case 'bitcoin': {
      const params = new URLSearchParams({ amount: display, label: meta.label, message: meta.message });
      return {
        scheme: 'bip-21',
        uri: `bitcoin:${row.pay_to}?${params.toString()}`,
        ...common,
        notes: [
          binding?.kind === 'amount'
            ? `Send exactly ${amount} sat: the amount tells this quote from every other open one.`
            : 'The address belongs to this quote alone; a payment to another quote’s address does not pay this one.',
          sameTime,
        ],
      };
    }
    case 'monero': {
      const params = new URLSearchParams({ tx_amount: display, tx_description: meta.message });
      return {
        scheme: 'monero',
        uri: `monero:${row.pay_to}?${params.toString()}`,
        ...common,
        notes: [
          'The subaddress belongs to this quote alone. Submit the transaction id with its tx key (get_tx_key); an output locked until a later time or height pays nothing.',
          sameTime,
        ],
      };
    }
  }
}
