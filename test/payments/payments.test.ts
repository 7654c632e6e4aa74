// Crypto payments end to end over HTTP: a priced job, its quotes, a real transfer on a local EVM node
// (ganache), submitPayment, the payments worker, the signed receipt, and the job running to the end.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChain } from './ganache';
// Type-only imports load nothing, so these do not read the env before it is set below.
import type { BatchAttestation } from '../../shared/jobs/services/attest-batch';
import type { TestApp, TestWorker } from '../helpers';
import type { Chain } from './ganache';

// The node and its token come first: the env the modules parse once must already name them.
const chain: Chain = await startChain(1337);
// `broke` never holds the token, so its transfers revert.
const [payer, treasury, stranger, broke] = chain.accounts as [string, string, string, string];
const usdc = await chain.deployToken(6, 10n ** 15n);
const wbtc = await chain.deployToken(8, 10n ** 15n);
Object.assign(process.env, {
  EVM_RPC_URL: chain.url,
  EVM_CONFIRMATIONS: '3',
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '2000',
  TREASURY_EVM: treasury,
  ASSETS_JSON: JSON.stringify({
    ETH: { network: 'eip155:1337' },
    'USDC-ETH': { network: 'eip155:1337', contract: usdc },
    'WBTC-ETH': { network: 'eip155:1337', contract: wbtc },
  }),
  RATES_USD: 'ETH=2000,BTC=100000',
  PAYMENT_RECHECK_MS: '100',
  PAYMENT_RECHECK_MAX_MS: '300',
});

const { eventually, sha256Of, testApp, testJobsWorker, testQueueWorker, waitForJob } =
  await import('../helpers');
const { paymentsProcessor } = await import('../../workers/processors/payments');
const { expireUnpaidJobs } = await import('../../shared/payments/payments');
const { verifyReceipt } = await import('../../shared/payments/receipts');
const { verifyBatchInclusion } = await import('../../shared/jobs/services/attest-batch');

// 50 cents: 500000 USDC base units; 0.00025 ETH at 2000 USD; 500 sat of WBTC at 100000 USD.
const PRICE = { 'USDC-ETH': 500_000n, ETH: 250_000_000_000_000n, 'WBTC-ETH': 500n };

let app: TestApp;
let jobsWorker: TestWorker;
let payments: TestWorker;

beforeAll(() => {
  app = testApp();
  jobsWorker = testJobsWorker();
  payments = testQueueWorker('payments', (db) => paymentsProcessor(db, app.deps.queues));
});
afterAll(async () => {
  await payments?.close();
  await jobsWorker?.close();
  await app?.close();
  await chain.close();
});

const db = () => app.deps.db;

async function priced(digests = 3) {
  const input = {
    digests: await Promise.all(
      Array.from({ length: digests }, (_, i) => sha256Of(`doc ${i} ${Math.random()}`)),
    ),
  };
  const res = await app.request.post('/api/jobs').send({ service: 'attest.batch', input }).expect(202);
  return { id: res.body.job.id as string, res, input };
}

const submit = (jobId: string, body: Record<string, unknown>) =>
  app.request.post(`/api/jobs/${jobId}/payment`).send(body);

async function paymentSettled(paymentId: string) {
  return eventually(async () => {
    const row = await db()('payments').where({ id: paymentId }).first();
    return row && !['pending', 'verifying'].includes(row.status) ? row : undefined;
  }, 15_000);
}

async function payUsdc(amount: bigint, to = treasury) {
  const hash = await chain.transferToken(usdc, payer, to, amount);
  await chain.mine(2);
  return hash;
}

function expectProblem(
  res: { status: number; headers: Record<string, string>; body: Record<string, unknown> },
  status: number,
  code: string,
) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.code).toBe(code);
}

describe('quotes', () => {
  it('answers a priced job with locked quotes per enabled asset and x402 requirements', async () => {
    const { id, res } = await priced();
    expect(res.body.job.status).toBe('awaiting_payment');
    const payment = res.body.payment;
    expect(payment.required).toBe(true);
    expect(payment.usdCents).toBe(50);
    const byAsset = Object.fromEntries(payment.quotes.map((q: { asset: string }) => [q.asset, q]));
    expect(Object.keys(byAsset).sort()).toEqual(['ETH', 'USDC-ETH', 'WBTC-ETH']);
    expect(byAsset['USDC-ETH']).toMatchObject({
      amount: '500000',
      amountDisplay: '0.5',
      payTo: treasury,
      contract: usdc,
    });
    expect(byAsset.ETH).toMatchObject({ amount: PRICE.ETH.toString(), network: 'eip155:1337' });
    expect(byAsset.ETH.rate).toMatchObject({ usd: '2000', source: 'config' });
    expect(byAsset['USDC-ETH'].rate).toBeUndefined(); // stablecoins are 1:1
    expect(byAsset['WBTC-ETH'].amount).toBe('500');
    expect(payment.unavailable.map((u: { asset: string }) => u.asset).sort()).toEqual([
      'BTC',
      'PYUSD-SOL',
      'SOL',
      'USDC-SOL',
      'USDT-SOL',
      'XMR',
    ]);
    expect(res.body.job.expiresAt).toBe(payment.expiresAt);
    const stored = await db()('quotes').where({ job_id: id });
    expect(stored).toHaveLength(3);

    const accepts = payment.x402.accepts as Array<Record<string, unknown>>;
    expect(payment.x402.x402Version).toBe(2);
    expect(accepts.find((a) => a.asset === usdc)).toMatchObject({
      scheme: 'exact',
      network: 'eip155:1337',
      amount: '500000',
      payTo: treasury,
    });
    expect(accepts.find((a) => a.asset === 'slip44:60')).toMatchObject({ amount: PRICE.ETH.toString() });
    for (const a of accepts) expect(a.maxTimeoutSeconds).toBeGreaterThan(800);
    const header = JSON.parse(Buffer.from(res.headers['payment-required'] as string, 'base64').toString());
    expect(header).toEqual(payment.x402);
  });

  it('lists the nine assets on pricing, enabled or not and why', async () => {
    const res = await app.request.get('/api/pricing').expect(200);
    expect(res.body.assets).toHaveLength(9);
    const eth = res.body.assets.find((a: { id: string }) => a.id === 'ETH');
    expect(eth).toMatchObject({ enabled: true, payTo: treasury });
    const sol = res.body.assets.find((a: { id: string }) => a.id === 'SOL');
    expect(sol).toMatchObject({ enabled: false, reason: 'no_treasury' });
    expect(sol.detail).toMatch(/TREASURY_SOLANA/);
    expect(res.body.services.find((s: { id: string }) => s.id === 'attest.batch')).toEqual({
      id: 'attest.batch',
      usdCents: 50,
      free: false,
    });
  });
});

describe('paying a job', () => {
  it('runs the whole path: ETH transfer → submitPayment → worker → receipt → the job succeeds', async () => {
    const { id, input } = await priced(5);
    const tx = await chain.sendEth(payer, treasury, PRICE.ETH);
    await chain.mine(2);
    const res = await submit(id, { asset: 'ETH', txRef: tx, payer }).expect(202);
    expect(res.body.payment).toMatchObject({ status: 'pending', asset: 'ETH', txRef: tx, jobId: id });

    const job = await waitForJob(app.request, id);
    expect(job.status).toBe('succeeded');
    const status = await app.request.get(`/api/jobs/${id}`).expect(200);
    const [payment] = status.body.payment.payments;
    expect(payment).toMatchObject({
      status: 'confirmed',
      settlement: 'exact',
      amountReceived: PRICE.ETH.toString(),
      confirmations: 3,
    });
    expect(status.body.payment.required).toBe(false);
    expect(status.body.job.links.receipt).toMatch(/\/api\/receipts\/rcpt_/);
    expect(payment.links.receipt).toBe(status.body.job.links.receipt);

    // The receipt verifies offline with the published key, and not once altered.
    const receiptPath = new URL(status.body.job.links.receipt).pathname;
    const { receipt } = (await app.request.get(receiptPath).expect(200)).body;
    expect(receipt).toMatchObject({
      jobId: id,
      asset: 'ETH',
      amount: PRICE.ETH.toString(),
      settlement: 'exact',
      payer: payer.toLowerCase(),
    });
    expect(receipt.transaction).toMatchObject({ txRef: tx, output: 'value' });
    const { publicKey } = (await app.request.get('/api/health').expect(200)).body.signingKey;
    expect(verifyReceipt(receipt, publicKey)).toBe(true);
    expect(verifyReceipt({ ...receipt, amount: '1' }, publicKey)).toBe(false);
    expect(
      verifyReceipt(
        { ...receipt, transaction: { ...receipt.transaction, txRef: `0x${'00'.repeat(32)}` } },
        publicKey,
      ),
    ).toBe(false);

    // The job's result: a signed root with an inclusion proof per digest.
    const result = job.result as BatchAttestation;
    expect(result.treeSize).toBe(5);
    expect(result.inclusions.map((i: { digest: string }) => i.digest)).toEqual(input.digests);
    for (const inclusion of result.inclusions)
      expect(verifyBatchInclusion(result, inclusion, publicKey)).toBe(true);
    expect(verifyBatchInclusion(result, { ...result.inclusions[0]!, leafIndex: 1 }, publicKey)).toBe(false);
    const events = (await db()('job_events').where({ job_id: id }).orderBy('id')).map(
      (e: { type: string }) => e.type,
    );
    expect(events.filter((t: string) => t !== 'progress')).toEqual([
      'awaiting_payment',
      'queued',
      'running',
      'succeeded',
    ]);
  });

  it('records an ERC-20 overpayment as overpaid and still runs the job', async () => {
    const { id } = await priced();
    const tx = await payUsdc(PRICE['USDC-ETH'] + 100_000n);
    await submit(id, { asset: 'USDC-ETH', txRef: tx }).expect(202);
    expect((await waitForJob(app.request, id)).status).toBe('succeeded');
    const row = await db()('payments').where({ job_id: id }).first();
    expect(row).toMatchObject({ status: 'confirmed', settlement: 'overpaid', amount_received: '600000' });
    expect(row.output).toMatch(/^log:\d+$/);
  });

  it('calls a short payment underpaid: the job keeps waiting, and the transfer cannot pay elsewhere', async () => {
    const { id } = await priced();
    const tx = await payUsdc(PRICE['USDC-ETH'] - 1n);
    const res = await submit(id, { asset: 'USDC-ETH', txRef: tx }).expect(202);
    const row = await paymentSettled(res.body.payment.id);
    expect(row).toMatchObject({ status: 'underpaid', reason: 'underpaid', amount_received: '499999' });
    expect((await app.request.get(`/api/jobs/${id}`).expect(200)).body.job.status).toBe('awaiting_payment');
    expect(await db()('receipts').where({ job_id: id })).toHaveLength(0);
    const other = await priced();
    expectProblem(await submit(other.id, { asset: 'USDC-ETH', txRef: tx }), 409, 'payment_already_claimed');
  });

  it('rejects the wrong asset, the wrong recipient, and a reverted transfer', async () => {
    const cases: Array<[string, () => Promise<string>, string]> = [
      [
        'wrong asset',
        async () => {
          const h = await chain.transferToken(wbtc, payer, treasury, 10n ** 9n);
          await chain.mine(2);
          return h;
        },
        'wrong_asset',
      ],
      ['wrong recipient', () => payUsdc(PRICE['USDC-ETH'], stranger), 'wrong_recipient'],
      [
        'reverted',
        async () => {
          const h = await chain.transferToken(usdc, broke, treasury, PRICE['USDC-ETH']);
          await chain.mine(2);
          return h;
        },
        'reverted',
      ],
    ];
    for (const [, pay, reason] of cases) {
      const { id } = await priced();
      const res = await submit(id, { asset: 'USDC-ETH', txRef: await pay() }).expect(202);
      expect(await paymentSettled(res.body.payment.id)).toMatchObject({ status: 'rejected', reason });
      expect((await app.request.get(`/api/jobs/${id}`).expect(200)).body.job.status).toBe('awaiting_payment');
    }
  });

  it('keeps a payment pending with too few confirmations, then confirms it once blocks are mined', async () => {
    const { id } = await priced();
    const tx = await chain.transferToken(usdc, payer, treasury, PRICE['USDC-ETH']);
    const res = await submit(id, { asset: 'USDC-ETH', txRef: tx }).expect(202);
    const pending = await eventually(async () => {
      const row = await db()('payments').where({ id: res.body.payment.id }).first();
      return row.status === 'pending' && row.reason === 'too_few_confirmations' ? row : undefined;
    });
    expect(pending).toMatchObject({ confirmations: 1, amount_received: '500000' });
    expect((await app.request.get(`/api/jobs/${id}`).expect(200)).body.payment.payments[0]).toMatchObject({
      status: 'pending',
      reason: 'too_few_confirmations',
    });
    await chain.mine(2);
    expect(await paymentSettled(res.body.payment.id)).toMatchObject({
      status: 'confirmed',
      settlement: 'exact',
    });
    expect((await waitForJob(app.request, id)).status).toBe('succeeded');
  });
});

describe('expiry', () => {
  const age = async (jobId: string, seconds: number) => {
    const at = new Date(Date.now() - seconds * 1000);
    await db()('quotes').where({ job_id: jobId }).update({ expires_at: at });
    await db()('jobs').where({ id: jobId }).update({ expires_at: at });
  };

  it('refuses payment once the quote and its watch window are over, and the sweep expires the job', async () => {
    const { id } = await priced();
    await age(id, 2 * 3600); // past expiry and the one-hour late window
    const tx = await payUsdc(PRICE['USDC-ETH']);
    const before = await db()('payments').count({ n: '*' });
    expectProblem(await submit(id, { asset: 'USDC-ETH', txRef: tx }), 409, 'quote_expired');
    expect(await db()('payments').count({ n: '*' })).toEqual(before);
    expect(await expireUnpaidJobs(db())).toBeGreaterThanOrEqual(1);
    const job = (await app.request.get(`/api/jobs/${id}`).expect(200)).body.job;
    expect(job).toMatchObject({ status: 'expired', error: { code: 'quote_expired' } });
  });

  it('honours a payment after expiry inside the watch window as paid_late, and the job runs', async () => {
    const { id } = await priced();
    await age(id, 60);
    await expireUnpaidJobs(db());
    expect((await app.request.get(`/api/jobs/${id}`).expect(200)).body.job.status).toBe('expired');
    const tx = await chain.sendEth(payer, treasury, PRICE.ETH);
    await chain.mine(2);
    const res = await submit(id, { asset: 'ETH', txRef: tx }).expect(202);
    expect(await paymentSettled(res.body.payment.id)).toMatchObject({
      status: 'confirmed',
      settlement: 'paid_late',
    });
    // The expired job is revived, runs, and its events say why.
    expect((await waitForJob(app.request, id)).status).toBe('succeeded');
    const types = (await db()('job_events').where({ job_id: id }).orderBy('id')).map(
      (e: { type: string }) => e.type,
    );
    expect(types.filter((t: string) => t !== 'progress')).toEqual([
      'awaiting_payment',
      'expired',
      'queued',
      'running',
      'succeeded',
    ]);
  });

  it('ends a payment the chain never confirms as expired when the watch window closes', async () => {
    const { id } = await priced();
    const res = await submit(id, { asset: 'ETH', txRef: `0x${'ab'.repeat(32)}` }).expect(202);
    await eventually(
      async () => (await db()('payments').where({ id: res.body.payment.id }).first()).reason === 'not_found',
    );
    await age(id, 2 * 3600);
    expect(await paymentSettled(res.body.payment.id)).toMatchObject({
      status: 'expired',
      reason: 'not_found',
    });
    expect(await expireUnpaidJobs(db())).toBeGreaterThanOrEqual(1);
  });
});

describe('replay protection', () => {
  it('lets one transfer pay one job when two jobs race to claim it', async () => {
    const a = await priced();
    const b = await priced();
    const tx = await payUsdc(PRICE['USDC-ETH']);
    const results = await Promise.all([a, b].map((j) => submit(j.id, { asset: 'USDC-ETH', txRef: tx })));
    const accepted = results.filter((r) => r.status === 202);
    for (const r of results.filter((r) => r.status !== 202)) expectProblem(r, 409, 'payment_already_claimed');
    const settled = await Promise.all(accepted.map((r) => paymentSettled(r.body.payment.id)));
    expect(settled.filter((p) => p.status === 'confirmed')).toHaveLength(1);
    for (const p of settled.filter((p) => p.status !== 'confirmed'))
      expect(p).toMatchObject({ status: 'rejected', reason: 'already_claimed' });
    const claims = await db()('payment_claims').where({ tx_ref: tx.toLowerCase() });
    expect(claims).toHaveLength(1);

    const c = await priced();
    expectProblem(await submit(c.id, { asset: 'USDC-ETH', txRef: tx }), 409, 'payment_already_claimed');
    // Submitting the winner's transaction again for its own job answers the same payment.
    const winner = settled.find((p) => p.status === 'confirmed')!;
    const again = await submit(winner.job_id, {
      asset: 'USDC-ETH',
      txRef: tx.toUpperCase().replace('0X', '0x'),
    }).expect(202);
    expect(again.body.payment.id).toBe(winner.id);
  });

  it('rejects as already_claimed a payment that reaches the worker after its transfer was credited', async () => {
    // A row that got past the submit-time check (say, queued by an older release): the claim in the
    // confirming transaction is what stops it.
    const first = await priced();
    const second = await priced();
    const tx = await payUsdc(PRICE['USDC-ETH']);
    const ok = await submit(first.id, { asset: 'USDC-ETH', txRef: tx }).expect(202);
    expect(await paymentSettled(ok.body.payment.id)).toMatchObject({ status: 'confirmed' });
    const quote = await db()('quotes').where({ job_id: second.id, asset: 'USDC-ETH' }).first();
    const paymentId = 'pay_01m7ycenb0y37det98dds34qjx';
    await db()('payments').insert({
      id: paymentId,
      job_id: second.id,
      quote_id: quote.id,
      asset: 'USDC-ETH',
      chain: 'eip155:1337',
      tx_ref: tx.toLowerCase(),
      status: 'pending',
    });
    await app.deps.queues.enqueue('payments', { paymentId });
    expect(await paymentSettled(paymentId)).toMatchObject({ status: 'rejected', reason: 'already_claimed' });
    expect((await app.request.get(`/api/jobs/${second.id}`).expect(200)).body.job.status).toBe(
      'awaiting_payment',
    );
  });
});

describe('bad input gets a 4xx problem and writes nothing', () => {
  it('refuses each bad submission', async () => {
    const { id } = await priced();
    const free = await app.request
      .post('/api/jobs')
      .send({ service: 'attest.timestamp', input: { digest: await sha256Of('free') } })
      .expect(202);
    const hash = `0x${'cd'.repeat(32)}`;
    const cases: Array<
      [
        () => Promise<{ status: number; headers: Record<string, string>; body: Record<string, unknown> }>,
        number,
        string,
      ]
    > = [
      [() => submit(id, { asset: 'ETH', txRef: hash, extra: 1 }), 400, 'validation_failed'],
      [() => submit(id, { asset: 'DOGE', txRef: hash }), 400, 'validation_failed'],
      [() => submit(id, { asset: 'ETH' }), 400, 'validation_failed'],
      [() => submit(id, { asset: 'ETH', txRef: 'not-a-hash' }), 400, 'validation_failed'],
      [() => submit(id, { asset: 'ETH', txRef: hash, txKey: 'ab'.repeat(32) }), 400, 'validation_failed'],
      [() => submit(id, { asset: 'SOL', txRef: '5'.repeat(88) }), 422, 'asset_not_quoted'],
      [() => submit('job_01m7ycenb0y37det98dds34qjx', { asset: 'ETH', txRef: hash }), 404, 'not_found'],
      [() => submit('nope', { asset: 'ETH', txRef: hash }), 400, 'validation_failed'],
      [() => submit(free.body.job.id, { asset: 'ETH', txRef: hash }), 409, 'payment_not_required'],
      [() => app.request.get('/api/receipts/rcpt_01m7ycenb0y37det98dds34qjx'), 404, 'not_found'],
      [() => app.request.get('/api/receipts/nope'), 400, 'validation_failed'],
    ];
    for (const [send, status, code] of cases) {
      const before = await db()('payments').count({ n: '*' });
      expectProblem(await send(), status, code);
      expect(await db()('payments').count({ n: '*' })).toEqual(before);
    }
    expect(free.body.payment).toBeUndefined();
  });

  it('refuses an attest.batch input with no digests without creating a job', async () => {
    const jobs = await db()('jobs').count({ n: '*' });
    const res = await app.request.post('/api/jobs').send({ service: 'attest.batch', input: { digests: [] } });
    expectProblem(res, 400, 'validation_failed');
    expect(await db()('jobs').count({ n: '*' })).toEqual(jobs);
    expect(await db()('quotes').whereNotIn('job_id', db()('jobs').select('id'))).toHaveLength(0);
  });
});
