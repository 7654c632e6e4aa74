// Bitcoin adapter against recorded Esplora /tx responses of mainnet, replayed on loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adapterFor, treasuryBalance } from '../../shared/chains';
import { HDKey } from '@scure/bip32';
import { createBitcoinAdapter } from '../../shared/chains/bitcoin';
import { deriveAddress, descriptorChecksumValid, parseAccountKey } from '../../shared/chains/bitcoin-address';
import { chainSettingIssues } from '../../shared/chains/settings';
import { parseEnv } from '../../shared/platform/env';
import { findAsset } from '../../shared/chains/assets';
import type { Asset } from '../../shared/chains/assets';
import { deadUrl, fixture, startReplay } from './replay';
import type { Replay } from './replay';

type EsploraTx = { txid: string; status: Record<string, unknown> };
const paid = fixture<EsploraTx>('bitcoin/tx-a418e856.json'); // block 767637: 34RQ… 26087585 sat, bc1q0yqp… 171937413 sat
const addressStats = fixture('bitcoin/address-bc1q695z.json');
// The same transaction as Esplora shows it before it is mined (derived from the recording).
const UNMINED = 'ec'.repeat(32);
const unmined = { ...structuredClone(paid), txid: UNMINED, status: { confirmed: false } };

// Esplora's /block-height/0 answers the genesis block hash: mainnet's names CAIP-2's bip122:000000000019d6689c085ae165831e93.
const MAINNET_GENESIS = '000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f';
const TESTNET_GENESIS = '000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943';
let genesis = MAINNET_GENESIS;

let replay: Replay;
let tip = 767640;
beforeAll(async () => {
  replay = await startReplay((req) => {
    if (req.path === '/api/block-height/0') return { body: genesis };
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
      blockTime: '2022-12-16T07:09:22.000Z',
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

describe('Bitcoin: an address per quote (BIP84 from the treasury account key)', () => {
  // BIP84's published test vector: account 0 of "abandon … about", m/84'/0'/0'.
  const ACCOUNT_ZPRV =
    'zprvAdG4iTXWBoARxkkzNpNh8r6Qag3irQB8PzEMkAFeTRXxHpbF9z4QgEvBRmfvqWvGp42t42nvgGpNgYSJA9iefm1yYNZKEm7z6qUWCroSQnE';
  const MAINNET = 'bip122:000000000019d6689c085ae165831e93';
  const zpub = HDKey.fromExtendedKey(ACCOUNT_ZPRV, {
    public: 0x04b24746,
    private: 0x04b2430c,
  }).publicExtendedKey;
  const xpub = HDKey.fromExtendedKey(zpub, { public: 0x04b24746, private: 0x04b2430c });
  // The same key in BIP32's xpub version bytes, as descriptors carry it.
  const asXpub = new HDKey({
    publicKey: xpub.publicKey!,
    chainCode: xpub.chainCode!,
    depth: 3,
    index: xpub.index,
    parentFingerprint: xpub.parentFingerprint,
  }).publicExtendedKey;

  it('derives the BIP84 vector addresses from the account zpub and from a wpkh descriptor', () => {
    expect(zpub).toBe(
      'zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs',
    );
    const account = parseAccountKey(zpub);
    expect(deriveAddress(account, 0, MAINNET)).toBe('bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu');
    expect(deriveAddress(account, 1, MAINNET)).toBe('bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g');
    const receive = parseAccountKey(`wpkh([73c5da0a/84h/0h/0h]${asXpub}/0/*)`);
    expect(deriveAddress(receive, 0, MAINNET)).toBe('bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu');
    const change = parseAccountKey(`wpkh([73c5da0a/84h/0h/0h]${asXpub}/<1;0>/*)`);
    expect(deriveAddress(change, 0, MAINNET)).toBe('bc1q8c6fshw2dlwun7ekn9qwf37cu2rn755upcp6el');
  });

  it('refuses keys it must not use: private keys, bad checksums, the wrong network', () => {
    expect(() => parseAccountKey(ACCOUNT_ZPRV)).toThrow();
    expect(() => parseAccountKey(`wpkh(${asXpub}/0/*)#aaaaaaaa`)).toThrow(/checksum/);
    expect(() => parseAccountKey(`wpkh(${asXpub}/0h/*)`)).toThrow();
    expect(() => deriveAddress(parseAccountKey(zpub), 0, 'bip122:000000000933ea01ad0ee984209779ba')).toThrow(
      /mainnet/,
    );
    // BIP380's checksum vectors.
    expect(descriptorChecksumValid('raw(deadbeef)#89f8spxm')).toBe(true);
    expect(descriptorChecksumValid('raw(deedbeef)#89f8spxm')).toBe(false);
    expect(descriptorChecksumValid('raw(deedbeef)##9f8spxm')).toBe(false);
    // Every process refuses such a value at start, naming the variable.
    expect(chainSettingIssues(parseEnv({ TREASURY_BITCOIN_XPUB: ACCOUNT_ZPRV }))).toEqual([
      expect.stringMatching(/^TREASURY_BITCOIN_XPUB: /),
    ]);
    expect(chainSettingIssues(parseEnv({ TREASURY_BITCOIN_XPUB: zpub }))).toEqual([]);
  });

  it("does not let a payment to another quote's address pay this quote", async () => {
    const { adapter, btc } = setup('2');
    // The recorded transaction paid bc1q0yqp… (quote A's address); quote B has an address of its own.
    const quoteA = 'bc1q0yqp4f05hxq6pdj5c0urf5zhxk2mpm2ndx85za';
    const quoteB = deriveAddress(parseAccountKey(zpub), 7, MAINNET);
    const binding = { kind: 'address' as const, index: 7 };
    const forB = await adapter.verifyTransfer({
      asset: btc,
      txRef: paid.txid,
      to: quoteB,
      minAmount: 1n,
      binding,
    });
    expect(forB).toMatchObject({ status: 'mismatch', reason: 'wrong_recipient' });
    const forA = await adapter.verifyTransfer({
      asset: btc,
      txRef: paid.txid,
      to: quoteA,
      minAmount: 1n,
      binding,
    });
    expect(forA).toMatchObject({ status: 'confirmed', amount: '171937413' });
  });

  it('never settles on an Esplora of another network, and says which it serves', async () => {
    genesis = TESTNET_GENESIS;
    try {
      const { adapter, btc } = setup('2');
      expect(await adapter.network()).toBe('bip122:000000000933ea01ad0ee984209779ba');
      const result = await adapter.verifyTransfer({
        asset: btc,
        txRef: paid.txid,
        to: 'bc1q0yqp4f05hxq6pdj5c0urf5zhxk2mpm2ndx85za',
        minAmount: 1n,
      });
      expect(result).toMatchObject({ status: 'pending', reason: 'rpc_wrong_chain' });
    } finally {
      genesis = MAINNET_GENESIS;
    }
  });
});
