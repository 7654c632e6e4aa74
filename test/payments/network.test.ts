// Per-quote bindings for the families without a local node here: Solana Pay quotes against a replayed
// RPC, Bitcoin addresses from
// the treasury's BIP84 account key with the index kept in Postgres, and the payer's wallet URIs read
// back by the standards' own client libraries.
import { HDKey } from '@scure/bip32';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture, rpcResult, startReplay } from '../chains/replay';
import type { Replay } from '../chains/replay';
import type { TestApp } from '../helpers';

const genesis = fixture<Record<'mainnet-beta' | 'devnet', { result: string }>>('solana/genesis-hash.json');
const cluster = 'mainnet-beta';
const rpc: Replay = await startReplay((req) => {
  const { method } = req.body as { method: string };
  if (method === 'getGenesisHash') return rpcResult(req, genesis[cluster].result);
  return { status: 400, body: 'unexpected method' };
});
// BIP84's test vector account (m/84'/0'/0' of "abandon … about"), as its public key only.
const ZPUB = HDKey.fromExtendedKey(
  'zprvAdG4iTXWBoARxkkzNpNh8r6Qag3irQB8PzEMkAFeTRXxHpbF9z4QgEvBRmfvqWvGp42t42nvgGpNgYSJA9iefm1yYNZKEm7z6qUWCroSQnE',
  { public: 0x04b24746, private: 0x04b2430c },
).publicExtendedKey;
const TREASURY_SOLANA = 'FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK';
interface QuoteBody {
  asset: string;
  reference: string;
  binding?: string;
  contract?: string;
  paymentInstructions: { uri: string; reference?: string };
}
Object.assign(process.env, {
  SOLANA_RPC_URL: rpc.url,
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '2000',
  TREASURY_SOLANA,
  TREASURY_BITCOIN_XPUB: ZPUB,
  RATES_USD: 'SOL=200,BTC=100000',
});

const { testApp, sha256Of } = await import('../helpers');
const { encodeURL, parseURL } = await import('@solana/pay');
const bip21 = await import('bip21');

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  await app?.close();
  await rpc.close();
});
const db = () => app.deps.db;

async function pricedJob() {
  const input = { digests: [await sha256Of(`n ${Math.random()}`)] };
  return app.request.post('/api/jobs').send({ service: 'attest.batch', input });
}

describe('Solana Pay quotes', () => {
  it('gives each quote its own reference key and a transfer request Solana Pay reads back', async () => {
    const res = await pricedJob();
    expect(res.status).toBe(402);
    // No x402 settler is configured, and Solana quotes are bound by a reference key x402 cannot carry:
    // there is no x402 requirement to offer, so the 402 carries none (never an empty `accepts`); every
    // quote is paid with submitPayment.
    expect(res.body.payment.x402).toBeUndefined();
    expect(res.headers['payment-required']).toBeUndefined();
    const quotes = res.body.payment.quotes as QuoteBody[];
    const usdc = quotes.find((q) => q.asset === 'USDC-SOL')!;
    expect(usdc).toMatchObject({ binding: 'reference', payTo: TREASURY_SOLANA, amount: '500000' });
    const { uri, reference } = usdc.paymentInstructions;
    const parsed = parseURL(uri) as unknown as Record<string, unknown>;
    expect(parsed.recipient).toBe(TREASURY_SOLANA);
    expect(parsed.amount).toBe(0.5);
    expect(parsed.splToken).toBe(usdc.contract);
    expect(parsed.reference).toEqual([reference]);
    expect(parsed.memo).toBe(usdc.reference);
    expect(parsed.label).toBe('proof-exchange');
    // The same request as Solana Pay's own encoder writes it.
    expect(uri).toBe(
      String(
        encodeURL({
          recipient: TREASURY_SOLANA as never,
          amount: 0.5,
          splToken: usdc.contract,
          reference: reference as never,
          label: 'proof-exchange',
          message: parsed.message as string,
          memo: usdc.reference,
        } as never),
      ),
    );
    // Every Solana quote of every job has a key of its own.
    const again = (await pricedJob()).body.payment.quotes as QuoteBody[];
    const keys = [...quotes, ...again]
      .filter((q) => q.binding === 'reference')
      .map((q) => q.paymentInstructions.reference);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.length).toBe(8);
  });
});

describe('Bitcoin: an address of its own per quote, from the treasury account key', () => {
  it('derives the BIP84 addresses in order, the index kept in Postgres, never twice', async () => {
    const first = (await pricedJob()).body.payment.quotes.find((q: { asset: string }) => q.asset === 'BTC');
    const second = (await pricedJob()).body.payment.quotes.find((q: { asset: string }) => q.asset === 'BTC');
    const counter = await db()('address_counters').first();
    expect(counter.scheme).toBe(`${ZPUB}/0/*`);
    const rows = await db()('quotes').where({ asset: 'BTC' }).orderBy('address_index');
    const byIndex = new Map(
      rows.map((r: { address_index: number; pay_to: string }) => [r.address_index, r.pay_to]),
    );
    // BIP84's published receiving addresses 0 and 1.
    expect(byIndex.get(0)).toBe('bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu');
    expect(byIndex.get(1)).toBe('bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g');
    expect(new Set(rows.map((r: { pay_to: string }) => r.pay_to)).size).toBe(rows.length);
    expect(counter.next_index).toBe(rows.length);
    for (const q of [first, second]) {
      expect(q.binding).toBe('address');
      // No unique amount is needed where the address tells quotes apart.
      expect(q.amount).toBe('500');
      const decoded = bip21.decode(q.paymentInstructions.uri);
      expect(decoded.address).toBe(q.payTo);
      expect(decoded.options.amount).toBe(0.000005);
    }
    // The database refuses a second quote on an address already given out.
    const row = rows[0];
    await expect(
      db()('quotes').insert({ ...row, id: 'pay_01m7ycenb0y37det98dds34qjx', job_id: row.job_id }),
    ).rejects.toThrow(/quotes_own_address|duplicate/);
  });
});
