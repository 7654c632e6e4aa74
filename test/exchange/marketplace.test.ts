// publishListing and searchListings; createReferral and createJob's attribution; revenueSummary from
// confirmed receipts (exact sums, referral commission); treasuryStatus public and for the operator.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { env } from '../../shared/platform/env';
import { newId } from '../../shared/platform/ids';
import { serviceSigningKey } from '../../shared/platform/keys';
import { signReceipt } from '../../shared/payments/receipts';
import { sha256Of, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { allPages, expectProblem, registerAgent } from './fixtures';
import type { TestAgent } from './fixtures';

let app: TestApp;
let seller: TestAgent;
let other: TestAgent;
const operator = { Authorization: 'Bearer op_test_token_0123456789' };

beforeAll(async () => {
  app = testApp();
  seller = await registerAgent(app, { name: 'Seller' });
  other = await registerAgent(app, { name: 'Other seller' });
});
afterAll(() => app.close());

describe('listings', () => {
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    const publish = async (who: TestAgent, key: string, body: Record<string, unknown>) => {
      const res = await app.request
        .post('/api/marketplace/listings')
        .set(who.auth)
        .send({ serviceEndpoint: 'https://svc.example/run', asset: 'USDC-SOL', tags: [], ...body })
        .expect(201);
      ids[key] = res.body.listing.id;
      return res.body.listing;
    };
    const first = await publish(seller, 'audit', {
      title: 'Treasury audit proofs',
      description: 'Monthly audit of treasury movements with signed proof packages',
      tags: ['Audit', 'treasury'],
      priceUsdCents: 50_000,
    });
    expect(first).toMatchObject({
      sellerAgentId: seller.id,
      tags: ['audit', 'treasury'],
      price: { usdCents: 50_000, asset: 'USDC-SOL' },
      status: 'active',
    });
    await publish(seller, 'kyc', {
      title: 'KYC threshold proof',
      description: 'Blind policy proof that a balance exceeds a threshold',
      tags: ['zk'],
      priceUsdCents: 1_500,
    });
    await publish(other, 'translate', {
      title: 'Contract translation',
      description: 'Translates contracts; audited by humans',
      tags: ['language'],
      priceUsdCents: 900,
      asset: 'SOL',
    });
    for (let i = 0; i < 7; i++)
      await publish(other, `bulk${i}`, {
        title: `Bulk offer ${i}`,
        description: 'bulkfixture listing',
        tags: ['bulk'],
        priceUsdCents: 100 + i,
      });
  });

  it('searches by text, tag, price range, asset and seller', async () => {
    const find = async (qs: string) =>
      (await app.request.get(`/api/marketplace/listings?${qs}`).expect(200)).body.listings.map(
        (l: { id: string }) => l.id,
      );
    // "audit" matches the title (rank A) and "audited" (stemmed) in another description: title first.
    expect(await find('q=audit')).toEqual([ids.audit, ids.translate]);
    expect(await find('tag=zk')).toEqual([ids.kyc]);
    expect(await find('q=proof&maxPriceUsdCents=10000')).toEqual([ids.kyc]);
    expect(await find('minPriceUsdCents=900&maxPriceUsdCents=1500')).toEqual([ids.translate, ids.kyc]);
    expect(await find('asset=SOL')).toEqual([ids.translate]);
    expect(await find(`seller=${seller.id}`)).toEqual([ids.kyc, ids.audit]);
    expect(await find(`seller=${seller.id}&q=translation`)).toEqual([]);
  });

  it('pages with stable cursors', async () => {
    const all = (await app.request.get('/api/marketplace/listings?tag=bulk&limit=100').expect(200)).body
      .listings;
    expect(all).toHaveLength(7);
    const pages = await allPages(app, '/api/marketplace/listings?tag=bulk', 'listings', 2);
    expect(pages.map((p) => p.length)).toEqual([2, 2, 2, 1]);
    expect(pages.flat()).toEqual(all.map((l: { id: string }) => l.id));
    const ranked = await allPages(app, '/api/marketplace/listings?q=bulkfixture', 'listings', 3);
    expect(new Set(ranked.flat()).size).toBe(7);
  });

  it('refuses unauthenticated publishing, bad fields and bad filters', async () => {
    const body = {
      title: 'Valid title',
      description: 'x',
      priceUsdCents: 1,
      asset: 'BTC',
      serviceEndpoint: 'https://a.example',
    };
    expectProblem(await app.request.post('/api/marketplace/listings').send(body), 401, 'unauthorized');
    const bad: Array<Record<string, unknown>> = [
      { ...body, priceUsdCents: -1 },
      { ...body, priceUsdCents: 1.25 },
      { ...body, asset: 'USD' },
      { ...body, serviceEndpoint: 'not a url' },
      { ...body, title: 'x' },
      { ...body, sellerAgentId: other.id },
    ];
    for (const b of bad)
      expectProblem(
        await app.request.post('/api/marketplace/listings').set(seller.auth).send(b),
        400,
        'validation_failed',
      );
    for (const qs of [
      'minPriceUsdCents=5&maxPriceUsdCents=4',
      'seller=bob',
      'minPriceUsdCents=abc',
      'limit=500',
    ])
      expectProblem(await app.request.get(`/api/marketplace/listings?${qs}`), 400, 'validation_failed');
  });
});

async function newJob(opts: { ref?: string; header?: string; auth?: { Authorization: string } } = {}) {
  const req = app.request.post(`/api/jobs${opts.ref ? `?ref=${encodeURIComponent(opts.ref)}` : ''}`);
  if (opts.header) req.set('X-Referral-Code', opts.header);
  if (opts.auth) req.set(opts.auth);
  return req.send({ service: 'attest.timestamp', input: { digest: await sha256Of(String(Math.random())) } });
}

/** What the payments engine writes when a payment confirms: quote, confirmed payment, signed receipt. */
async function confirmedPayment(
  jobId: string,
  p: { asset: string; network: string; decimals: number; amount: string; usdCents: number; at: string },
) {
  const db = app.deps.db;
  const paymentId = newId('pay');
  const receiptId = newId('rcpt');
  await db('quotes')
    .insert({
      id: newId('pay').replace('pay_', 'q_'),
      job_id: jobId,
      asset: p.asset,
      network: p.network,
      amount: p.amount,
      decimals: p.decimals,
      pay_to: 'treasury',
      usd_cents: p.usdCents,
      expires_at: p.at,
    })
    .onConflict(['job_id', 'asset'])
    .ignore();
  const quoteId = (await db('quotes').where({ job_id: jobId, asset: p.asset }).first()).id as string;
  await db('payments').insert({
    id: paymentId,
    job_id: jobId,
    quote_id: quoteId,
    asset: p.asset,
    chain: p.network,
    tx_ref: `tx-${paymentId}`,
    status: 'confirmed',
    settlement: 'exact',
    amount_received: p.amount,
    settled_at: p.at,
  });
  const receipt = signReceipt(
    {
      type: 'proof-exchange.receipt/v1',
      id: receiptId,
      jobId,
      serviceId: 'attest.timestamp',
      paymentId,
      asset: p.asset,
      network: p.network,
      decimals: p.decimals,
      amount: p.amount,
      quotedAmount: p.amount,
      usdCents: String(p.usdCents),
      payTo: 'treasury',
      payer: null,
      settlement: 'exact',
      transaction: { txRef: `tx-${paymentId}`, output: '0', confirmations: 1 },
      quote: { reference: quoteId, createdAt: p.at, expiresAt: p.at },
      times: { submittedAt: p.at, confirmedAt: p.at, issuedAt: p.at },
    },
    serviceSigningKey(),
  );
  await db('receipts').insert({
    id: receiptId,
    payment_id: paymentId,
    job_id: jobId,
    document: JSON.stringify(receipt),
    issued_at: p.at,
  });
  return receiptId;
}

describe('referrals, attribution and revenue', () => {
  let referrer: TestAgent;
  let acme: { id: string; code: string };
  let generated: { id: string; code: string };
  const jobIds: Record<string, string> = {};

  beforeAll(async () => {
    // From a network of its own: an agent registered from the referrer's network earns it no credit.
    referrer = await registerAgent(app, { name: 'Referrer' }, '198.51.100.30');
  });

  it('creates referral codes: chosen or generated, unique, case-insensitive', async () => {
    const res = await app.request
      .post('/api/referrals')
      .set(referrer.auth)
      .send({ code: 'acme-10', note: 'newsletter' })
      .expect(201);
    expect(res.body.referral).toMatchObject({ code: 'ACME-10', agentId: referrer.id, commissionBps: 1000 });
    expect(res.body.referral.links.createJob).toMatch(/\/api\/jobs\?ref=ACME-10$/);
    acme = res.body.referral;
    const gen = await app.request.post('/api/referrals').set(referrer.auth).send({}).expect(201);
    expect(gen.body.referral.code).toMatch(/^[0-9A-HJKMNP-TV-Z]{10}$/);
    generated = gen.body.referral;
    expectProblem(
      await app.request.post('/api/referrals').set(other.auth).send({ code: 'ACME-10' }),
      409,
      'referral_code_taken',
    );
    expectProblem(await app.request.post('/api/referrals').send({}), 401, 'unauthorized');
    expectProblem(
      await app.request.post('/api/referrals').set(referrer.auth).send({ code: 'a b' }),
      400,
      'validation_failed',
    );
  });

  it('attributes agents’ jobs created with ?ref or X-Referral-Code; refuses unknown and own codes, and anonymous jobs', async () => {
    const viaQuery = await newJob({ ref: 'Acme-10', auth: other.auth });
    expect(viaQuery.status).toBe(202);
    const viaHeader = await newJob({ header: generated.code, auth: seller.auth });
    expect(viaHeader.status).toBe(202);
    const plain = await newJob();
    jobIds.acme = viaQuery.body.job.id;
    jobIds.generated = viaHeader.body.job.id;
    jobIds.plain = plain.body.job.id;
    const referralOf = async (id: string) => (await app.deps.db('jobs').where({ id }).first()).referral_id;
    expect(await referralOf(jobIds.acme!)).toBe(acme.id);
    expect(await referralOf(jobIds.generated!)).toBe(generated.id);
    expect(await referralOf(jobIds.plain!)).toBeNull();

    const jobCount = async () => Number((await app.deps.db('jobs').count({ n: '*' }))[0]!.n);
    const before = await jobCount();
    expectProblem(await newJob({ ref: 'NOPE-0000' }), 422, 'unknown_referral');
    expectProblem(await newJob({ header: 'x' }), 422, 'unknown_referral');
    expectProblem(await newJob({ ref: 'ACME-10', auth: referrer.auth }), 422, 'self_referral');
    expectProblem(await newJob({ ref: 'ACME-10' }), 422, 'referral_needs_agent');
    expect(await jobCount()).toBe(before);
  });

  it('sums confirmed receipts exactly by asset, service, period and referral (operator only)', async () => {
    const usdc = { asset: 'USDC-SOL', network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', decimals: 6 };
    const eth = { asset: 'ETH', network: 'eip155:1', decimals: 18 };
    await confirmedPayment(jobIds.acme!, {
      ...usdc,
      amount: '2500000',
      usdCents: 250,
      at: '2026-03-02T10:00:00.000Z',
    });
    await confirmedPayment(jobIds.acme!, {
      ...usdc,
      amount: '1000000',
      usdCents: 100,
      at: '2026-03-02T23:59:59.000Z',
    });
    await confirmedPayment(jobIds.generated!, {
      ...eth,
      amount: '123456789012345678901',
      usdCents: 30_000,
      at: '2026-02-15T00:00:00.000Z',
    });
    await confirmedPayment(jobIds.plain!, {
      ...eth,
      amount: '900000000000000000001',
      usdCents: 7,
      at: '2026-03-03T00:00:00.000Z',
    });
    // A payment that never confirmed counts for nothing.
    await app.deps.db('payments').insert({
      id: newId('pay'),
      job_id: jobIds.plain,
      quote_id: (await app.deps.db('quotes').where({ job_id: jobIds.plain }).first()).id,
      asset: 'ETH',
      chain: 'eip155:1',
      tx_ref: 'tx-pending',
      status: 'pending',
    });

    expectProblem(await app.request.get('/api/revenue'), 401, 'unauthorized');
    expectProblem(await app.request.get('/api/revenue').set(referrer.auth), 401, 'unauthorized');
    const day = (await app.request.get('/api/revenue').set(operator).expect(200)).body;
    expect(day.totals).toEqual({ receipts: 4, usdCents: '30357' });
    expect(day.byAsset).toEqual([
      { asset: 'ETH', decimals: 18, receipts: 2, amount: '1023456789012345678902', usdCents: '30007' },
      { asset: 'USDC-SOL', decimals: 6, receipts: 2, amount: '3500000', usdCents: '350' },
    ]);
    expect(day.byService).toEqual([
      expect.objectContaining({ service: 'attest.timestamp', receipts: 4, usdCents: '30357' }),
    ]);
    expect(day.byPeriod.map((p: { period: string; usdCents: string }) => [p.period, p.usdCents])).toEqual([
      ['2026-02-15', '30000'],
      ['2026-03-02', '350'],
      ['2026-03-03', '7'],
    ]);
    expect(day.byReferral).toHaveLength(2);
    // Ordered by code; the generated code may sort either side of ACME-10.
    expect(day.byReferral).toEqual(
      expect.arrayContaining([
        {
          referralId: acme.id,
          code: 'ACME-10',
          agentId: referrer.id,
          commissionBps: 1000,
          receipts: 2,
          usdCents: '350',
          commissionUsdCents: '35',
        },
        expect.objectContaining({ code: generated.code, usdCents: '30000', commissionUsdCents: '3000' }),
      ]),
    );

    const month = (await app.request.get('/api/revenue?period=month').set(operator).expect(200)).body;
    expect(month.byPeriod.map((p: { period: string; usdCents: string }) => [p.period, p.usdCents])).toEqual([
      ['2026-02', '30000'],
      ['2026-03', '357'],
    ]);
    const march = (
      await app.request
        .get('/api/revenue?from=2026-03-01T00:00:00Z&to=2026-03-03T00:00:00Z')
        .set(operator)
        .expect(200)
    ).body;
    expect(march.totals).toEqual({ receipts: 2, usdCents: '350' });
    expectProblem(
      await app.request.get('/api/revenue?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z').set(operator),
      400,
      'validation_failed',
    );
    expectProblem(await app.request.get('/api/revenue?period=week').set(operator), 400, 'validation_failed');
  });

  it('treasury status: a public summary, and inflows and bounded balances for the operator', async () => {
    const pub = (await app.request.get('/api/treasury/status').expect(200)).body;
    expect(pub.families.map((f: { family: string }) => f.family)).toEqual([
      'solana',
      'evm',
      'bitcoin',
      'monero',
    ]);
    expect(pub.details).toBe(false);
    expect(pub.recentInflows).toBeUndefined();
    expect(pub.balances).toBeUndefined();

    // A Solana treasury whose RPC endpoint never answers: the route still answers, saying so.
    const silent = http.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const saved = { TREASURY_SOLANA: env.TREASURY_SOLANA, SOLANA_RPC_URL: env.SOLANA_RPC_URL };
    env.TREASURY_SOLANA = 'So11111111111111111111111111111111111111112';
    env.SOLANA_RPC_URL = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      const status = (await app.request.get('/api/treasury/status').set(operator).expect(200)).body;
      expect(status.details).toBe(true);
      const solana = status.families.find((f: { family: string }) => f.family === 'solana');
      expect(solana).toMatchObject({ configured: true, address: env.TREASURY_SOLANA, adapter: 'configured' });
      expect(status.unconfigured).not.toContain('solana');
      expect(status.recentInflows.length).toBe(4);
      expect(status.recentInflows[0]).toMatchObject({ asset: 'ETH', amount: '900000000000000000001' });
      const balances = status.balances as Array<{ asset: string; available: boolean; reason?: string }>;
      expect(balances.map((b) => b.asset).sort()).toEqual(['PYUSD-SOL', 'SOL', 'USDC-SOL', 'USDT-SOL']);
      for (const b of balances) expect(b).toMatchObject({ available: false, reason: 'rpc_unreachable' });
    } finally {
      Object.assign(env, saved);
      silent.closeAllConnections();
      silent.close();
    }
  });
});
