// What ties a transfer to the one quote it pays, with one rule set for job quotes, license checkouts
// and payment-gate requests: per chain family, what the quote gives the payer (a Solana Pay reference
// key, a unique amount, an address of its own). The kinds are `binding-kinds.ts`, the unique amounts
// `amount-holds.ts`, the terms stored with a row `terms.ts`, the payer's instructions `instructions.ts`.
import bs58 from 'bs58';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { moneroWallet } from '../chains';
import { deriveAddress, parseAccountKey } from '../chains/bitcoin-address';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import type { Asset } from '../chains/assets';
import type { Quote } from './pricing';
import { kindLimitFor, quoteSpread, reserveAmount } from './amount-holds';
import type { AmountHolder } from './amount-holds';
import { BindingUnavailable, bindingKindFor } from './binding-kinds';
import type { BindingKind, BindingSettings } from './binding-kinds';

/** The binding columns a new row is written with. */
export interface BoundColumns {
  pay_to: string;
  amount: string;
  binding: BindingKind;
  reference_key: string | null;
  address_index: number | null;
  token_program: string | null;
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
