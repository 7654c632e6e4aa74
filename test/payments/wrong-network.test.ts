// An endpoint serving another network than the assets' (here a devnet Solana RPC for the mainnet
// Solana assets): those assets are turned off, with the reason, wherever assets are offered, and
// nothing is quoted or written in them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture, rpcResult, startReplay } from '../chains/replay';
import type { Replay } from '../chains/replay';
import type { TestApp } from '../helpers';
import { expectProblem } from '../licensing/helpers';

const genesis = fixture<Record<'mainnet-beta' | 'devnet', { result: string }>>('solana/genesis-hash.json');
const rpc: Replay = await startReplay((req) => {
  const { method } = req.body as { method: string };
  if (method === 'getGenesisHash') return rpcResult(req, genesis.devnet.result);
  return { status: 400, body: 'unexpected method' };
});
Object.assign(process.env, {
  SOLANA_RPC_URL: rpc.url,
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '2000',
  TREASURY_SOLANA: 'FDUGdV6bjhvw5gbirXCvqbTSWK9999kcrZcrHoCQzXJK',
  RATES_USD: 'SOL=200',
});

const { testApp, sha256Of } = await import('../helpers');

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  await app?.close();
  await rpc.close();
});
const solana = ['SOL', 'USDC-SOL', 'USDT-SOL', 'PYUSD-SOL'];

describe('a devnet RPC for mainnet Solana assets', () => {
  it('is shown on pricing, checkout status and gate status as wrong_network', async () => {
    const pricing = (await app.request.get('/api/pricing').expect(200)).body.assets as Array<{
      id: string;
      detail?: string;
    }>;
    for (const id of solana) {
      const a = pricing.find((x) => x.id === id)!;
      expect(a).toMatchObject({ enabled: false, reason: 'wrong_network' });
      expect(a.detail).toContain('solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1');
    }
    const checkout = (await app.request.get('/api/v1/commercial/checkout/status').expect(200)).body;
    expect(checkout.assets.find((a: { id: string }) => a.id === 'SOL')).toMatchObject({
      enabled: false,
      reason: 'wrong_network',
    });
    const gate = (await app.request.get('/api/v1/payment-gate/random/status').expect(200)).body;
    expect(gate.assets.find((a: { id: string }) => a.id === 'USDC-SOL')).toMatchObject({
      enabled: false,
      reason: 'wrong_network',
    });
  });

  it('quotes nothing in them: no job, no checkout, no gate request is written', async () => {
    const db = app.deps.db;
    const count = async (t: string) => Number((await db(t).count({ n: '*' }))[0]!.n);
    const before = await Promise.all(['jobs', 'quotes', 'checkouts', 'payment_gate_requests'].map(count));
    const job = await app.request
      .post('/api/jobs')
      .send({ service: 'attest.batch', input: { digests: [await sha256Of('wrong network')] } });
    expectProblem(job, 503, 'payments_unavailable');
    expect(job.body.unavailable.find((u: { asset: string }) => u.asset === 'SOL')).toMatchObject({
      reason: 'wrong_network',
    });
    expectProblem(
      await app.request
        .post('/api/v1/commercial/checkout/prepare')
        .send({ license: 'Starter', asset: 'USDC-SOL', organization: 'Acme', email: 'a@example.com' }),
      422,
      'asset_unavailable',
    );
    expectProblem(
      await app.request.post('/api/v1/payment-gate/random/prepare').send({ asset: 'SOL', baseAmount: '10' }),
      422,
      'asset_unavailable',
    );
    const after = await Promise.all(['jobs', 'quotes', 'checkouts', 'payment_gate_requests'].map(count));
    expect(after).toEqual(before);
  });
});
