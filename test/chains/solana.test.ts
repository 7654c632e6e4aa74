// Solana adapter against recorded getTransaction responses of devnet/mainnet, replayed on loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adapterFor } from '../../shared/chains';
import { associatedTokenAddress, createSolanaAdapter, isOnCurve } from '../../shared/chains/solana';
import { parseEnv } from '../../shared/platform/env';
import { findAsset } from '../../shared/chains/assets';
import type { Asset } from '../../shared/chains/assets';
import { classifyPayment } from '../../shared/payments/pricing';
import { deadUrl, fixture, rpcResult, startReplay } from './replay';
import type { Replay } from './replay';

type Tx = { transaction: { signatures: string[] }; meta: { postTokenBalances: { owner?: string }[] } };
const sig = (tx: Tx) => tx.transaction.signatures[0] as string;

const solTransfer = fixture<Tx>('solana/native-sol-transfer.json'); // BLw3… → FDUG… 0.1 SOL (devnet)
const usdcTransfer = fixture<Tx>('solana/send-usdc-transfer.json'); // BLw3… → BXT1… 0.01 devnet USDC
const jupChecked = fixture<Tx>('solana/send-jup-transfer-checked-to-self.json'); // transferChecked 1 JUP
const createAta = fixture<Tx>('solana/create-associated-token-account.json'); // no transfer at all
const failedSwap = fixture<Tx>('solana/failed-swap.json'); // meta.err set (mainnet)
const withReference = fixture<Tx>('solana/sol-transfer-with-reference.json'); // the SOL transfer naming a reference key
const pyusdWithFee = fixture<Tx>('solana/pyusd-transfer-checked-with-fee.json'); // Token-2022, 1% fee withheld
const genesis = fixture<Record<'mainnet-beta' | 'devnet', { result: string }>>('solana/genesis-hash.json');
const REFERENCE = 'DxKMbSmSV4e9K2Nn79VS5pf7h92qKtPtVTQvaahSAWFy';
const DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';

// The same USDC transfer as a node that omits token-account owners would report it (derived).
const usdcNoOwner = structuredClone(usdcTransfer);
for (const b of usdcNoOwner.meta.postTokenBalances) delete b.owner;
const NO_OWNER_SIG = `${sig(usdcTransfer).slice(0, -4)}1111`;

const DEVNET_USDC = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU';
const JUP = 'JUPyiwrYJFskUPiHa7hkeR8VUtAeFoSYbKedZNsDvCN';
const UNKNOWN_SIG = '5'.repeat(88);
const CONFIRMED_ONLY_SIG = sig(solTransfer).replace(/^2/, '3');

let replay: Replay;
// Which cluster the replayed RPC says it serves (getGenesisHash); the recordings are mostly devnet's.
let cluster: 'mainnet-beta' | 'devnet' = 'devnet';
const finalized = new Map<string, Tx>([
  [sig(withReference), withReference],
  [sig(pyusdWithFee), pyusdWithFee],
  [sig(solTransfer), solTransfer],
  [sig(usdcTransfer), usdcTransfer],
  [sig(jupChecked), jupChecked],
  [sig(createAta), createAta],
  [sig(failedSwap), failedSwap],
  [NO_OWNER_SIG, usdcNoOwner],
]);

beforeAll(async () => {
  replay = await startReplay((req) => {
    const body = req.body as { method: string; params: [string, { commitment: string }] };
    if (body.method === 'getGenesisHash') return rpcResult(req, genesis[cluster].result);
    if (body.method === 'getBalance')
      return rpcResult(req, { context: { slot: 353107528 }, value: 3283860040 });
    if (body.method !== 'getTransaction') return { status: 400, body: 'unexpected method' };
    const [signature, config] = body.params;
    if (config.commitment === 'confirmed' && signature === CONFIRMED_ONLY_SIG)
      return rpcResult(req, solTransfer);
    if (config.commitment === 'confirmed') return rpcResult(req, finalized.get(signature) ?? null);
    return rpcResult(req, finalized.get(signature) ?? null);
  });
});
afterAll(() => replay.close());

function settingsFor(url: string, extra: Record<string, string> = {}) {
  return parseEnv({
    SOLANA_RPC_URL: url,
    CHAIN_RPC_TIMEOUT_MS: '2000',
    CHAIN_RPC_RETRIES: '1',
    ASSETS_JSON: JSON.stringify({
      SOL: { network: DEVNET },
      'USDC-SOL': { contract: DEVNET_USDC, network: DEVNET },
      'USDT-SOL': { contract: JUP, network: DEVNET },
      'PYUSD-SOL': { network: DEVNET },
    }),
    ...extra,
  });
}
function setup(extra: Record<string, string> = {}) {
  const settings = settingsFor(replay.url, extra);
  const lookup = adapterFor('solana', settings);
  if (!lookup.configured) throw new Error(lookup.detail);
  const asset = (id: string) => findAsset(id, settings) as Asset;
  return { adapter: lookup.adapter, asset };
}

describe('Solana adapter (recorded getTransaction responses)', () => {
  it('confirms a finalized SOL transfer and asks for finalized, version-0 transactions', async () => {
    const { adapter, asset } = setup();
    const result = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: sig(solTransfer),
      to: 'FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK',
      minAmount: 100_000_000n,
    });
    expect(result).toMatchObject({
      status: 'confirmed',
      amount: '100000000',
      output: 'account:FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK',
      blockTime: '2025-01-10T09:10:42.000Z',
    });
    expect(result.payer).toBe('BLw3RweJmfbTapJRgnPRvd962YDjFYAnVGd1p5hmZ5tP');
    const call = replay.requests.at(-1)?.body as { params: unknown[] };
    expect(call.params[1]).toEqual({
      encoding: 'json',
      commitment: 'finalized',
      maxSupportedTransactionVersion: 0,
    });
  });

  it('reports an overpayment as confirmed with the amount received', async () => {
    const { adapter, asset } = setup();
    const result = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: sig(solTransfer),
      to: 'FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK',
      minAmount: '60000000',
    });
    expect(result).toMatchObject({ status: 'confirmed', amount: '100000000' });
    const now = new Date();
    expect(
      classifyPayment(
        { amount: '60000000', expiresAt: new Date(now.getTime() + 1000) },
        { amount: result.amount!, seenAt: now },
      ),
    ).toBe('overpaid');
  });

  it('calls a transfer below minAmount underpaid', async () => {
    const { adapter, asset } = setup();
    const result = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: sig(solTransfer),
      to: 'FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK',
      minAmount: 100_000_001n,
    });
    expect(result).toMatchObject({ status: 'mismatch', reason: 'underpaid', amount: '100000000' });
  });

  it('calls SOL sent to someone else a wrong recipient', async () => {
    const { adapter, asset } = setup();
    const result = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: sig(solTransfer),
      to: 'BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe',
      minAmount: 1n,
    });
    expect(result).toMatchObject({ status: 'mismatch', reason: 'wrong_recipient' });
  });

  it('confirms an SPL transfer to the treasury-owned token account, checking the mint', async () => {
    const { adapter, asset } = setup();
    const to = 'BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe';
    const usdc = await adapter.verifyTransfer({
      asset: asset('USDC-SOL'),
      txRef: sig(usdcTransfer),
      to,
      minAmount: 10_000n,
    });
    expect(usdc).toMatchObject({
      status: 'confirmed',
      amount: '10000',
      output: 'token:644PJ6UW8e4gQpjKdBVd4MCYasWjSECKjqd2qzdeAJY6',
    });
    expect(usdc.payer).toBe('BLw3RweJmfbTapJRgnPRvd962YDjFYAnVGd1p5hmZ5tP');

    // The same transfer offered as another token or as SOL is the wrong asset.
    const usdt = await adapter.verifyTransfer({
      asset: asset('USDT-SOL'),
      txRef: sig(usdcTransfer),
      to,
      minAmount: 1n,
    });
    expect(usdt).toMatchObject({ status: 'mismatch', reason: 'wrong_asset' });
    const sol = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: sig(usdcTransfer),
      to,
      minAmount: 1n,
    });
    expect(sol).toMatchObject({ status: 'mismatch', reason: 'wrong_asset' });

    // To another owner it is the wrong recipient.
    const other = await adapter.verifyTransfer({
      asset: asset('USDC-SOL'),
      txRef: sig(usdcTransfer),
      to: 'FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK',
      minAmount: 1n,
    });
    expect(other).toMatchObject({ status: 'mismatch', reason: 'wrong_recipient' });
  });

  it('recognises the derived associated token account when the node reports no owner', async () => {
    const { adapter, asset } = setup();
    const result = await adapter.verifyTransfer({
      asset: asset('USDC-SOL'),
      txRef: NO_OWNER_SIG,
      to: 'BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe',
      minAmount: 10_000n,
    });
    expect(result).toMatchObject({ status: 'confirmed', amount: '10000' });
  });

  it('accepts a configured token account of the treasury', async () => {
    // The treasury here is an unrelated wallet; the credited account is configured as its own.
    const { adapter, asset } = setup({
      SOLANA_TOKEN_ACCOUNTS: '644PJ6UW8e4gQpjKdBVd4MCYasWjSECKjqd2qzdeAJY6',
    });
    const result = await adapter.verifyTransfer({
      asset: asset('USDC-SOL'),
      txRef: NO_OWNER_SIG,
      to: 'FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK',
      minAmount: 10_000n,
    });
    expect(result).toMatchObject({ status: 'confirmed', amount: '10000' });
  });

  it('credits nothing for a transferChecked of an account to itself: nothing arrived', async () => {
    // The instruction says 1 JUP moved; the account's balance did not change, so nothing was received.
    const { adapter, asset } = setup();
    const result = await adapter.verifyTransfer({
      asset: asset('USDT-SOL'), // contract overridden to the JUP mint of the recording
      txRef: sig(jupChecked),
      to: 'DtMUkCoeyzs35B6EpQQxPyyog6TRwXxV1W1Acp8nWBNa',
      minAmount: 1_000_000n,
    });
    expect(result).toMatchObject({ status: 'mismatch', reason: 'not_a_transfer' });
  });

  it('skips outputs already claimed', async () => {
    const { adapter, asset } = setup();
    const result = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: sig(solTransfer),
      to: 'FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK',
      minAmount: 1n,
      skipOutputs: ['account:FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK'],
    });
    expect(result).toMatchObject({ status: 'mismatch', reason: 'already_claimed' });
  });

  it('credits the owner nothing for creating its token account (the rent went to the new account)', async () => {
    const { adapter, asset } = setup();
    const result = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: sig(createAta),
      to: 'Jp8xRDtkd8LQwGvPV8z4DdARsCy23Vi9m2dqyqNsszG',
      minAmount: 1n,
    });
    expect(result).toMatchObject({ status: 'mismatch', reason: 'wrong_recipient' });
  });

  it('calls a failed transaction reverted even where it named the treasury', async () => {
    const { adapter, asset } = setup();
    const result = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: sig(failedSwap),
      to: '9QQjgi73MnaeeMvUYZr9LTaZj4dt3ktstUF8s25zfiJ1',
      minAmount: 1n,
    });
    expect(result).toMatchObject({ status: 'mismatch', reason: 'reverted' });
  });

  it('is pending while only confirmed, and not_found when unknown', async () => {
    const { adapter, asset } = setup();
    const to = 'FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK';
    const pending = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: CONFIRMED_ONLY_SIG,
      to,
      minAmount: 1n,
    });
    expect(pending).toMatchObject({ status: 'pending', reason: 'not_finalized', amount: '100000000' });
    const missing = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: UNKNOWN_SIG,
      to,
      minAmount: 1n,
    });
    expect(missing).toEqual({ status: 'not_found' });
  });

  it('is pending, never a mismatch, when the RPC is down, failing or silent', async () => {
    const base = {
      txRef: sig(solTransfer),
      to: 'FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK',
      minAmount: 1n,
    };
    const sol = setup().asset('SOL');

    const down = createSolanaAdapter({ rpcUrl: await deadUrl(), timeoutMs: 1000, retries: 1, backoffMs: 10 });
    expect(await down.verifyTransfer({ ...base, asset: sol })).toMatchObject({
      status: 'pending',
      reason: 'rpc_unreachable',
    });

    const failing = await startReplay(() => ({ status: 503, body: 'unavailable' }));
    const flaky = createSolanaAdapter({ rpcUrl: failing.url, timeoutMs: 1000, retries: 2, backoffMs: 10 });
    expect(await flaky.verifyTransfer({ ...base, asset: sol })).toMatchObject({
      status: 'pending',
      reason: 'rpc_unreachable',
    });
    expect(failing.requests).toHaveLength(3);
    await failing.close();

    const silent = await startReplay(() => ({ hang: true }));
    const slow = createSolanaAdapter({ rpcUrl: silent.url, timeoutMs: 150, retries: 0 });
    const result = await slow.verifyTransfer({ ...base, asset: sol });
    expect(result).toMatchObject({ status: 'pending', reason: 'rpc_unreachable' });
    expect(result.detail).toContain('150 ms');
    await silent.close();
  });

  it('reads a finalized balance', async () => {
    const { adapter, asset } = setup();
    const balance = await adapter.readBalance!('BLw3RweJmfbTapJRgnPRvd962YDjFYAnVGd1p5hmZ5tP', asset('SOL'));
    expect(balance).toEqual({
      address: 'BLw3RweJmfbTapJRgnPRvd962YDjFYAnVGd1p5hmZ5tP',
      asset: 'SOL',
      amount: '3283860040',
    });
  });

  it('says when the family has no RPC configured', () => {
    const lookup = adapterFor('solana', parseEnv({}));
    expect(lookup).toMatchObject({ configured: false, reason: 'adapter_unconfigured' });
  });
});

describe('associated token accounts', () => {
  it('derives the accounts seen in the recordings, for SPL Token and Token-2022', () => {
    expect(
      associatedTokenAddress(
        'Jp8xRDtkd8LQwGvPV8z4DdARsCy23Vi9m2dqyqNsszG',
        'J1Wpmugrooj1yMyQKrdZ2vwRXG5rhfx3vTnYE39gpump',
      ),
    ).toBe('6X6V7GcxuNt6inqFeyC2fKm7JPAqnZAmUAswc4Q5X7Lz');
    expect(associatedTokenAddress('BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe', DEVNET_USDC)).toBe(
      '644PJ6UW8e4gQpjKdBVd4MCYasWjSECKjqd2qzdeAJY6',
    );
    expect(
      associatedTokenAddress(
        'BYh4CfuGDvFMKaZp3RPmkw9y6qg3sWukA2TiGJDeLKZi',
        'HeLp6NuQkmYB4pYWo2zYs22mESHXPQYzXbB8n4V98jwC',
        'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb',
      ),
    ).toBe('5k4KRS1HVR5DaQhPzY3P9mRBw1k3TK7fug23utRcqgk1');
  });

  it('tells wallet keys (on the curve) from program addresses (off it)', async () => {
    const bs58 = (await import('bs58')).default;
    expect(isOnCurve(bs58.decode('BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe'))).toBe(true);
    expect(isOnCurve(bs58.decode('644PJ6UW8e4gQpjKdBVd4MCYasWjSECKjqd2qzdeAJY6'))).toBe(false);
  });
});

describe('binding a Solana transfer to its quote', () => {
  const treasury = 'FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK';
  // Quotes made a moment before the recorded transfers: the recordings' block time is 2025-01-10.
  const quotedAt = new Date('2025-01-10T09:00:00Z');

  it('pays the quote whose Solana Pay reference key the transaction names', async () => {
    const { adapter, asset } = setup();
    const result = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: sig(withReference),
      to: treasury,
      minAmount: 100_000_000n,
      binding: { kind: 'reference', reference: REFERENCE },
      quotedAt,
    });
    expect(result).toMatchObject({ status: 'confirmed', amount: '100000000' });
  });

  it('refuses the same transfer for a quote with another reference, and one naming no reference', async () => {
    const { adapter, asset } = setup();
    const other = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: sig(withReference),
      to: treasury,
      minAmount: 100_000_000n,
      binding: { kind: 'reference', reference: 'EUVVJGb7JhLw45wCffahrtPi9Q3y4E3n8ikCPhLmy9w2' },
      quotedAt,
    });
    expect(other).toMatchObject({ status: 'mismatch', reason: 'reference_missing' });
    const none = await adapter.verifyTransfer({
      asset: asset('SOL'),
      txRef: sig(solTransfer),
      to: treasury,
      minAmount: 100_000_000n,
      binding: { kind: 'reference', reference: REFERENCE },
      quotedAt,
    });
    expect(none).toMatchObject({ status: 'mismatch', reason: 'reference_missing' });
  });

  it('refuses a transfer whose block is older than the quote, beyond the clock skew', async () => {
    const { adapter, asset } = setup();
    const base = {
      asset: asset('SOL'),
      txRef: sig(withReference),
      to: treasury,
      minAmount: 100_000_000n,
      binding: { kind: 'reference' as const, reference: REFERENCE },
    };
    const late = await adapter.verifyTransfer({ ...base, quotedAt: new Date() });
    expect(late).toMatchObject({ status: 'mismatch', reason: 'transfer_before_quote' });
    // Within the stated two minutes of skew it still pays.
    const skewed = await adapter.verifyTransfer({ ...base, quotedAt: new Date('2025-01-10T09:12:00Z') });
    expect(skewed).toMatchObject({ status: 'confirmed' });
    const beyond = await adapter.verifyTransfer({ ...base, quotedAt: new Date('2025-01-10T09:13:00Z') });
    expect(beyond).toMatchObject({ status: 'mismatch', reason: 'transfer_before_quote' });
  });

  it('credits what arrived in a Token-2022 transfer with a withheld fee, not what was sent', async () => {
    const { adapter, asset } = setup();
    const pyusd = asset('PYUSD-SOL');
    const base = {
      asset: pyusd,
      txRef: sig(pyusdWithFee),
      to: 'BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe',
      binding: { kind: 'reference' as const, reference: 'EUVVJGb7JhLw45wCffahrtPi9Q3y4E3n8ikCPhLmy9w2' },
      quotedAt,
    };
    // 1 PYUSD was sent; 0.01 was withheld as the mint's transfer fee; 0.99 arrived.
    const exact = await adapter.verifyTransfer({ ...base, minAmount: 990_000n });
    expect(exact).toMatchObject({
      status: 'confirmed',
      amount: '990000',
      output: 'token:5vf9J2Pki3QdLzWv6NnKeoZkAbV9jnj1Gn4AaY1JXwzC',
    });
    const quotedOne = await adapter.verifyTransfer({ ...base, minAmount: 1_000_000n });
    expect(quotedOne).toMatchObject({ status: 'mismatch', reason: 'underpaid', amount: '990000' });
  });

  it('refuses a devnet RPC for mainnet assets: never settles, and says why', async () => {
    const settings = parseEnv({ SOLANA_RPC_URL: replay.url, CHAIN_RPC_RETRIES: '0' });
    const lookup = adapterFor('solana', settings);
    if (!lookup.configured) throw new Error(lookup.detail);
    const sol = findAsset('SOL', settings) as Asset; // mainnet, as built in
    expect(await lookup.adapter.network()).toBe(DEVNET);
    const before = replay.requests.length;
    const result = await lookup.adapter.verifyTransfer({
      asset: sol,
      txRef: sig(solTransfer),
      to: treasury,
      minAmount: 1n,
    });
    expect(result).toMatchObject({ status: 'pending', reason: 'rpc_wrong_chain' });
    expect(result.detail).toContain('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp');
    // The transaction itself was never asked for.
    const asked = replay.requests.slice(before).map((r) => (r.body as { method: string }).method);
    expect(asked).not.toContain('getTransaction');
  });

  it('asks the network again after the endpoint was unreachable', async () => {
    cluster = 'mainnet-beta';
    try {
      const settings = parseEnv({ SOLANA_RPC_URL: replay.url });
      const lookup = adapterFor('solana', settings);
      if (!lookup.configured) throw new Error(lookup.detail);
      expect(await lookup.adapter.network()).toBe('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp');
      cluster = 'devnet';
      // Cached while the endpoint stays up...
      expect(await lookup.adapter.network()).toBe('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp');
      // ...asked again after a failure.
      const down = createSolanaAdapter({ rpcUrl: await deadUrl(), timeoutMs: 500, retries: 0 });
      await expect(down.network()).rejects.toThrow();
      const flaky = await startReplay((req) => {
        const body = req.body as { method: string };
        if (body.method === 'getGenesisHash') return rpcResult(req, genesis[cluster].result);
        return { status: 503, body: 'down' };
      });
      const adapter = createSolanaAdapter({ rpcUrl: flaky.url, timeoutMs: 500, retries: 0 });
      cluster = 'mainnet-beta';
      expect(await adapter.network()).toBe('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp');
      cluster = 'devnet';
      const mainnetSol = { ...setup().asset('SOL'), network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' };
      const result = await adapter.verifyTransfer({
        asset: mainnetSol,
        txRef: sig(solTransfer),
        to: treasury,
        minAmount: 1n,
      });
      expect(result).toMatchObject({ status: 'pending', reason: 'rpc_unreachable' });
      expect(await adapter.network()).toBe(DEVNET);
      await flaky.close();
    } finally {
      cluster = 'devnet';
    }
  });
});
