// Pricing a quote: a USD price turned into an amount of one asset in base units (bigint only), with the
// receiving address, a reference and an expiry; and the classification of what was then paid.
import { operatorFetch } from '../platform/egress';
import { z } from 'zod';
import { env } from '../platform/env';
import type { Env } from '../platform/env';
import { newId } from '../platform/ids';
import { canReceive, treasuryFor } from '../chains/assets';
import type { Asset, AssetSettings } from '../chains/assets';

// Rates are carried as integers scaled by 10^RATE_SCALE: enough for any quoted price, and a price
// with more fraction digits is refused rather than silently truncated.
const RATE_SCALE = 12;

/** Parses a non-negative decimal string into an integer scaled by 10^scale; refuses extra digits. */
export function parseDecimal(value: string, scale: number): bigint {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(value.trim());
  if (!m) throw new RangeError(`not a decimal number: ${JSON.stringify(value)}`);
  const whole = m[1] ?? '0';
  const frac = m[2] ?? '';
  if (frac.length > scale) throw new RangeError(`more than ${scale} decimal places: ${value}`);
  return BigInt(whole) * 10n ** BigInt(scale) + BigInt(frac.padEnd(scale, '0') || '0');
}

/** Writes base units as a decimal string of whole coins, e.g. 1500000n with 6 decimals → "1.5". */
export function formatUnits(amount: bigint, decimals: number): string {
  const negative = amount < 0n;
  const abs = negative ? -amount : amount;
  const unit = 10n ** BigInt(decimals);
  const whole = abs / unit;
  const frac = (abs % unit).toString().padStart(decimals, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

/**
 * USD cents → base units of an asset at `usdPerCoin` (a decimal string). The result is rounded UP
 * to the next base unit: a payer who sends the quoted amount has always paid at least the price,
 * so the service is never short-changed by rounding (the payer loses less than one base unit).
 */
export function usdCentsToBaseUnits(usdCents: bigint, decimals: number, usdPerCoin: string): bigint {
  if (usdCents < 0n) throw new RangeError('a price cannot be negative');
  const rate = parseDecimal(usdPerCoin, RATE_SCALE);
  if (rate === 0n) throw new RangeError('a rate of zero cannot convert a price');
  // base = cents/100 / (rate/10^S) * 10^decimals
  return ceilDiv(usdCents * 10n ** BigInt(decimals) * 10n ** BigInt(RATE_SCALE), 100n * rate);
}

export interface Rate {
  symbol: string;
  /** USD per whole coin, a decimal string. */
  usd: string;
  asOf: Date;
  source: string;
}

export interface RateSource {
  /** The USD price of one whole coin of `symbol`; throws RateUnavailableError when it has none. */
  rate(symbol: string): Promise<Rate>;
}

export class RateUnavailableError extends Error {
  constructor(
    readonly symbol: string,
    detail: string,
  ) {
    super(detail);
    this.name = 'RateUnavailableError';
  }
}

/** Rates from configuration: RATES_USD="SOL=142.50,ETH=3150.10" taken at RATES_AS_OF. */
export class ConfigRateSource implements RateSource {
  private readonly rates = new Map<string, string>();

  constructor(
    spec: string,
    private readonly asOf: Date,
  ) {
    for (const pair of spec.split(',').filter(Boolean)) {
      const [symbol, usd] = pair.split('=');
      if (!symbol || !usd) throw new RangeError(`RATES_USD: "${pair}" is not SYMBOL=price`);
      parseDecimal(usd, RATE_SCALE);
      this.rates.set(symbol.trim().toUpperCase(), usd.trim());
    }
  }

  async rate(symbol: string): Promise<Rate> {
    const usd = this.rates.get(symbol.toUpperCase());
    if (!usd) throw new RateUnavailableError(symbol, `RATES_USD has no price for ${symbol}.`);
    return { symbol, usd, asOf: this.asOf, source: 'config' };
  }
}

const rateDocument = z.object({
  asOf: z.iso.datetime({ offset: true }),
  rates: z.record(
    z.string(),
    z.union([
      z.string().regex(/^\d+(?:\.\d+)?$/),
      // A JSON number is accepted only in its shortest decimal form, which String() reproduces.
      z
        .number()
        .nonnegative()
        .transform((n) => String(n))
        .pipe(z.string().regex(/^\d+(?:\.\d+)?$/)),
    ]),
  ),
});

/**
 * Rates from an HTTP JSON document {"asOf": ISO time, "rates": {"SOL": "142.50", ...}}, fetched at
 * most once per `cacheMs`; the document's own asOf is the rate's time, never the fetch time.
 */
export class HttpRateSource implements RateSource {
  private cached: { at: number; doc: z.infer<typeof rateDocument> } | undefined;

  constructor(
    private readonly url: string,
    private readonly options: { timeoutMs: number; cacheMs?: number } = { timeoutMs: 5000 },
  ) {}

  async rate(symbol: string): Promise<Rate> {
    const doc = await this.document(symbol);
    const usd = doc.rates[symbol.toUpperCase()] ?? doc.rates[symbol];
    if (!usd) throw new RateUnavailableError(symbol, `The rate source has no price for ${symbol}.`);
    return { symbol, usd, asOf: new Date(doc.asOf), source: new URL(this.url).host };
  }

  private async document(symbol: string) {
    const cacheMs = this.options.cacheMs ?? 30_000;
    if (this.cached && Date.now() - this.cached.at < cacheMs) return this.cached.doc;
    let body: unknown;
    try {
      const res = await operatorFetch(this.url, {
        signal: AbortSignal.timeout(this.options.timeoutMs),
        headers: { accept: 'application/json' },
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      body = await res.json();
    } catch (err) {
      throw new RateUnavailableError(
        symbol,
        `The rate source could not be read (${(err as Error).message}).`,
      );
    }
    const parsed = rateDocument.safeParse(body);
    if (!parsed.success)
      throw new RateUnavailableError(symbol, 'The rate source answered an unexpected document.');
    this.cached = { at: Date.now(), doc: parsed.data };
    return parsed.data;
  }
}

const processStart = new Date();

/** The configured rate source: RATE_SOURCE_URL if set, else RATES_USD, else none. */
export function rateSourceFromEnv(
  settings: Pick<Env, 'RATE_SOURCE_URL' | 'RATES_USD' | 'RATES_AS_OF' | 'CHAIN_RPC_TIMEOUT_MS'> = env,
): RateSource | undefined {
  if (settings.RATE_SOURCE_URL) {
    return new HttpRateSource(settings.RATE_SOURCE_URL, { timeoutMs: settings.CHAIN_RPC_TIMEOUT_MS });
  }
  if (settings.RATES_USD) {
    return new ConfigRateSource(
      settings.RATES_USD,
      settings.RATES_AS_OF ? new Date(settings.RATES_AS_OF) : processStart,
    );
  }
  return undefined;
}

export interface Quote {
  reference: string;
  asset: Asset['id'];
  network: string;
  /** Base units, an integer string. */
  amount: string;
  /** The same amount in whole coins, for display only. */
  amountDisplay: string;
  decimals: number;
  contract?: string;
  /** Solana: the token program of the mint (SPL Token or Token-2022), kept with the quote. */
  tokenProgram?: string;
  /** The treasury's address; '' until the binding gives the quote one of its own (Bitcoin from an xpub). */
  payTo: string;
  usdCents: string;
  /** The rate used; absent for stablecoins (1:1). */
  rate?: { usd: string; asOf: string; source: string };
  createdAt: string;
  expiresAt: string;
}

export class QuoteError extends Error {
  constructor(
    readonly code: 'asset_disabled' | 'no_treasury' | 'rate_unavailable' | 'rate_stale',
    detail: string,
  ) {
    super(detail);
    this.name = 'QuoteError';
  }
}

export interface QuoteInput {
  asset: Asset;
  usdCents: bigint | number;
  rates?: RateSource;
  now?: Date;
  ttlSeconds?: number;
  reference?: string;
}

/** Prices `usdCents` in `asset`; stablecoins 1:1, others through the rate source (a fresh enough rate). */
export async function createQuote(
  input: QuoteInput,
  settings: AssetSettings & Pick<Env, 'QUOTE_TTL_SECONDS' | 'RATE_MAX_AGE_SECONDS'> = env,
): Promise<Quote> {
  const { asset } = input;
  const usdCents = BigInt(input.usdCents);
  const now = input.now ?? new Date();
  if (asset.disabled) throw new QuoteError('asset_disabled', `${asset.id} is disabled.`);
  if (!canReceive(asset.family, settings))
    throw new QuoteError('no_treasury', `No treasury address is configured for ${asset.family}.`);
  const payTo = treasuryFor(asset.family, settings) ?? '';

  let amount: bigint;
  let rate: Quote['rate'];
  if (asset.stable) {
    amount = usdCentsToBaseUnits(usdCents, asset.decimals, '1');
  } else {
    const source = input.rates ?? rateSourceFromEnv();
    const symbol = asset.rateSymbol ?? asset.symbol;
    if (!source) throw new QuoteError('rate_unavailable', `No rate source is configured for ${symbol}.`);
    let r: Rate;
    try {
      r = await source.rate(symbol);
    } catch (err) {
      if (err instanceof RateUnavailableError) throw new QuoteError('rate_unavailable', err.message);
      throw err;
    }
    const ageMs = now.getTime() - r.asOf.getTime();
    if (ageMs > settings.RATE_MAX_AGE_SECONDS * 1000) {
      throw new QuoteError(
        'rate_stale',
        `The ${symbol} rate is from ${r.asOf.toISOString()}, too old to quote.`,
      );
    }
    amount = usdCentsToBaseUnits(usdCents, asset.decimals, r.usd);
    rate = { usd: r.usd, asOf: r.asOf.toISOString(), source: r.source };
  }
  const ttl = input.ttlSeconds ?? settings.QUOTE_TTL_SECONDS;
  return {
    reference: input.reference ?? newId('pay'),
    asset: asset.id,
    network: asset.network,
    amount: amount.toString(),
    amountDisplay: formatUnits(amount, asset.decimals),
    decimals: asset.decimals,
    ...(asset.contract ? { contract: asset.contract } : {}),
    ...(asset.tokenProgram ? { tokenProgram: asset.tokenProgram } : {}),
    payTo,
    usdCents: usdCents.toString(),
    ...(rate ? { rate } : {}),
    createdAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + ttl * 1000).toISOString(),
  };
}

export type PaymentClass = 'exact' | 'overpaid' | 'underpaid' | 'paid_late' | 'expired';

/**
 * Classifies a payment seen on chain against its quote, BTCPay-style, by when the chain says it was
 * made (its block time), not when it was reported. Precedence, first match wins:
 *  - expired:   seen after the late window closed (expiresAt + lateWindow); recorded, not honoured;
 *  - underpaid: less than quoted, whenever seen;
 *  - paid_late: the full amount, seen after expiry but within the late window;
 *  - overpaid:  more than quoted, in time;
 *  - exact:     the quoted amount, in time.
 */
export function classifyPayment(
  expected: { amount: bigint | string; expiresAt: Date | string },
  received: { amount: bigint | string; seenAt: Date | string },
  times: { lateWindowMs?: number } = {},
): PaymentClass {
  const want = BigInt(expected.amount);
  const got = BigInt(received.amount);
  const expiresAt = new Date(expected.expiresAt).getTime();
  const seenAt = new Date(received.seenAt).getTime();
  const lateWindowMs = times.lateWindowMs ?? env.QUOTE_LATE_WINDOW_SECONDS * 1000;
  if (seenAt > expiresAt + lateWindowMs) return 'expired';
  if (got < want) return 'underpaid';
  if (seenAt > expiresAt) return 'paid_late';
  if (got > want) return 'overpaid';
  return 'exact';
}
