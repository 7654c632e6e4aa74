// Pricing: USD → base units with bigint only (rounded up), rate sources, and payment classification.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEnv } from '../../shared/platform/env';
import { findAsset } from '../../shared/chains/assets';
import type { Asset } from '../../shared/chains/assets';
import {
  ConfigRateSource,
  HttpRateSource,
  QuoteError,
  RateUnavailableError,
  classifyPayment,
  createQuote,
  formatUnits,
  parseDecimal,
  rateSourceFromEnv,
  usdCentsToBaseUnits,
} from '../../shared/payments/pricing';
import { deadUrl, startReplay } from './replay';
import type { Replay } from './replay';

const settings = parseEnv({
  TREASURY_SOLANA: 'BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe',
  TREASURY_EVM: '0x90F8bf6A479f320ead074411a4B0e7944Ea8c9C1',
  TREASURY_BITCOIN: 'bc1q0yqp4f05hxq6pdj5c0urf5zhxk2mpm2ndx85za',
  RATES_USD: 'SOL=142.50,ETH=3150.10,BTC=97000,XMR=160',
  RATES_AS_OF: '2025-06-01T12:00:00Z',
  QUOTE_TTL_SECONDS: '900',
  RATE_MAX_AGE_SECONDS: '3600',
});
const asset = (id: string) => findAsset(id, settings) as Asset;
const at = new Date('2025-06-01T12:30:00Z');

describe('USD to base units', () => {
  it('converts stablecoins 1:1 and exact rates without rounding', () => {
    expect(usdCentsToBaseUnits(1234n, 6, '1')).toBe(12_340_000n);
    expect(usdCentsToBaseUnits(14_250n, 9, '142.50')).toBe(1_000_000_000n); // $142.50 is exactly 1 SOL
    expect(usdCentsToBaseUnits(0n, 18, '3150.10')).toBe(0n);
  });

  it('rounds up, so the quoted amount is never worth less than the price', () => {
    expect(usdCentsToBaseUnits(1000n, 9, '142.50')).toBe(70_175_439n); // 70175438.596… lamports
    expect(usdCentsToBaseUnits(100n, 8, '97000')).toBe(1031n); // 1030.927… sats
    for (const [cents, decimals, rate] of [
      [2500n, 18, '3150.10'],
      [199n, 12, '160'],
      [1n, 8, '97000'],
      [123_456_789n, 9, '142.5'],
    ] as const) {
      const amount = usdCentsToBaseUnits(cents, decimals, rate);
      const rateMicro = parseDecimal(rate, 6);
      // amount/10^d * rate >= cents/100, and one base unit less falls short.
      const worth = (units: bigint) => units * rateMicro * 100n;
      const price = cents * 10n ** BigInt(decimals) * 1_000_000n;
      expect(worth(amount) >= price).toBe(true);
      expect(worth(amount - 1n) < price).toBe(true);
    }
  });

  it('parses decimals strictly and formats base units back', () => {
    expect(parseDecimal('142.5', 2)).toBe(14_250n);
    expect(() => parseDecimal('1e5', 2)).toThrow(RangeError);
    expect(() => parseDecimal('-1', 2)).toThrow(RangeError);
    expect(() => parseDecimal('0.001', 2)).toThrow(/decimal places/);
    expect(() => usdCentsToBaseUnits(100n, 6, '0')).toThrow(RangeError);
    expect(formatUnits(70_175_439n, 9)).toBe('0.070175439');
    expect(formatUnits(12_340_000n, 6)).toBe('12.34');
    expect(formatUnits(10n ** 18n, 18)).toBe('1');
  });
});

describe('quotes', () => {
  it('quotes a stablecoin 1:1 with receiving address, reference and expiry', async () => {
    const quote = await createQuote({ asset: asset('USDC-SOL'), usdCents: 2599, now: at }, settings);
    expect(quote).toMatchObject({
      asset: 'USDC-SOL',
      network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      amount: '25990000',
      amountDisplay: '25.99',
      decimals: 6,
      contract: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
      payTo: 'BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe',
      usdCents: '2599',
      createdAt: '2025-06-01T12:30:00.000Z',
      expiresAt: '2025-06-01T12:45:00.000Z',
    });
    expect(quote.rate).toBeUndefined();
    expect(quote.reference).toMatch(/^pay_[0-9a-z]{26}$/);
  });

  it('quotes non-stable assets through the configured rate with its time; WBTC at the BTC rate', async () => {
    const rates = rateSourceFromEnv(settings);
    const sol = await createQuote({ asset: asset('SOL'), usdCents: 1000, rates, now: at }, settings);
    expect(sol).toMatchObject({
      amount: '70175439',
      rate: { usd: '142.50', asOf: '2025-06-01T12:00:00.000Z', source: 'config' },
    });
    const wbtc = await createQuote({ asset: asset('WBTC-ETH'), usdCents: 100, rates, now: at }, settings);
    expect(wbtc).toMatchObject({
      amount: '1031',
      payTo: '0x90F8bf6A479f320ead074411a4B0e7944Ea8c9C1',
      rate: { usd: '97000' },
    });
  });

  it('refuses a stale rate, a missing rate, a family without treasury and a disabled asset', async () => {
    const rates = new ConfigRateSource('SOL=142.50', new Date('2025-06-01T10:00:00Z'));
    await expect(
      createQuote({ asset: asset('SOL'), usdCents: 100, rates, now: at }, settings),
    ).rejects.toMatchObject({
      code: 'rate_stale',
    });
    await expect(
      createQuote({ asset: asset('ETH'), usdCents: 100, rates, now: at }, settings),
    ).rejects.toMatchObject({
      code: 'rate_unavailable',
    });
    await expect(
      createQuote({ asset: asset('XMR'), usdCents: 100, rates, now: at }, settings),
    ).rejects.toBeInstanceOf(QuoteError);
    await expect(
      createQuote({ asset: asset('XMR'), usdCents: 100, now: at }, settings),
    ).rejects.toMatchObject({ code: 'no_treasury' });
    const off = { ...asset('SOL'), disabled: true };
    await expect(createQuote({ asset: off, usdCents: 100, now: at }, settings)).rejects.toMatchObject({
      code: 'asset_disabled',
    });
  });
});

describe('HTTP rate source', () => {
  let replay: Replay;
  beforeAll(async () => {
    replay = await startReplay((req) => {
      if (req.path === '/rates') {
        return { body: { asOf: '2025-06-01T12:29:00Z', rates: { SOL: '142.50', ETH: 3150.1 } } };
      }
      return { body: { rates: 'nope' } };
    });
  });
  afterAll(() => replay.close());

  it('reads decimal strings and plain numbers with the document time', async () => {
    const source = rateSourceFromEnv(
      parseEnv({ RATE_SOURCE_URL: `${replay.url}/rates`, RATES_USD: 'SOL=1' }),
    );
    expect(source).toBeInstanceOf(HttpRateSource);
    expect(await source!.rate('SOL')).toMatchObject({
      usd: '142.50',
      asOf: new Date('2025-06-01T12:29:00Z'),
    });
    expect(await source!.rate('ETH')).toMatchObject({ usd: '3150.1' });
    const quote = await createQuote(
      { asset: asset('ETH'), usdCents: 315_010, rates: source, now: at },
      settings,
    );
    expect(quote.amount).toBe(String(10n ** 18n));
  });

  it('fails with RateUnavailableError for unknown symbols, bad documents and a dead source', async () => {
    const good = new HttpRateSource(`${replay.url}/rates`, { timeoutMs: 1000 });
    await expect(good.rate('XMR')).rejects.toBeInstanceOf(RateUnavailableError);
    await expect(
      new HttpRateSource(`${replay.url}/bad`, { timeoutMs: 1000 }).rate('SOL'),
    ).rejects.toBeInstanceOf(RateUnavailableError);
    await expect(new HttpRateSource(await deadUrl(), { timeoutMs: 500 }).rate('SOL')).rejects.toBeInstanceOf(
      RateUnavailableError,
    );
  });
});

describe('classifyPayment', () => {
  const expiresAt = new Date('2025-06-01T12:45:00Z');
  const expected = { amount: '1000', expiresAt };
  const times = { lateWindowMs: 60 * 60 * 1000 };
  const seen = (iso: string, amount: string) =>
    classifyPayment(expected, { amount, seenAt: new Date(iso) }, times);

  it('tells exact, over, under, late and expired payments apart', () => {
    expect(seen('2025-06-01T12:40:00Z', '1000')).toBe('exact');
    expect(seen('2025-06-01T12:40:00Z', '1001')).toBe('overpaid');
    expect(seen('2025-06-01T12:40:00Z', '999')).toBe('underpaid');
    expect(seen('2025-06-01T13:00:00Z', '1000')).toBe('paid_late');
    expect(seen('2025-06-01T14:00:00Z', '1000')).toBe('expired');
  });

  it('applies its precedence: expired, then underpaid, then late, then over', () => {
    expect(seen('2025-06-01T14:00:00Z', '999')).toBe('expired');
    expect(seen('2025-06-01T13:00:00Z', '999')).toBe('underpaid');
    expect(seen('2025-06-01T13:00:00Z', '5000')).toBe('paid_late');
    expect(seen('2025-06-01T12:45:00Z', '1000')).toBe('exact'); // at the expiry instant is in time
  });
});
