// Payments checked together, as the `payments` worker groups them: one JSON-RPC batch to a real node
// (ganache, behind a recording front) and shared SQL statements for the whole group, with each
// payment's verdict exactly what a check alone gives it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChain } from './ganache';
import { startRpcFront } from './rpc-front';
import type { Db } from '../../shared/platform/db/knex';
import type { TestApp } from '../helpers';
import type { Chain } from './ganache';
import type { RpcFront } from './rpc-front';

const chain: Chain = await startChain(1337);
const front: RpcFront = await startRpcFront(chain.url);
// `broke` never holds the token, so its transfers revert.
const [payer, treasury, stranger, broke] = chain.accounts as [string, string, string, string];
const usdc = await chain.deployToken(6, 10n ** 15n);
Object.assign(process.env, {
  EVM_RPC_URL: front.url,
  EVM_CONFIRMATIONS: '3',
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '5000',
  TREASURY_EVM: treasury,
  ASSETS_JSON: JSON.stringify({
    ETH: { network: 'eip155:1337' },
    'USDC-ETH': { network: 'eip155:1337', contract: usdc },
    'WBTC-ETH': { disabled: true },
  }),
  RATES_USD: 'ETH=2000',
  PAYMENT_RECHECK_MS: '100',
  PAYMENT_RECHECK_MAX_MS: '300',
});

const { sha256Of, testApp } = await import('../helpers');
const { createDb } = await import('../../shared/platform/db/knex');
const { paymentChecker } = await import('../../shared/payments/check');

let app: TestApp;
let db: Db;
let statements: string[] = [];

beforeAll(() => {
  app = testApp();
  // The checker's own pool, so every statement it sends is counted.
  db = createDb();
  db.on('query', (q: { sql: string }) => statements.push(q.sql));
});
afterAll(async () => {
  await db?.destroy();
  await app?.close();
  await front.close();
  await chain.close();
});

const checker = () => paymentChecker(db, () => app.deps.queues);

async function priced() {
  const input = { digests: [await sha256Of(`group ${Math.random()}`)] };
  const res = await app.request.post('/api/jobs').send({ service: 'attest.batch', input }).expect(402);
  const quotes = res.body.payment.quotes as Array<{ asset: string; amount: string }>;
  tokens.set(res.body.job.id, res.body.accessToken);
  return {
    id: res.body.job.id as string,
    amount: (asset: 'ETH' | 'USDC-ETH') => BigInt(quotes.find((q) => q.asset === asset)!.amount),
  };
}

/** Each job's access token: submitPayment opens a job to it. */
const tokens = new Map<string, string>();

async function submit(jobId: string, asset: string, txRef: string): Promise<string> {
  const res = await app.request
    .post(`/api/jobs/${jobId}/payment`)
    .set('Authorization', `Bearer ${tokens.get(jobId)}`)
    .send({ asset, txRef })
    .expect(202);
  return res.body.payment.id as string;
}

const row = (id: string) => app.deps.db('payments').where({ id }).first();

/** Four payments: confirmed, reverted and to the wrong recipient final; the last one block deep. */
async function mixedGroup() {
  const [confirmed, reverted, wrongRecipient, pending] = await Promise.all([
    priced(),
    priced(),
    priced(),
    priced(),
  ]);
  const txConfirmed = await chain.sendEth(payer, treasury, confirmed!.amount('ETH'));
  const txReverted = await chain.transferToken(usdc, broke, treasury, reverted!.amount('USDC-ETH'));
  const txWrong = await chain.sendEth(payer, stranger, wrongRecipient!.amount('ETH'));
  await chain.mine(2);
  const txPending = await chain.transferToken(usdc, payer, treasury, pending!.amount('USDC-ETH'));
  return {
    jobs: { confirmed: confirmed!, reverted: reverted!, wrongRecipient: wrongRecipient!, pending: pending! },
    payments: {
      confirmed: await submit(confirmed!.id, 'ETH', txConfirmed),
      reverted: await submit(reverted!.id, 'USDC-ETH', txReverted),
      wrongRecipient: await submit(wrongRecipient!.id, 'ETH', txWrong),
      pending: await submit(pending!.id, 'USDC-ETH', txPending),
    },
  };
}

describe('payments checked as one group', () => {
  it('gives each payment of a mixed group its own verdict, from one round trip to the node and shared statements', async () => {
    const { jobs, payments } = await mixedGroup();
    const check = checker();
    front.seen.length = 0;
    statements = [];
    const ids = [payments.confirmed, payments.reverted, payments.wrongRecipient, payments.pending];
    const [confirmed, reverted, wrongRecipient, pending] = await Promise.all(
      ids.map((id) => check.check(id)),
    );

    expect(confirmed).toMatchObject({
      outcome: 'settled',
      status: 'confirmed',
      settlement: 'exact',
      jobQueued: true,
    });
    expect(reverted).toEqual({ outcome: 'settled', status: 'rejected', jobQueued: false });
    expect(wrongRecipient).toEqual({ outcome: 'settled', status: 'rejected', jobQueued: false });
    expect(pending).toMatchObject({ outcome: 'recheck', reason: 'too_few_confirmations' });

    expect(await row(payments.confirmed)).toMatchObject({
      status: 'confirmed',
      amount_received: jobs.confirmed.amount('ETH').toString(),
      output: 'value',
      checks: 1,
    });
    expect(await row(payments.reverted)).toMatchObject({ status: 'rejected', reason: 'reverted' });
    expect(await row(payments.wrongRecipient)).toMatchObject({
      status: 'rejected',
      reason: 'wrong_recipient',
    });
    expect(await row(payments.pending)).toMatchObject({
      status: 'pending',
      reason: 'too_few_confirmations',
      confirmations: 1,
      amount_received: jobs.pending.amount('USDC-ETH').toString(),
    });
    // Only the confirmed payment took a claim, issued a receipt and moved its job.
    const receipts = await app.deps.db('receipts').whereIn('payment_id', ids);
    expect(receipts.map((r: { payment_id: string }) => r.payment_id)).toEqual([payments.confirmed]);
    expect(await app.deps.db('payment_claims').whereIn('payment_id', ids).pluck('payment_id')).toEqual([
      payments.confirmed,
    ]);
    const jobStatus = async (id: string) => (await app.deps.db('jobs').where({ id }).first()).status;
    expect(await jobStatus(jobs.confirmed.id)).toBe('queued');
    for (const j of [jobs.reverted, jobs.wrongRecipient, jobs.pending])
      expect(await jobStatus(j.id)).toBe('awaiting_payment');

    // One batch for the head, transactions and receipts, one for the new blocks' times; a check alone
    // takes two requests, so four alone would have taken eight.
    expect(front.seen.map((s) => s.batch)).toEqual([true, true]);
    expect(front.seen[0]!.methods).toHaveLength(1 + 2 * 4);
    // The claim and quotes (2), the verdicts in one transaction (8), the recheck (1): a check alone
    // sends about twelve.
    expect(statements.length).toBeLessThanOrEqual(11);

    // Two blocks later the pending payment confirms on its own check.
    await chain.mine(2);
    expect(await check.check(payments.pending)).toMatchObject({ outcome: 'settled', status: 'confirmed' });
    expect(await row(payments.pending)).toMatchObject({ status: 'confirmed', checks: 2 });
  });

  it('leaves only the payment whose call failed pending; the rest of the group settles', async () => {
    const [a, b] = await Promise.all([priced(), priced()]);
    const txA = await chain.sendEth(payer, treasury, a!.amount('ETH'));
    const txB = await chain.sendEth(payer, treasury, b!.amount('ETH'));
    await chain.mine(2);
    const pa = await submit(a!.id, 'ETH', txA);
    const pb = await submit(b!.id, 'ETH', txB);
    front.fail('eth_getTransactionReceipt', txB, { code: -32000, message: 'header not found' });
    try {
      const check = checker();
      const [ra, rb] = await Promise.all([check.check(pa), check.check(pb)]);
      expect(ra).toMatchObject({ outcome: 'settled', status: 'confirmed' });
      expect(rb).toMatchObject({ outcome: 'recheck', reason: 'rpc_error' });
      expect(await row(pb)).toMatchObject({ status: 'pending', reason: 'rpc_error' });
    } finally {
      front.clearFaults();
    }
    expect(await checker().check(pb)).toMatchObject({ outcome: 'settled', status: 'confirmed' });
  });

  it('checks a payment taken twice in one group once: one verdict, one claim, one receipt', async () => {
    const job = await priced();
    const tx = await chain.sendEth(payer, treasury, job.amount('ETH'));
    await chain.mine(2);
    const id = await submit(job.id, 'ETH', tx);
    const check = checker();
    const outcomes = await Promise.all([check.check(id), check.check(id), check.check(id)]);
    expect(outcomes.filter((o) => o.outcome === 'settled')).toHaveLength(1);
    expect(outcomes.filter((o) => o.outcome === 'skipped')).toHaveLength(2);
    expect(await row(id)).toMatchObject({ status: 'confirmed', checks: 1 });
    const receipts = await app.deps.db('receipts').where({ payment_id: id });
    expect(receipts).toHaveLength(1);
    // The receipt's digest is queued for the log once, in the statement that issued it, named by the
    // sha256 of its id (the id opens the receipt; the log is public).
    const { receiptEntry, receiptLogId } = await import('../../shared/payments/receipts');
    const { parseLogEntry } = await import('../../shared/platform/translog/entry');
    const { sha256Hex } = await import('../../shared/platform/crypto');
    const { canonicalJson } = await import('../../shared/platform/canonical');
    const logged = receiptEntry(receipts[0].document);
    const queued = await app.deps.db('translog_queue').where({ key: logged.key });
    expect(queued).toHaveLength(1);
    expect(queued[0].entry.equals(logged.entry)).toBe(true);
    expect(parseLogEntry(queued[0].entry)).toMatchObject({
      kind: 'receipt',
      id: receiptLogId(receipts[0].id),
      sha256: sha256Hex(canonicalJson(receipts[0].document)),
    });
    expect(queued[0].entry.toString()).not.toContain(receipts[0].id);
    // Checked again later (a redelivery), a settled payment is left as it is.
    expect(await check.check(id)).toEqual({ outcome: 'skipped' });
    expect(await app.deps.db('job_events').where({ job_id: job.id, type: 'queued' })).toHaveLength(1);
  });

  // Last: the adapter remembers a refusal for ten minutes.
  it('gives the same verdicts through a node that refuses batches, one call per request', async () => {
    front.refuseBatches = 'object-400';
    const { payments } = await mixedGroup();
    front.seen.length = 0;
    const check = checker();
    const ids = [payments.confirmed, payments.reverted, payments.wrongRecipient, payments.pending];
    const outcomes = await Promise.all(ids.map((id) => check.check(id)));
    expect(outcomes.map((o) => ('status' in o ? o.status : o.outcome))).toEqual([
      'confirmed',
      'rejected',
      'rejected',
      'recheck',
    ]);
    expect((await row(payments.reverted)).reason).toBe('reverted');
    expect((await row(payments.wrongRecipient)).reason).toBe('wrong_recipient');
    expect(front.seen[0]!.batch).toBe(true); // refused
    expect(front.seen.slice(1).every((s) => !s.batch && s.methods.length === 1)).toBe(true);
  });
});
