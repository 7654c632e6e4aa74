// Bitcoin adapter against recorded Esplora /tx responses of mainnet, replayed on loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adapterFor, treasuryBalance } from '../../shared/chains';
import { createBitcoinAdapter } from '../../shared/chains/bitcoin';
import { parseEnv } from '../../shared/env';
import { findAsset } from '../../shared/payments/assets';
import type { Asset } from '../../shared/payments/assets';
import { deadUrl, fixture, startReplay } from './replay';
import type { Replay } from './replay';

type EsploraTx = { txid: string; status: Record<string, unknown> };
const paid = fixture<EsploraTx>('bitcoin/tx-a418e856.json'); // block 767637: 34RQ… 26087585 sat, bc1q0yqp… 171937413 sat
const addressStats = fixture('bitcoin/address-bc1q695z.json');
// The same transaction as Esplora shows it before it is mined (derived from the recording).
const UNMINED = 'ec'.repeat(32);
const unmined = { ...structuredClone(paid), txid: UNMINED, status: { confirmed: false } };

let replay: Replay;
let tip = 767640;
beforeAll(async () => {
  replay = await startReplay((req) => {
    if (req.path === '/api/blocks/tip/height') return { body: String(tip) };
    if (req.path === `/api/tx/${paid.txid}`) return { body: paid };
    if (req.path === `/api/tx/${UNMINED}`) return { body: unmined };
    if (req.path === '/api/address/bc1q695z03z6kweljcvpwft7vfu6kd0guf24yaaht2') return { body: addressStats };
    return { status: 404, body: 'Transaction not found' };
  });
});
afterAll(() => replay.close());

function setup(confirmations = '2') {
  const settings = parseEnv({
    BITCOIN_ESPLORA_URL: `${replay.url}/api/`,
    BITCOIN_CONFIRMATIONS: confirmations,
    TREASURY_BITCOIN: 'bc1q695z03z6kweljcvpwft7vfu6kd0guf24yaaht2',
    CHAIN_RPC_RETRIES: '0',
  });
  const lookup = adapterFor('bitcoin', settings);
  if (!lookup.configured) throw new Error(lookup.detail);
  return { adapter: lookup.adapter, btc: findAsset('BTC', settings) as Asset, settings };
}

describe('Bitcoin adapter (recorded Esplora responses)', () => {
  it('confirms an output to the treasury once deep enough', async () => {
    const { adapter, btc } = setup('2');
    const result = await adapter.verifyTransfer({
      asset: btc,
      txRef: paid.txid,
      to: 'bc1q0yqp4f05hxq6pdj5c0urf5zhxk2mpm2ndx85za',
      minAmount: 171_937_413n,
    });
    expect(result).toEqual({
      status: 'confirmed',
      amount: '171937413',
      output: 'vout:1',
      confirmations: 4,
      payer: 'bc1qkd9hm2qwvck3mvlul035kl6v4nz04s6dmryeq5',
    });
  });

  it('matches bech32 case-insensitively and base58 addresses exactly', async () => {
    const { adapter, btc } = setup('2');
    const upper = await adapter.verifyTransfer({
      asset: btc,
      txRef: paid.txid.toUpperCase(),
      to: 'BC1Q0YQP4F05HXQ6PDJ5C0URF5ZHXK2MPM2NDX85ZA',
      minAmount: 1n,
    });
    expect(upper).toMatchObject({ status: 'confirmed', output: 'vout:1' });
    const p2sh = await adapter.verifyTransfer({
      asset: btc,
      txRef: paid.txid,
      to: '34RQERthXaruAXtW6q1bvrGTeUbqi2Sm1i',
      minAmount: 1n,
    });
    expect(p2sh).toMatchObject({ status: 'confirmed', amount: '26087585', output: 'vout:0' });
    const wrongCase = await adapter.verifyTransfer({
      asset: btc,
      txRef: paid.txid,
      to: '34rqerthxaruaxtw6q1bvrgteubqi2sm1i',
      minAmount: 1n,
    });
    expect(wrongCase).toMatchObject({ status: 'mismatch', reason: 'wrong_recipient' });
  });

  it('is pending with too few confirmations, then confirmed as blocks arrive', async () => {
    const { adapter, btc } = setup('6');
    const req = {
      asset: btc,
      txRef: paid.txid,
      to: 'bc1q0yqp4f05hxq6pdj5c0urf5zhxk2mpm2ndx85za',
      minAmount: 1n,
    };
    expect(await adapter.verifyTransfer(req)).toMatchObject({
      status: 'pending',
      reason: 'too_few_confirmations',
      confirmations: 4,
    });
    tip = 767642;
    try {
      expect(await adapter.verifyTransfer(req)).toMatchObject({ status: 'confirmed', confirmations: 6 });
    } finally {
      tip = 767640;
    }
  });

  it('is pending while in the mempool', async () => {
    const { adapter, btc } = setup('1');
    const result = await adapter.verifyTransfer({
      asset: btc,
      txRef: UNMINED,
      to: '34RQERthXaruAXtW6q1bvrGTeUbqi2Sm1i',
      minAmount: 1n,
    });
    expect(result).toMatchObject({
      status: 'pending',
      reason: 'in_mempool',
      confirmations: 0,
      amount: '26087585',
    });
  });

  it('calls a smaller output underpaid and another address a wrong recipient', async () => {
    const { adapter, btc } = setup('1');
    const under = await adapter.verifyTransfer({
      asset: btc,
      txRef: paid.txid,
      to: '34RQERthXaruAXtW6q1bvrGTeUbqi2Sm1i',
      minAmount: 26_087_586n,
    });
    expect(under).toMatchObject({ status: 'mismatch', reason: 'underpaid', amount: '26087585' });
    const payerItself = await adapter.verifyTransfer({
      asset: btc,
      txRef: paid.txid,
      to: 'bc1qkd9hm2qwvck3mvlul035kl6v4nz04s6dmryeq5',
      minAmount: 1n,
    });
    expect(payerItself).toMatchObject({ status: 'mismatch', reason: 'wrong_recipient' });
  });

  it('is not_found for an unknown txid and pending when Esplora is down', async () => {
    const { adapter, btc } = setup();
    const base = { asset: btc, to: '34RQERthXaruAXtW6q1bvrGTeUbqi2Sm1i', minAmount: 1n };
    expect(await adapter.verifyTransfer({ ...base, txRef: 'ab'.repeat(32) })).toEqual({
      status: 'not_found',
    });
    expect(await adapter.verifyTransfer({ ...base, txRef: 'not-a-txid' })).toMatchObject({
      status: 'not_found',
      reason: 'invalid_tx_ref',
    });
    const down = createBitcoinAdapter({
      esploraUrl: await deadUrl(),
      confirmations: 1,
      timeoutMs: 500,
      retries: 1,
      backoffMs: 10,
    });
    expect(await down.verifyTransfer({ ...base, txRef: paid.txid })).toMatchObject({
      status: 'pending',
      reason: 'rpc_unreachable',
    });
  });

  it('reads the treasury balance from /address', async () => {
    const { settings, btc } = setup();
    expect(await treasuryBalance(btc, settings)).toEqual({
      available: true,
      address: 'bc1q695z03z6kweljcvpwft7vfu6kd0guf24yaaht2',
      asset: 'BTC',
      amount: String(347426115611 - 202508630677),
      pending: '0',
    });
  });
});
