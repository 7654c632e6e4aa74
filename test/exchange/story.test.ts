// The agent exchange end to end over HTTP, as two agents live it: a seller lists, a buyer finds, they
// sign an agreement, the buyer pays a referred job on a local EVM node, and the revenue is attributed.
import { createPublicKey, verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPaidChain, testPaymentsWorker } from './paid';
// Type-only imports load nothing, so these do not read the env before it is set below.
import type { Receipt } from '../../shared/payments/receipts';
import type { TestApp, TestWorker } from '../helpers';

// The node comes first: the env the modules parse once must already name it and the treasury.
const { chain, payer, treasury, usdc } = await startPaidChain();

const { sha256Of, testApp, testJobsWorker, waitForJob } = await import('../helpers');
const { registerAgent } = await import('./fixtures');
const { canonicalJson } = await import('../../shared/platform/canonical');
const { sha256Hex } = await import('../../shared/platform/crypto');
const { verifyReceipt } = await import('../../shared/payments/receipts');

const OPERATOR = { Authorization: 'Bearer op_test_token_0123456789' };

let app: TestApp;
let jobsWorker: TestWorker;
let payments: Awaited<ReturnType<typeof testPaymentsWorker>>;

beforeAll(async () => {
  app = testApp();
  jobsWorker = testJobsWorker();
  payments = await testPaymentsWorker(app);
});
afterAll(async () => {
  await payments?.close();
  await jobsWorker?.close();
  await app?.close();
  await chain.close();
});

describe('the agent story', () => {
  it('list → find → agree → refer → pay on chain → run → receipt → revenue by referral', async () => {
    const request = app.request;
    const seller = await registerAgent(app, {
      name: 'Notary Seller',
      description: 'Batch attestation of document digests with inclusion proofs',
      capabilities: ['attest.batch'],
      tags: ['notary'],
    });
    // Another party: registered from a network of its own (a referral is credited only then).
    const buyer = await registerAgent(
      app,
      { name: 'Archive Buyer', capabilities: ['archive'] },
      '198.51.100.32',
    );

    // A publishes a listing; B finds it by text and by tag.
    const listing = (
      await request
        .post('/api/marketplace/listings')
        .set(seller.auth)
        .send({
          title: 'Batch notarisation of digests',
          description: 'Merkle-batched timestamps for many sha256 digests at once, signed by the exchange.',
          tags: ['notary', 'attest.batch'],
          priceUsdCents: 50,
          asset: 'USDC-ETH',
          serviceEndpoint: 'https://seller.example/notary',
        })
        .expect(201)
    ).body.listing;
    expect(listing).toMatchObject({ sellerAgentId: seller.id, status: 'active' });
    const found = (await request.get('/api/marketplace/listings?q=notarisation&tag=notary').expect(200)).body;
    expect(found.listings.map((l: { id: string }) => l.id)).toEqual([listing.id]);
    const hit = found.listings[0];
    expect(hit).toMatchObject({ sellerAgentId: seller.id, price: { usdCents: 50, asset: 'USDC-ETH' } });

    // A proposes terms to B; B signs the terms hash with its wallet and accepts.
    const proposed = (
      await request
        .post('/api/agreements')
        .set(seller.auth)
        .send({
          counterpartyAgentId: buyer.id,
          service: 'attest.batch',
          listingId: hit.id,
          priceUsdCents: hit.price.usdCents,
          asset: hit.price.asset,
          deadline: new Date(Date.now() + 86_400_000).toISOString(),
          sla: { deliveryWithinSeconds: 600 },
        })
        .expect(201)
    ).body.agreement;
    expect(proposed.status).toBe('proposed');
    // B checks the hash itself before signing it: the terms it reads are the terms it signs.
    const seen = (await request.get(`/api/agreements/${proposed.id}`).set(buyer.auth).expect(200)).body
      .agreement;
    expect(seen.termsHash).toBe(sha256Hex(canonicalJson(seen.terms)));
    expect(seen.terms).toMatchObject({
      proposer: { agentId: seller.id, walletPublicKey: seller.wallet.publicKey },
      counterparty: { agentId: buyer.id, walletPublicKey: buyer.wallet.publicKey },
      listingId: listing.id,
    });
    const accepted = (
      await request
        .post(`/api/agreements/${proposed.id}/accept`)
        .set(buyer.auth)
        .send({ termsHash: seen.termsHash, signature: buyer.wallet.sign(seen.termsHash) })
        .expect(200)
    ).body.agreement;
    expect(accepted.status).toBe('accepted');
    expect(accepted.signatures.counterparty).toMatchObject({
      agentId: buyer.id,
      publicKey: buyer.wallet.publicKey,
    });

    // A hands B a referral code; B creates the priced job under it.
    const referral = (
      await request.post('/api/referrals').set(seller.auth).send({ code: 'notary-story' }).expect(201)
    ).body.referral;
    expect(referral).toMatchObject({ code: 'NOTARY-STORY', agentId: seller.id });
    const digests = await Promise.all([1, 2, 3].map((i) => sha256Of(`story document ${i}`)));
    const created = (
      await request
        .post(`/api/jobs?ref=${referral.code.toLowerCase()}`)
        .set(buyer.auth)
        .send({ service: 'attest.batch', input: { digests } })
        .expect(402)
    ).body;
    const jobId: string = created.job.id;
    expect(created.job.status).toBe('awaiting_payment');
    const quote = created.payment.quotes.find((q: { asset: string }) => q.asset === 'USDC-ETH');
    expect(quote).toMatchObject({ payTo: treasury, contract: usdc, usdCents: 50, binding: 'amount' });
    // 50 cents of USDC plus the quote's own offset (1–9999 base units), which tells it apart.
    expect(BigInt(quote.amount) - 500_000n).toBeGreaterThan(0n);

    // B pays the quote with a real ERC-20 transfer and submits the transaction.
    const tx = await chain.transferToken(usdc, payer, quote.payTo, BigInt(quote.amount));
    await chain.mine(1);
    await request
      .post(`/api/jobs/${jobId}/payment`)
      .set(buyer.auth)
      .send({ asset: 'USDC-ETH', txRef: tx, payer })
      .expect(202);

    // The payments worker confirms it, the jobs worker runs the job.
    const job = await waitForJob(request, jobId, buyer.apiKey);
    expect(job.status).toBe('succeeded');
    const status = (await request.get(`/api/jobs/${jobId}`).set(buyer.auth).expect(200)).body;
    expect(status.payment.payments[0]).toMatchObject({ status: 'confirmed', settlement: 'exact' });

    // B fetches the receipt and checks it offline with the key the discovery card publishes.
    const { receipt } = (await request.get(new URL(status.job.links.receipt).pathname).expect(200)).body as {
      receipt: Receipt;
    };
    expect(receipt).toMatchObject({
      jobId,
      serviceId: 'attest.batch',
      asset: 'USDC-ETH',
      amount: quote.amount,
      usdCents: '50',
      payTo: treasury,
      transaction: { txRef: tx },
    });
    const { receiptPublicKey } = (await request.get('/api/discovery').expect(200)).body;
    expect(verifyReceipt(receipt, receiptPublicKey.publicKey)).toBe(true);
    // The same check with nothing of ours: node:crypto, the PEM key and the canonical JSON.
    const { signature, ...signed } = receipt;
    const key = createPublicKey(receiptPublicKey.publicKeyPem);
    const message = Buffer.from(canonicalJson(signed));
    expect(verify(null, message, key, Buffer.from(signature, 'base64url'))).toBe(true);
    expect(
      verify(
        null,
        Buffer.from(canonicalJson({ ...signed, amount: '1' })),
        key,
        Buffer.from(signature, 'base64url'),
      ),
    ).toBe(false);

    // The operator's revenue summary credits A's referral with B's payment.
    const revenue = (await request.get('/api/revenue').set(OPERATOR).expect(200)).body;
    expect(revenue.totals).toEqual({ receipts: 1, usdCents: '50' });
    expect(revenue.byAsset).toEqual([
      { asset: 'USDC-ETH', decimals: 6, receipts: 1, amount: quote.amount, usdCents: '50' },
    ]);
    expect(revenue.byService).toMatchObject([{ service: 'attest.batch', receipts: 1, usdCents: '50' }]);
    expect(revenue.byReferral).toEqual([
      {
        referralId: referral.id,
        code: 'NOTARY-STORY',
        agentId: seller.id,
        commissionBps: 1000,
        receipts: 1,
        usdCents: '50',
        commissionUsdCents: '5',
      },
    ]);
    // The buyer's key opens none of it.
    expect((await request.get('/api/revenue').set(buyer.auth)).status).toBe(401);
  });
});
