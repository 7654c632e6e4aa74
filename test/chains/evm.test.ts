// EVM adapter against a real local node: ganache, in process, on loopback, with a small ERC-20
// (test/fixtures/chains/evm/TestToken.sol) deployed for each run.
import ganache from 'ganache';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adapterFor, treasuryBalance } from '../../shared/chains';
import { createEvmAdapter } from '../../shared/chains/evm';
import type { ChainAdapter } from '../../shared/chains/types';
import { parseEnv } from '../../shared/platform/env';
import { findAsset } from '../../shared/chains/assets';
import type { Asset } from '../../shared/chains/assets';
import { deadUrl, fixture } from './replay';

const { bytecode } = fixture<{ bytecode: string }>('evm/TestToken.json');
const word = (v: bigint | string) => BigInt(v).toString(16).padStart(64, '0');

let server: ReturnType<typeof ganache.server>;
let url: string;
let payer: string, treasury: string, other: string;
let tokenA: string, tokenB: string;
let adapter: ChainAdapter;
let settings: ReturnType<typeof parseEnv>;
const asset = (id: string) => findAsset(id, settings) as Asset;

async function rpc<T>(method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const doc = (await res.json()) as { result: T; error?: { message: string } };
  if (doc.error) throw new Error(doc.error.message);
  return doc.result;
}
const send = (tx: Record<string, string>) => rpc<string>('eth_sendTransaction', [{ gas: '0x100000', ...tx }]);
const mine = async (blocks: number) => {
  for (let i = 0; i < blocks; i++) await rpc('evm_mine');
};
async function deploy(decimals: number, supply: bigint): Promise<string> {
  const hash = await send({ from: payer, data: `${bytecode}${word(BigInt(decimals))}${word(supply)}` });
  const receipt = await rpc<{ contractAddress: string; status: string }>('eth_getTransactionReceipt', [hash]);
  expect(receipt.status).toBe('0x1');
  return receipt.contractAddress;
}
const transferToken = (token: string, from: string, to: string, amount: bigint) =>
  send({ from, to: token, data: `0xa9059cbb${word(BigInt(to))}${word(amount)}` });

beforeAll(async () => {
  // ganache's bundled typings resolve the options type to `undefined` under this tsconfig.
  const startServer = ganache.server as (options: object) => ReturnType<typeof ganache.server>;
  server = startServer({
    logging: { quiet: true },
    chain: { chainId: 1337 },
    wallet: { deterministic: true, totalAccounts: 3 },
  });
  await server.listen(0, '127.0.0.1');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  [payer, treasury, other] = (await rpc<string[]>('eth_accounts')) as [string, string, string];
  tokenA = await deploy(6, 10n ** 12n);
  tokenB = await deploy(8, 10n ** 12n);
  settings = parseEnv({
    EVM_RPC_URL: url,
    EVM_CONFIRMATIONS: '3',
    TREASURY_EVM: treasury,
    CHAIN_RPC_RETRIES: '0',
    ASSETS_JSON: JSON.stringify({
      ETH: { network: 'eip155:1337' },
      'USDC-ETH': { network: 'eip155:1337', contract: tokenA },
      'WBTC-ETH': { network: 'eip155:1337', contract: tokenB },
    }),
  });
  const lookup = adapterFor('evm', settings);
  if (!lookup.configured) throw new Error(lookup.detail);
  adapter = lookup.adapter;
});
afterAll(() => server?.close());

const ONE_ETH = 10n ** 18n;

describe('EVM adapter (ganache on loopback)', () => {
  it('confirms native value to the treasury; more is overpaid, less is underpaid', async () => {
    const hash = await send({ from: payer, to: treasury, value: `0x${ONE_ETH.toString(16)}` });
    await mine(2);
    const req = { asset: asset('ETH'), txRef: hash, to: treasury };
    const exact = await adapter.verifyTransfer({ ...req, minAmount: ONE_ETH });
    expect(exact).toEqual({
      status: 'confirmed',
      amount: ONE_ETH.toString(),
      output: 'value',
      payer: payer.toLowerCase(),
      confirmations: 3,
      blockTime: expect.any(String),
    });
    // The block's own timestamp, which ganache takes from the clock.
    expect(Math.abs(Date.parse(exact.blockTime!) - Date.now())).toBeLessThan(60_000);
    expect(await adapter.verifyTransfer({ ...req, minAmount: ONE_ETH / 2n })).toMatchObject({
      status: 'confirmed',
      amount: ONE_ETH.toString(),
    });
    expect(await adapter.verifyTransfer({ ...req, minAmount: ONE_ETH + 1n })).toMatchObject({
      status: 'mismatch',
      reason: 'underpaid',
      amount: ONE_ETH.toString(),
    });
    // Checksummed and lower-case spellings of the treasury are the same address.
    expect(
      await adapter.verifyTransfer({ ...req, to: treasury.toUpperCase().replace('0X', '0x'), minAmount: 1n }),
    ).toMatchObject({
      status: 'confirmed',
    });
  });

  it('calls native value sent elsewhere a wrong recipient', async () => {
    const hash = await send({ from: payer, to: other, value: '0x1000' });
    await mine(2);
    const result = await adapter.verifyTransfer({
      asset: asset('ETH'),
      txRef: hash,
      to: treasury,
      minAmount: 1n,
    });
    expect(result).toMatchObject({ status: 'mismatch', reason: 'wrong_recipient' });
  });

  it('confirms an ERC-20 Transfer of the asset contract to the treasury', async () => {
    const hash = await transferToken(tokenA, payer, treasury, 25_000_000n);
    await mine(2);
    const req = { asset: asset('USDC-ETH'), txRef: hash, to: treasury };
    const result = await adapter.verifyTransfer({ ...req, minAmount: 25_000_000n });
    expect(result).toMatchObject({
      status: 'confirmed',
      amount: '25000000',
      payer: payer.toLowerCase(),
      confirmations: 3,
    });
    expect(result.output).toMatch(/^log:\d+$/);
    expect(await adapter.verifyTransfer({ ...req, minAmount: 25_000_001n })).toMatchObject({
      status: 'mismatch',
      reason: 'underpaid',
    });
    // As native ETH the same transaction pays nothing to the treasury in value.
    expect(await adapter.verifyTransfer({ ...req, asset: asset('ETH'), minAmount: 1n })).toMatchObject({
      status: 'mismatch',
      reason: 'wrong_asset',
    });
  });

  it('calls another token to the treasury the wrong asset, and the token to another address a wrong recipient', async () => {
    const wrongToken = await transferToken(tokenB, payer, treasury, 25_000_000n);
    const wrongTo = await transferToken(tokenA, payer, other, 25_000_000n);
    await mine(2);
    const usdc = asset('USDC-ETH');
    expect(
      await adapter.verifyTransfer({ asset: usdc, txRef: wrongToken, to: treasury, minAmount: 1n }),
    ).toMatchObject({
      status: 'mismatch',
      reason: 'wrong_asset',
    });
    expect(
      await adapter.verifyTransfer({ asset: usdc, txRef: wrongTo, to: treasury, minAmount: 1n }),
    ).toMatchObject({
      status: 'mismatch',
      reason: 'wrong_recipient',
    });
  });

  it('calls a reverted transfer reverted', async () => {
    // `other` holds far less than this, so the contract's require() reverts.
    const hash = await transferToken(tokenA, other, treasury, 10n ** 15n);
    const receipt = await rpc<{ status: string }>('eth_getTransactionReceipt', [hash]);
    expect(receipt.status).toBe('0x0');
    const result = await adapter.verifyTransfer({
      asset: asset('USDC-ETH'),
      txRef: hash,
      to: treasury,
      minAmount: 1n,
    });
    expect(result).toMatchObject({ status: 'mismatch', reason: 'reverted' });
  });

  it('is pending with too few confirmations, then confirmed once blocks are mined', async () => {
    const hash = await transferToken(tokenA, payer, treasury, 5_000_000n);
    const req = { asset: asset('USDC-ETH'), txRef: hash, to: treasury, minAmount: 5_000_000n };
    expect(await adapter.verifyTransfer(req)).toMatchObject({
      status: 'pending',
      reason: 'too_few_confirmations',
      confirmations: 1,
      amount: '5000000',
    });
    await mine(2);
    expect(await adapter.verifyTransfer(req)).toMatchObject({ status: 'confirmed', confirmations: 3 });
  });

  it('is pending while in the mempool, not_found when unknown', async () => {
    await rpc('miner_stop');
    let hash: string;
    try {
      hash = await send({ from: payer, to: treasury, value: '0x10' });
      const result = await adapter.verifyTransfer({
        asset: asset('ETH'),
        txRef: hash,
        to: treasury,
        minAmount: 1n,
      });
      expect(result).toMatchObject({ status: 'pending', reason: 'in_mempool' });
    } finally {
      await rpc('miner_start');
    }
    const unknown = await adapter.verifyTransfer({
      asset: asset('ETH'),
      txRef: `0x${'ab'.repeat(32)}`,
      to: treasury,
      minAmount: 1n,
    });
    expect(unknown).toEqual({ status: 'not_found' });
  });

  it('refuses to confirm from a node of another chain, and is pending when the node is down', async () => {
    const mainnetEth = findAsset('ETH', parseEnv({})) as Asset; // eip155:1
    const hash = await send({ from: payer, to: treasury, value: '0x10' });
    await mine(2);
    expect(
      await adapter.verifyTransfer({ asset: mainnetEth, txRef: hash, to: treasury, minAmount: 1n }),
    ).toMatchObject({
      status: 'pending',
      reason: 'rpc_wrong_chain',
    });
    const down = createEvmAdapter({
      rpcUrl: await deadUrl(),
      confirmations: 1,
      timeoutMs: 500,
      retries: 1,
      backoffMs: 10,
    });
    expect(
      await down.verifyTransfer({ asset: asset('ETH'), txRef: hash, to: treasury, minAmount: 1n }),
    ).toMatchObject({
      status: 'pending',
      reason: 'rpc_unreachable',
    });
  });

  it('reads native and ERC-20 treasury balances', async () => {
    const eth = await treasuryBalance(asset('ETH'), settings);
    expect(eth).toMatchObject({ available: true, address: treasury, asset: 'ETH' });
    const wei = BigInt(await rpc<string>('eth_getBalance', [treasury, 'latest']));
    expect(eth.available && eth.amount).toBe(wei.toString());
    const usdc = await treasuryBalance(asset('USDC-ETH'), settings);
    expect(usdc).toMatchObject({ available: true, amount: String(25_000_000 + 5_000_000) });
    expect(await treasuryBalance(asset('BTC'), settings)).toMatchObject({
      available: false,
      reason: 'no_treasury',
    });
  });
});
