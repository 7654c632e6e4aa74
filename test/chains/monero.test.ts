// Monero adapter against monero-wallet-rpc `check_tx_key` answers (the documented exchange, replayed).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adapterFor, moneroWallet } from '../../shared/chains';
import { createMoneroAdapter, unlocked } from '../../shared/chains/monero';
import { parseEnv } from '../../shared/platform/env';
import { findAsset } from '../../shared/chains/assets';
import type { Asset } from '../../shared/chains/assets';
import { deadUrl, fixture, rpcError, rpcResult, startReplay } from './replay';
import type { Replay } from './replay';

type Exchange = {
  request: { params: { txid: string; tx_key: string; address: string } };
  response: { result: { confirmations: number; in_pool: boolean; received: number } };
};
const recorded = fixture<Exchange>('monero/check_tx_key.json');
const { txid, tx_key: txKey, address } = recorded.request.params;

// Variants of the recorded answer (derived): the same transfer deeper in the chain, in the pool,
// and as the wallet answers for an address the key shows nothing for.
const DEEP = 'aa'.repeat(32);
const IN_POOL = 'bb'.repeat(32);
const UNKNOWN = 'cc'.repeat(32);
const BIG = 'dd'.repeat(32);
// The treasury wallet's own record of the transfer (get_transfer_by_txid), and its variants with an
// unlock time in the future: by height, and by Unix time (derived).
const wallet = fixture<{
  get_address: { address: string };
  validate_address: Record<string, unknown>;
  create_address: { address: string; address_index: number };
  get_transfer_by_txid: { transfer: Record<string, unknown> & { height: number } };
}>('monero/wallet.json');
const LOCKED_HEIGHT = 'ab'.repeat(32);
const LOCKED_TIME = 'ac'.repeat(32);
const STAGENET = 'monero:76ee3cc98646292206cd3e86f74d88b4';
const nettype = 'stagenet';

let replay: Replay;
beforeAll(async () => {
  replay = await startReplay((req) => {
    if (req.path !== '/json_rpc') return { status: 404, body: '' };
    const { method, params } = req.body as { method: string; params: Exchange['request']['params'] };
    if (method === 'get_address') return rpcResult(req, wallet.get_address);
    if (method === 'validate_address') return rpcResult(req, { ...wallet.validate_address, nettype });
    if (method === 'create_address') return rpcResult(req, wallet.create_address);
    if (method === 'get_transfer_by_txid') {
      const record: Record<string, unknown> & { height: number } = {
        ...wallet.get_transfer_by_txid.transfer,
        txid: params.txid,
      };
      if (params.txid === LOCKED_HEIGHT) record.unlock_time = record.height + 10_000;
      if (params.txid === LOCKED_TIME) record.unlock_time = Math.floor(Date.now() / 1000) + 30 * 86_400;
      return rpcResult(req, { transfer: record, transfers: [record] });
    }
    if (method !== 'check_tx_key') return rpcError(req, -32601, 'Method not found');
    if (params.txid === LOCKED_HEIGHT || params.txid === LOCKED_TIME)
      return rpcResult(req, { ...recorded.response.result, confirmations: 15 });
    if (params.address !== address) return rpcResult(req, { ...recorded.response.result, received: 0 });
    if (params.txid === txid) return rpcResult(req, recorded.response.result);
    if (params.txid === DEEP) return rpcResult(req, { ...recorded.response.result, confirmations: 15 });
    if (params.txid === IN_POOL) return rpcResult(req, { ...recorded.response.result, in_pool: true });
    // 18446744.073709551615 XMR in atomic units: beyond a double's exact integers.
    if (params.txid === BIG) {
      return {
        body: `{"id":"0","jsonrpc":"2.0","result":{"confirmations":20,"in_pool":false,"received":18446744073709551615}}`,
      };
    }
    if (params.txid === UNKNOWN) return rpcError(req, -1, 'Failed to get transaction from daemon');
    return rpcError(req, -8, 'TX ID has invalid format');
  });
});
afterAll(() => replay.close());

function setup() {
  const settings = parseEnv({
    MONERO_WALLET_RPC_URL: replay.url,
    MONERO_CONFIRMATIONS: '10',
    TREASURY_MONERO: wallet.get_address.address,
    ASSETS_JSON: JSON.stringify({ XMR: { network: STAGENET } }),
  });
  const lookup = adapterFor('monero', settings);
  if (!lookup.configured) throw new Error(lookup.detail);
  return { adapter: lookup.adapter, xmr: findAsset('XMR', settings) as Asset };
}

describe('Monero adapter (check_tx_key)', () => {
  it('sends txid, tx_key and address, and waits while the recorded transfer has 0 confirmations', async () => {
    const { adapter, xmr } = setup();
    const result = await adapter.verifyTransfer({
      asset: xmr,
      txRef: txid,
      txKey,
      to: address,
      minAmount: 10n ** 12n,
    });
    expect(result).toMatchObject({
      status: 'pending',
      reason: 'too_few_confirmations',
      amount: '1000000000000',
      confirmations: 0,
    });
    const checked = replay.requests.filter((r) => (r.body as { method: string }).method === 'check_tx_key');
    expect((checked.at(-1)?.body as { params: unknown }).params).toEqual({
      txid,
      tx_key: txKey,
      address,
    });
  });

  it('confirms once deep enough, and calls less than quoted underpaid', async () => {
    const { adapter, xmr } = setup();
    const ok = await adapter.verifyTransfer({
      asset: xmr,
      txRef: DEEP,
      txKey,
      to: address,
      minAmount: 10n ** 12n,
    });
    expect(ok).toEqual({
      status: 'confirmed',
      amount: '1000000000000',
      output: 'tx',
      confirmations: 15,
      blockTime: '2023-10-11T15:15:16.000Z',
    });
    const under = await adapter.verifyTransfer({
      asset: xmr,
      txRef: DEEP,
      txKey,
      to: address,
      minAmount: 10n ** 12n + 1n,
    });
    expect(under).toMatchObject({ status: 'mismatch', reason: 'underpaid' });
  });

  it('keeps every base unit of large amounts', async () => {
    const { adapter, xmr } = setup();
    const result = await adapter.verifyTransfer({
      asset: xmr,
      txRef: BIG,
      txKey,
      to: address,
      minAmount: 1n,
    });
    expect(result).toMatchObject({ status: 'confirmed', amount: '18446744073709551615' });
  });

  it('is pending while in the pool', async () => {
    const { adapter, xmr } = setup();
    const result = await adapter.verifyTransfer({
      asset: xmr,
      txRef: IN_POOL,
      txKey,
      to: address,
      minAmount: 1n,
    });
    expect(result).toMatchObject({ status: 'pending', reason: 'in_mempool', confirmations: 0 });
  });

  it('calls nothing received by the address a wrong recipient', async () => {
    const { adapter, xmr } = setup();
    const other = '5'.repeat(95);
    const result = await adapter.verifyTransfer({ asset: xmr, txRef: DEEP, txKey, to: other, minAmount: 1n });
    expect(result).toMatchObject({ status: 'mismatch', reason: 'wrong_recipient' });
  });

  it('needs the tx key, and maps the wallet errors', async () => {
    const { adapter, xmr } = setup();
    const base = { asset: xmr, to: address, minAmount: 1n };
    expect(await adapter.verifyTransfer({ ...base, txRef: DEEP })).toMatchObject({
      status: 'mismatch',
      reason: 'tx_key_required',
    });
    expect(await adapter.verifyTransfer({ ...base, txRef: DEEP, txKey: 'xyz' })).toMatchObject({
      status: 'mismatch',
      reason: 'invalid_tx_key',
    });
    expect(await adapter.verifyTransfer({ ...base, txRef: UNKNOWN, txKey })).toEqual({ status: 'not_found' });
    expect(await adapter.verifyTransfer({ ...base, txRef: 'ee'.repeat(32), txKey })).toMatchObject({
      status: 'not_found',
      reason: 'invalid_tx_ref',
    });
  });

  it('is pending when the wallet RPC is down', async () => {
    const { xmr } = setup();
    const down = createMoneroAdapter({
      walletRpcUrl: await deadUrl(),
      confirmations: 10,
      timeoutMs: 500,
      retries: 0,
    });
    const result = await down.verifyTransfer({ asset: xmr, txRef: DEEP, txKey, to: address, minAmount: 1n });
    expect(result).toMatchObject({ status: 'pending', reason: 'rpc_unreachable' });
  });
});

describe('Monero: subaddress per quote, unlock time, network', () => {
  it('makes a subaddress per quote, labelled with the quote, from the treasury wallet only', async () => {
    const settings = parseEnv({
      MONERO_WALLET_RPC_URL: replay.url,
      TREASURY_MONERO: wallet.get_address.address,
    });
    const sub = await moneroWallet(settings)!.createSubaddress('pay_01m7ycenb0y37det98dds34qjx');
    expect(sub).toEqual({ address, index: 1 });
    const made = replay.requests.filter((r) => (r.body as { method: string }).method === 'create_address');
    expect((made.at(-1)?.body as { params: unknown }).params).toEqual({
      account_index: 0,
      label: 'pay_01m7ycenb0y37det98dds34qjx',
    });
    // A wallet that is not the configured treasury never hands out addresses.
    const other = parseEnv({ MONERO_WALLET_RPC_URL: replay.url, TREASURY_MONERO: '5'.repeat(95) });
    const before = made.length;
    await expect(moneroWallet(other)!.createSubaddress('pay_x')).rejects.toThrow(/not the TREASURY_MONERO/);
    expect(
      replay.requests.filter((r) => (r.body as { method: string }).method === 'create_address'),
    ).toHaveLength(before);
  });

  it('refuses a check_tx_key transfer whose output is locked until a future height or time', async () => {
    const { adapter, xmr } = setup();
    const binding = { kind: 'address' as const, index: 1 };
    for (const txRef of [LOCKED_HEIGHT, LOCKED_TIME]) {
      const result = await adapter.verifyTransfer({
        asset: xmr,
        txRef,
        txKey,
        to: address,
        minAmount: 1n,
        binding,
      });
      expect(result).toMatchObject({ status: 'mismatch', reason: 'output_locked', amount: '1000000000000' });
    }
    // The unlocked record of the same payment pays.
    const ok = await adapter.verifyTransfer({
      asset: xmr,
      txRef: DEEP,
      txKey,
      to: address,
      minAmount: 1n,
      binding,
    });
    expect(ok).toMatchObject({ status: 'confirmed' });
  });

  it('never settles on a wallet of another network (mainnet XMR, stagenet wallet)', async () => {
    const settings = parseEnv({ MONERO_WALLET_RPC_URL: replay.url, MONERO_CONFIRMATIONS: '10' });
    const lookup = adapterFor('monero', settings);
    if (!lookup.configured) throw new Error(lookup.detail);
    expect(await lookup.adapter.network()).toBe(STAGENET);
    const result = await lookup.adapter.verifyTransfer({
      asset: findAsset('XMR', settings) as Asset,
      txRef: DEEP,
      txKey,
      to: address,
      minAmount: 1n,
    });
    expect(result).toMatchObject({ status: 'pending', reason: 'rpc_wrong_chain' });
  });

  it('judges unlock times as monerod does: heights below 500000000, Unix times above', () => {
    const now = new Date('2025-01-01T00:00:00Z');
    expect(unlocked(0n, 100, now)).toBe(true);
    expect(unlocked(100n, 100, now)).toBe(true);
    expect(unlocked(101n, 100, now)).toBe(false);
    expect(unlocked(BigInt(now.getTime() / 1000), 100, now)).toBe(true);
    expect(unlocked(BigInt(now.getTime() / 1000 + 3600), 100, now)).toBe(false);
  });
});
