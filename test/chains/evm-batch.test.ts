// JSON-RPC batches against a real node (ganache on loopback) through a front that records each request
// and can play other nodes: many EVM checks in two requests, one failing call failing only its own
// check, answers in any order, and nodes that refuse batches (the checks go one call per request).
import ganache from 'ganache';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEvmAdapter } from '../../shared/chains/evm';
import { RpcError, RpcUnreachableError, jsonRpcBatch, rpcBatcher } from '../../shared/chains/http';
import type { VerifyRequest } from '../../shared/chains/types';
import { parseEnv } from '../../shared/platform/env';
import { findAsset } from '../../shared/chains/assets';
import type { Asset } from '../../shared/chains/assets';
import { startRpcFront } from '../payments/rpc-front';
import type { BatchRefusal, RpcFront } from '../payments/rpc-front';
import { deadUrl, fixture } from './replay';

const { bytecode } = fixture<{ bytecode: string }>('evm/TestToken.json');
const word = (v: bigint | string) => BigInt(v).toString(16).padStart(64, '0');

let server: ReturnType<typeof ganache.server>;
let url: string;
let payer: string, treasury: string, other: string, broke: string;
let token: string;
let eth: Asset, usdc: Asset;

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
const transferToken = (from: string, to: string, amount: bigint) =>
  send({ from, to: token, data: `0xa9059cbb${word(BigInt(to))}${word(amount)}` });

/** One of each verdict, made once: confirmed, wrong recipient, reverted, pending (1 of 3 confirmations), unknown. */
let mixed: Array<{ name: string; req: VerifyRequest }>;

beforeAll(async () => {
  const startServer = ganache.server as (options: object) => ReturnType<typeof ganache.server>;
  server = startServer({
    logging: { quiet: true },
    chain: { chainId: 1337 },
    wallet: { deterministic: true, totalAccounts: 4 },
  });
  await server.listen(0, '127.0.0.1');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  [payer, treasury, other, broke] = (await rpc<string[]>('eth_accounts')) as [string, string, string, string];
  const deployed = await send({ from: payer, data: `${bytecode}${word(6n)}${word(10n ** 12n)}` });
  token = (await rpc<{ contractAddress: string }>('eth_getTransactionReceipt', [deployed])).contractAddress;
  const settings = parseEnv({
    ASSETS_JSON: JSON.stringify({
      ETH: { network: 'eip155:1337' },
      'USDC-ETH': { network: 'eip155:1337', contract: token },
    }),
  });
  eth = findAsset('ETH', settings) as Asset;
  usdc = findAsset('USDC-ETH', settings) as Asset;

  const confirmed = await send({ from: payer, to: treasury, value: '0x1000' });
  const wrongRecipient = await send({ from: payer, to: other, value: '0x1000' });
  const reverted = await transferToken(broke, treasury, 10n ** 9n); // `broke` holds none of the token
  await mine(2);
  const pending = await transferToken(payer, treasury, 5_000_000n);
  const req = (asset: Asset, txRef: string, minAmount: bigint) => ({ asset, txRef, to: treasury, minAmount });
  mixed = [
    { name: 'confirmed', req: req(eth, confirmed, 0x1000n) },
    { name: 'wrong recipient', req: req(eth, wrongRecipient, 0x1000n) },
    { name: 'reverted', req: req(usdc, reverted, 1n) },
    { name: 'pending', req: req(usdc, pending, 5_000_000n) },
    { name: 'unknown', req: req(eth, `0x${'ab'.repeat(32)}`, 1n) },
  ];
});
afterAll(() => server?.close());

const fronts: RpcFront[] = [];
afterAll(async () => {
  for (const f of fronts) await f.close();
});
async function front(): Promise<RpcFront> {
  const f = await startRpcFront(url);
  fronts.push(f);
  return f;
}
/** An adapter on its own front, its network already asked (so only the checks are counted). */
async function adapterBehind(f: RpcFront) {
  const adapter = createEvmAdapter({ rpcUrl: f.url, confirmations: 3, timeoutMs: 5000, retries: 0 });
  await adapter.network();
  f.seen.length = 0;
  return adapter;
}

function expectMixedVerdicts(
  results: Awaited<ReturnType<NonNullable<ReturnType<typeof createEvmAdapter>['verifyTransfers']>>>,
) {
  const [confirmed, wrongRecipient, reverted, pending, unknown] = results;
  expect(confirmed).toMatchObject({ status: 'confirmed', amount: '4096', output: 'value' });
  expect(confirmed!.confirmations).toBeGreaterThanOrEqual(3);
  expect(confirmed!.blockTime).toEqual(expect.any(String));
  expect(wrongRecipient).toMatchObject({ status: 'mismatch', reason: 'wrong_recipient' });
  expect(reverted).toMatchObject({ status: 'mismatch', reason: 'reverted' });
  expect(pending).toMatchObject({
    status: 'pending',
    reason: 'too_few_confirmations',
    confirmations: 1,
    amount: '5000000',
  });
  expect(unknown).toEqual({ status: 'not_found' });
}

describe('EVM checks in JSON-RPC batches', () => {
  it('checks a mixed group in two requests, each verdict as a lone check gives it, then in one', async () => {
    const f = await front();
    const adapter = await adapterBehind(f);
    const results = await adapter.verifyTransfers!(mixed.map((m) => m.req));
    expectMixedVerdicts(results);
    // The head, every transaction and receipt; then the three blocks not known yet (a reverted
    // transfer needs no time).
    expect(f.seen).toEqual([
      {
        batch: true,
        methods: [
          'eth_blockNumber',
          ...mixed.flatMap(() => ['eth_getTransactionByHash', 'eth_getTransactionReceipt']),
        ],
      },
      { batch: true, methods: ['eth_getBlockByHash', 'eth_getBlockByHash', 'eth_getBlockByHash'] },
    ]);
    // Block times are kept: the same group again is one request.
    f.seen.length = 0;
    expectMixedVerdicts(await adapter.verifyTransfers!(mixed.map((m) => m.req)));
    expect(f.seen).toHaveLength(1);

    // A lone check is the same check: same verdict, two requests at most.
    const lone = await adapterBehind(await front());
    for (const [i, m] of mixed.entries()) expect(await lone.verifyTransfer(m.req)).toEqual(results[i]);
  });

  it('fails only the check whose call failed, and reads answers in any order', async () => {
    const f = await front();
    f.reverse = true;
    const adapter = await adapterBehind(f);
    const wrongRecipient = mixed[1]!.req.txRef;
    f.fail('eth_getTransactionReceipt', wrongRecipient, { code: -32000, message: 'header not found' });
    const results = await adapter.verifyTransfers!(mixed.map((m) => m.req));
    expect(results[1]).toEqual({
      status: 'pending',
      reason: 'rpc_error',
      detail: 'RPC error -32000: header not found',
    });
    expect(results[0]).toMatchObject({ status: 'confirmed' });
    expect(results[2]).toMatchObject({ status: 'mismatch', reason: 'reverted' });
    expect(results[3]).toMatchObject({ status: 'pending', reason: 'too_few_confirmations' });

    // A block whose time cannot be read leaves its check pending, and only that one.
    const g = await front();
    const fresh = await adapterBehind(g);
    const receipt = await rpc<{ blockHash: string }>('eth_getTransactionReceipt', [mixed[0]!.req.txRef]);
    g.fail('eth_getBlockByHash', receipt.blockHash, { code: -32000, message: 'block not available' });
    const again = await fresh.verifyTransfers!(mixed.map((m) => m.req));
    expect(again[0]).toMatchObject({ status: 'pending', reason: 'rpc_error' });
    expect(again[1]).toMatchObject({ status: 'mismatch', reason: 'wrong_recipient' });
  });

  const refusals: BatchRefusal[] = ['object-400', 'object-200', 'null-id'];
  it.each(refusals)(
    'falls back to one call per request on a node that refuses batches (%s)',
    async (refusal) => {
      const f = await front();
      f.refuseBatches = refusal;
      const adapter = await adapterBehind(f);
      expectMixedVerdicts(await adapter.verifyTransfers!(mixed.map((m) => m.req)));
      // One refused batch, then single calls only, now and on the next check.
      expect(f.seen.filter((s) => s.batch)).toHaveLength(1);
      expect(f.seen[0]!.batch).toBe(true);
      const singles = f.seen.length - 1;
      expect(singles).toBeGreaterThanOrEqual(1 + 2 * mixed.length);
      f.seen.length = 0;
      expectMixedVerdicts(await adapter.verifyTransfers!(mixed.map((m) => m.req)));
      expect(f.seen.every((s) => !s.batch)).toBe(true);
    },
  );
});

describe('rpcBatcher and jsonRpcBatch', () => {
  it('answers each call of a batch on its own: a failing call fails alone', async () => {
    const outcomes = await jsonRpcBatch(
      url,
      [
        { method: 'eth_chainId', params: [] },
        { method: 'eth_noSuchMethod', params: [] },
        { method: 'eth_getBalance', params: [treasury, 'latest'] },
      ],
      { timeoutMs: 5000, retries: 0 },
    );
    expect(outcomes[0]).toEqual({ ok: true, result: '0x539' });
    expect(outcomes[1]!.ok).toBe(false);
    expect(!outcomes[1]!.ok && outcomes[1]!.error).toBeInstanceOf(RpcError);
    expect(outcomes[2]).toMatchObject({ ok: true, result: expect.stringMatching(/^0x[0-9a-f]+$/) });
  });

  it('splits large groups, tries batches again after a refusal has aged, and reports an unreachable node per call', async () => {
    const f = await front();
    const calls = Array.from({ length: 7 }, () => ({ method: 'eth_blockNumber', params: [] }));
    const batcher = rpcBatcher(f.url, { timeoutMs: 5000, retries: 0, maxBatch: 3, retryBatchAfterMs: 1000 });
    const answered = await batcher.call(calls);
    expect(answered.every((o) => o.ok)).toBe(true);
    // Sent together, so they may arrive in any order.
    expect(f.seen.map((s) => s.methods.length).sort()).toEqual([1, 3, 3]);

    f.refuseBatches = 'object-400';
    f.seen.length = 0;
    expect((await batcher.call(calls.slice(0, 3))).every((o) => o.ok)).toBe(true);
    expect(batcher.batching()).toBe(false);
    expect(f.seen.map((s) => s.batch)).toEqual([true, false, false, false]);
    f.refuseBatches = 'none';
    await new Promise((r) => setTimeout(r, 1100));
    expect(batcher.batching()).toBe(true);
    f.seen.length = 0;
    await batcher.call(calls.slice(0, 3));
    expect(f.seen).toEqual([
      { batch: true, methods: ['eth_blockNumber', 'eth_blockNumber', 'eth_blockNumber'] },
    ]);

    const down = rpcBatcher(await deadUrl(), { timeoutMs: 500, retries: 0 });
    const outcomes = await down.call(calls.slice(0, 2));
    for (const o of outcomes) expect(!o.ok && o.error).toBeInstanceOf(RpcUnreachableError);
  });
});
