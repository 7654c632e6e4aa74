// Crypto payments end to end over HTTP: a priced job, its quotes, a real transfer on a local EVM node
// (ganache), submitPayment, the payments worker, the signed receipt, and the job running to the end.
import { randomBytes } from 'node:crypto';
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
  // Every job here comes from one address; the per-caller cap is tested in test/security/amounts.test.ts.
  AMOUNT_HOLDS_PER_CALLER: '1000',
  // A job's webhook here names a loopback address; nothing is delivered (no deliveries worker runs).
  LOGISTICS_ALLOW_PRIVATE_TARGETS: 'true',
});

const { bearer, eventually, sha256Of, testApp, testJobsWorker, testQueueWorker, waitForJob } =
  await import('../helpers');
const { paymentsProcessor } = await import('../../workers/processors/payments');
const { expireUnpaidJobs } = await import('../../shared/payments/expiry');
const { verifyReceipt } = await import('../../shared/payments/receipts');
const { verifyBatchInclusion } = await import('../../shared/jobs/services/attest-batch');
// EIP-681 read back by an independent parser, not by our own code.
const { parse: parseEip681 } = await import('eth-url-parser');

// 50 cents: 500000 USDC base units; 0.00025 ETH at 2000 USD; 500 sat of WBTC at 100000 USD. Each
// quote adds a random offset (1 to the asset's spread) so no two open quotes share an amount.
const PRICE = { 'USDC-ETH': 500_000n, ETH: 250_000_000_000_000n, 'WBTC-ETH': 500n };
const SPREAD = { 'USDC-ETH': 9_999n, ETH: 999_999_999n, 'WBTC-ETH': 999n };
type Asset = keyof typeof PRICE;

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
  const res = await app.request.post('/api/jobs').send({ service: 'attest.batch', input }).expect(402);
  const quotes = res.body.payment.quotes as Array<{ asset: string; amount: string; reference: string }>;
  /** What this job's quote in `asset` asks for: the only amount that pays it. */
  const amount = (asset: Asset) => BigInt(quotes.find((q) => q.asset === asset)!.amount);
  tokens.set(res.body.job.id, res.body.accessToken);
  return { id: res.body.job.id as string, res, input, amount };
}

/** Each job's access token, by job id: a job opens to its token. */
const tokens = new Map<string, string>();
const tokenOf = (jobId: string) => tokens.get(jobId)!;
const opening = (jobId: string) => (tokens.has(jobId) ? bearer(tokenOf(jobId)) : {});
const readJob = (jobId: string) => app.request.get(`/api/jobs/${jobId}`).set(opening(jobId));

const submit = (jobId: string, body: Record<string, unknown>) =>
  app.request.post(`/api/jobs/${jobId}/payment`).set(opening(jobId)).send(body);

async function paymentSettled(paymentId: string) {
  return eventually(async () => {
    const row = await db()('payments').where({ id: paymentId }).first();
    return row && !['pending', 'verifying'].includes(row.status) ? row : undefined;
  }, 15_000);
}

/** A transaction hash no chain has: its payment stays pending. */
const unknownTx = () => `0x${randomBytes(32).toString('hex')}`;

/** Waits until `n` statements of this file's database wait for a lock (`advisory`, or any kind). */
async function waitingForLocks(n: number, kind?: 'advisory') {
  await eventually(async () => {
    const { rows } = await db().raw(
      `select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and wait_event = coalesce(?, wait_event)`,
      [kind ?? null],
    );
    return rows[0].n >= n;
  });
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
    expect(byAsset['USDC-ETH']).toMatchObject({ payTo: treasury, contract: usdc, binding: 'amount' });
    for (const asset of Object.keys(PRICE) as Asset[]) {
      const offset = BigInt(byAsset[asset].amount) - PRICE[asset];
      expect(offset >= 1n && offset <= SPREAD[asset]).toBe(true);
    }
    expect(byAsset['USDC-ETH'].amountDisplay).toMatch(/^0\.50\d{2,4}$/);
    expect(byAsset.ETH).toMatchObject({ network: 'eip155:1337' });
    expect(byAsset.ETH.rate).toMatchObject({ usd: '2000', source: 'config' });
    expect(byAsset['USDC-ETH'].rate).toBeUndefined(); // stablecoins are 1:1
    expect((await db()('quotes').where({ id: byAsset.ETH.reference }).first()).base_amount).toBe(
      PRICE.ETH.toString(),
    );

    // The payer is told what to send: EIP-681 requests that an independent parser reads back.
    const eth = parseEip681(byAsset.ETH.paymentInstructions.uri);
    expect(eth).toMatchObject({ scheme: 'ethereum', target_address: treasury, chain_id: '1337' });
    expect(String(eth.parameters.value)).toBe(byAsset.ETH.amount);
    const token = parseEip681(byAsset['USDC-ETH'].paymentInstructions.uri);
    expect(token).toMatchObject({ target_address: usdc, chain_id: '1337', function_name: 'transfer' });
    expect(token.parameters).toMatchObject({ address: treasury });
    expect(String(token.parameters.uint256)).toBe(byAsset['USDC-ETH'].amount);
    expect(byAsset['USDC-ETH'].paymentInstructions).toMatchObject({ exactAmount: true, scheme: 'eip-681' });
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

    // x402 lists only what its `exact` scheme can pay, through a configured settler: none is configured
    // here (and ETH, a native coin, never is), so there is no requirement to offer: the 402 carries no
    // PAYMENT-REQUIRED and no `x402` (never an empty `accepts`), and every quote is paid with
    // submitPayment. test/payments/x402.test.ts covers the requirements of a payable token.
    expect(payment.x402).toBeUndefined();
    expect(res.headers['payment-required']).toBeUndefined();
    expect(res.headers.location).toBe(res.body.job.links.self);
  });

  it('lists the nine assets on pricing, enabled or not and why', async () => {
    const res = await app.request.get('/api/pricing').expect(200);
    expect(res.body.assets).toHaveLength(9);
    const eth = res.body.assets.find((a: { id: string }) => a.id === 'ETH');
    expect(eth).toMatchObject({ enabled: true, payTo: treasury, binding: 'amount' });
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
    const { id, input, amount } = await priced(5);
    const tx = await chain.sendEth(payer, treasury, amount('ETH'));
    await chain.mine(2);
    const res = await submit(id, { asset: 'ETH', txRef: tx, payer }).expect(202);
    expect(res.body.payment).toMatchObject({ status: 'pending', asset: 'ETH', txRef: tx, jobId: id });

    const job = await waitForJob(app.request, id, tokenOf(id));
    expect(job.status).toBe('succeeded');
    const status = await readJob(id).expect(200);
    const [payment] = status.body.payment.payments;
    expect(payment).toMatchObject({
      status: 'confirmed',
      settlement: 'exact',
      amountReceived: amount('ETH').toString(),
      confirmations: 3,
    });
    expect(Math.abs(Date.parse(payment.blockTime) - Date.now())).toBeLessThan(120_000);
    expect(status.body.payment.required).toBe(false);
    expect(status.body.job.links.receipt).toMatch(/\/api\/receipts\/rcpt_/);
    expect(payment.links.receipt).toBe(status.body.job.links.receipt);

    // The receipt verifies offline with the published key, and not once altered.
    const receiptPath = new URL(status.body.job.links.receipt).pathname;
    const { receipt } = (await app.request.get(receiptPath).expect(200)).body;
    expect(receipt).toMatchObject({
      jobId: id,
      asset: 'ETH',
      amount: amount('ETH').toString(),
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

  it('pays nothing with any other amount: over or short, the transfer is not this quote’s', async () => {
    // The amount is what tells this quote from every other open one, so more or less is another's.
    for (const delta of [100_000n, -1n]) {
      const { id, amount } = await priced();
      const tx = await payUsdc(amount('USDC-ETH') + delta);
      const res = await submit(id, { asset: 'USDC-ETH', txRef: tx }).expect(202);
      const row = await paymentSettled(res.body.payment.id);
      expect(row).toMatchObject({
        status: 'rejected',
        reason: 'amount_mismatch',
        amount_received: (amount('USDC-ETH') + delta).toString(),
      });
      expect((await readJob(id).expect(200)).body.job.status).toBe('awaiting_payment');
      expect(await db()('receipts').where({ job_id: id })).toHaveLength(0);
      expect(await db()('payment_claims').where({ tx_ref: tx.toLowerCase() })).toHaveLength(0);
    }
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
      ['wrong recipient', () => payUsdc(PRICE['USDC-ETH'] + 1n, stranger), 'wrong_recipient'],
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
      expect((await readJob(id).expect(200)).body.job.status).toBe('awaiting_payment');
    }
  });

  it('keeps a payment pending with too few confirmations, then confirms it once blocks are mined', async () => {
    const { id, amount } = await priced();
    const tx = await chain.transferToken(usdc, payer, treasury, amount('USDC-ETH'));
    const res = await submit(id, { asset: 'USDC-ETH', txRef: tx }).expect(202);
    const pending = await eventually(async () => {
      const row = await db()('payments').where({ id: res.body.payment.id }).first();
      return row.status === 'pending' && row.reason === 'too_few_confirmations' ? row : undefined;
    });
    expect(pending).toMatchObject({ confirmations: 1, amount_received: amount('USDC-ETH').toString() });
    expect((await readJob(id).expect(200)).body.payment.payments[0]).toMatchObject({
      status: 'pending',
      reason: 'too_few_confirmations',
    });
    await chain.mine(2);
    expect(await paymentSettled(res.body.payment.id)).toMatchObject({
      status: 'confirmed',
      settlement: 'exact',
    });
    expect((await waitForJob(app.request, id, tokenOf(id))).status).toBe('succeeded');
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
    const job = (await readJob(id).expect(200)).body.job;
    expect(job).toMatchObject({ status: 'expired', error: { code: 'quote_expired' } });
  });

  it('honours a payment after expiry inside the watch window as paid_late, and the job runs', async () => {
    const { id, amount } = await priced();
    await age(id, 60);
    await expireUnpaidJobs(db());
    expect((await readJob(id).expect(200)).body.job.status).toBe('expired');
    const tx = await chain.sendEth(payer, treasury, amount('ETH'));
    await chain.mine(2);
    const res = await submit(id, { asset: 'ETH', txRef: tx }).expect(202);
    expect(await paymentSettled(res.body.payment.id)).toMatchObject({
      status: 'confirmed',
      settlement: 'paid_late',
    });
    // The expired job is revived, runs, and its events say why.
    expect((await waitForJob(app.request, id, tokenOf(id))).status).toBe('succeeded');
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

describe('a transfer pays only the quote it was made for', () => {
  it("A's transfer submitted for B (same price) does not pay B, and still pays A", async () => {
    const a = await priced();
    const tx = await chain.sendEth(payer, treasury, a.amount('ETH'));
    await chain.mine(2);
    // Someone else makes job B at the same price and submits A's transaction for it first.
    const b = await priced();
    expect(b.amount('ETH')).not.toBe(a.amount('ETH'));
    const forB = await submit(b.id, { asset: 'ETH', txRef: tx }).expect(202);
    // A's payer is not locked out while B's claim is being verified.
    const forA = await submit(a.id, { asset: 'ETH', txRef: tx }).expect(202);
    expect(await paymentSettled(forB.body.payment.id)).toMatchObject({
      status: 'rejected',
      reason: 'amount_mismatch',
    });
    expect(await paymentSettled(forA.body.payment.id)).toMatchObject({
      status: 'confirmed',
      settlement: 'exact',
    });
    expect((await waitForJob(app.request, a.id, tokenOf(a.id))).status).toBe('succeeded');
    expect((await readJob(b.id).expect(200)).body.job.status).toBe('awaiting_payment');
    expect(await db()('receipts').where({ job_id: b.id })).toHaveLength(0);
    const claims = await db()('payment_claims').where({ tx_ref: tx.toLowerCase() });
    expect(claims.map((c: { payment_id: string }) => c.payment_id)).toEqual([forA.body.payment.id]);
  });

  it('rejects a transfer whose block is older than the quote (transfer_before_quote)', async () => {
    const job = await priced();
    // The exact amount, but sent (by the chain's clock) ten minutes before the quote was made.
    await chain.setTime(new Date(Date.now() - 10 * 60_000));
    const tx = await chain.sendEth(payer, treasury, job.amount('ETH'));
    await chain.setTime(new Date());
    await chain.mine(2);
    const res = await submit(job.id, { asset: 'ETH', txRef: tx }).expect(202);
    expect(await paymentSettled(res.body.payment.id)).toMatchObject({
      status: 'rejected',
      reason: 'transfer_before_quote',
    });
    expect((await readJob(job.id).expect(200)).body.job.status).toBe('awaiting_payment');
    expect(await db()('payment_claims').where({ tx_ref: tx.toLowerCase() })).toHaveLength(0);
  });

  it('never gives two open quotes of one asset and treasury the same amount', async () => {
    const jobs = await Promise.all(Array.from({ length: 24 }, () => priced(1)));
    for (const asset of Object.keys(PRICE) as Asset[]) {
      const amounts = jobs.map((j) => j.amount(asset).toString());
      expect(new Set(amounts).size).toBe(amounts.length);
    }
    // The database itself refuses a second holder of a held amount.
    const held = await db()('payment_amounts')
      .where({ owner: jobs[0]!.res.body.payment.quotes[0].reference })
      .first();
    await expect(
      db()('payment_amounts').insert({ ...held, id: undefined, owner: 'pay_01m7ycenb0y37det98dds34qjx' }),
    ).rejects.toThrow(/payment_amounts_unique/);
  });

  it('20 concurrent submissions of one transfer for 20 quotes: exactly one paid, the one it was for', async () => {
    const jobs = await Promise.all(Array.from({ length: 20 }, () => priced(1)));
    const target = jobs[7]!;
    const tx = await payUsdc(target.amount('USDC-ETH'));
    const results = await Promise.all(jobs.map((j) => submit(j.id, { asset: 'USDC-ETH', txRef: tx })));
    // Submissions that arrive after the transfer was credited are refused outright; the rest are
    // verified, and only the quote the transfer was made for is paid.
    const accepted = results.filter((r) => r.status === 202);
    for (const r of results.filter((r) => r.status !== 202)) expectProblem(r, 409, 'payment_already_claimed');
    const settled = await Promise.all(accepted.map((r) => paymentSettled(r.body.payment.id)));
    const confirmed = settled.filter((p) => p.status === 'confirmed');
    expect(confirmed).toHaveLength(1);
    expect(confirmed[0].job_id).toBe(target.id);
    for (const p of settled.filter((p) => p.status !== 'confirmed')) {
      expect(p.status).toBe('rejected');
      expect(['amount_mismatch', 'already_claimed']).toContain(p.reason);
    }
    expect(await db()('payment_claims').where({ tx_ref: tx.toLowerCase() })).toHaveLength(1);
    expect(
      await db()('receipts').whereIn(
        'job_id',
        jobs.map((j) => j.id),
      ),
    ).toHaveLength(1);
  });
});

describe('replay protection', () => {
  it('refuses a transaction that already paid, and answers its own job the same payment again', async () => {
    const a = await priced();
    const tx = await payUsdc(a.amount('USDC-ETH'));
    const ok = await submit(a.id, { asset: 'USDC-ETH', txRef: tx }).expect(202);
    const winner = await paymentSettled(ok.body.payment.id);
    expect(winner).toMatchObject({ status: 'confirmed' });
    const c = await priced();
    const before = await db()('payments').count({ n: '*' });
    expectProblem(await submit(c.id, { asset: 'USDC-ETH', txRef: tx }), 409, 'payment_already_claimed');
    expect(await db()('payments').count({ n: '*' })).toEqual(before);
    // Submitting the winner's transaction again for its own job answers the same payment.
    const again = await submit(winner.job_id, {
      asset: 'USDC-ETH',
      txRef: tx.toUpperCase().replace('0X', '0x'),
    }).expect(202);
    expect(again.body.payment.id).toBe(winner.id);
  });

  it('rejects as already_claimed a payment that reaches the worker after its transfer was credited', async () => {
    // A second row for the same quote and transaction that got past the submit-time check (say, queued
    // by an older release): the claim in the confirming transaction is what stops it.
    const first = await priced();
    const tx = await payUsdc(first.amount('USDC-ETH'));
    const ok = await submit(first.id, { asset: 'USDC-ETH', txRef: tx }).expect(202);
    expect(await paymentSettled(ok.body.payment.id)).toMatchObject({ status: 'confirmed' });
    const quote = await db()('quotes').where({ job_id: first.id, asset: 'USDC-ETH' }).first();
    const paymentId = 'pay_01m7ycenb0y37det98dds34qjx';
    await db()('payments').insert({
      id: paymentId,
      job_id: first.id,
      quote_id: quote.id,
      asset: 'USDC-ETH',
      chain: 'eip155:1337',
      tx_ref: tx.toLowerCase(),
      status: 'pending',
    });
    await app.deps.queues.enqueue('payments', { paymentId });
    expect(await paymentSettled(paymentId)).toMatchObject({ status: 'rejected', reason: 'already_claimed' });
    expect(await db()('receipts').where({ job_id: first.id })).toHaveLength(1);
  });
});

describe('concurrent submissions', () => {
  it('refuses two submissions for other jobs that waited for the transfer while it was claimed', async () => {
    const [a, b, c] = await Promise.all([priced(1), priced(1), priced(1)]);
    const tx = unknownTx();
    const quote = await db()('quotes').where({ job_id: c.id, asset: 'USDC-ETH' }).first();
    // As the payments worker credits a transfer: under the transfer's lock, the claim is taken.
    const claiming = await db().transaction();
    await claiming.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`${quote.network}|${tx}`]);
    const paymentId = 'pay_01m7ycenb0y37det98dds34qjz';
    await claiming('payments').insert({
      id: paymentId,
      job_id: c.id,
      quote_id: quote.id,
      asset: 'USDC-ETH',
      chain: quote.network,
      tx_ref: tx,
      status: 'confirmed',
    });
    await claiming('payment_claims').insert({
      chain: quote.network,
      tx_ref: tx,
      output: 'tx',
      payment_id: paymentId,
    });
    const racing = [a, b].map((j) => submit(j.id, { asset: 'USDC-ETH', txRef: tx }).then((r) => r));
    await waitingForLocks(2, 'advisory');
    await claiming.commit();
    // Each sees the claim committed while it waited: neither records a payment.
    for (const r of await Promise.all(racing)) expectProblem(r, 409, 'payment_already_claimed');
    expect(await db()('payments').whereIn('job_id', [a.id, b.id])).toHaveLength(0);
  });

  it('answers submissions that waited while their transfer was recorded for their job with that payment', async () => {
    const job = await priced(1);
    const tx = await payUsdc(job.amount('USDC-ETH'));
    // Three wait for the job's lock, in turn; each is let in once the one before has finished, so the
    // first records the payment while the others wait. The third names another quote: the payment
    // recorded is still the answer, as it is to any submission of the same transaction for the job.
    const holding = await db().transaction();
    await holding('jobs').where({ id: job.id }).forUpdate().first();
    const bodies = [{}, {}, { reference: 'pay_01m7ycenb0y37det98dds34qjx' }];
    const racing = [];
    for (const [i, body] of bodies.entries()) {
      racing.push(submit(job.id, { asset: 'USDC-ETH', txRef: tx, ...body }).then((r) => r));
      await waitingForLocks(i + 1);
    }
    await holding.commit();
    const answers = await Promise.all(racing);
    expect(answers.map((r) => r.status)).toEqual([202, 202, 202]);
    expect(new Set(answers.map((r) => r.body.payment.id)).size).toBe(1);
    expect(await db()('payments').where({ job_id: job.id })).toHaveLength(1);
    expect(await paymentSettled(answers[0]!.body.payment.id)).toMatchObject({ status: 'confirmed' });
  });
});

describe("the job's webhook", () => {
  it('gets one delivery of a submission, and none of the same submission again', async () => {
    const url = 'http://127.0.0.1:9/hooks';
    const created = await app.request
      .post('/api/jobs')
      .send({
        service: 'attest.batch',
        input: { digests: [await sha256Of(`hook ${Math.random()}`)] },
        webhook: { url },
      })
      .expect(402);
    const id = created.body.job.id as string;
    tokens.set(id, created.body.accessToken);
    const tx = unknownTx();
    const first = await submit(id, { asset: 'ETH', txRef: tx }).expect(202);
    const again = await submit(id, { asset: 'ETH', txRef: tx }).expect(202);
    expect(again.body.payment.id).toBe(first.body.payment.id);
    const rows = await db()('logistics_requests').where({ job_id: id });
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row).toMatchObject({ method: 'webhook', target_url: url, status: 'queued' });
    expect(row.event).toEqual({
      event: 'payment.pending',
      jobId: id,
      occurredAt: first.body.payment.createdAt,
      payment: { ...first.body.payment, links: { job: row.job_url } },
      links: { job: row.job_url },
    });
    // A job without a webhook gets none.
    const plain = await priced(1);
    await submit(plain.id, { asset: 'ETH', txRef: unknownTx() }).expect(202);
    expect(await db()('logistics_requests').where({ job_id: plain.id })).toHaveLength(0);
  });
});

describe('bad input gets a 4xx problem and writes nothing', () => {
  it('refuses each bad submission', async () => {
    const { id } = await priced();
    const free = await app.request
      .post('/api/jobs')
      .send({ service: 'attest.timestamp', input: { digest: await sha256Of('free') } })
      .expect(202);
    tokens.set(free.body.job.id, free.body.accessToken);
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
      [() => submit(id, { asset: 'ETH', txRef: hash, payer: 'bc1qnotevm' }), 400, 'validation_failed'],
      [() => submit(id, { asset: 'ETH', txRef: hash, reference: 'not-a-ref' }), 400, 'validation_failed'],
      [
        () => submit(id, { asset: 'ETH', txRef: hash, reference: 'pay_01m7ycenb0y37det98dds34qjx' }),
        422,
        'unknown_reference',
      ],
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
