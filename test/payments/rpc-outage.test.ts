// The EVM node goes away and comes back while a payment is being verified through the queue: the payment
// stays pending (never rejected), is checked again with a growing delay, and confirms once the node answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChain } from './ganache';
import { startProxy } from './proxy';
import type { TestApp, TestWorker } from '../helpers';
import type { Chain } from './ganache';
import type { Proxy } from './proxy';

// The node answers only through the proxy, which the test switches off and on.
const chain: Chain = await startChain(1337);
const proxy: Proxy = await startProxy(chain.url);
const [payer, treasury] = chain.accounts as [string, string];
const RECHECK_MS = 200;
const RECHECK_MAX_MS = 800;
const RPC_TIMEOUT_MS = 300;
Object.assign(process.env, {
  EVM_RPC_URL: proxy.url,
  EVM_CONFIRMATIONS: '1',
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: String(RPC_TIMEOUT_MS),
  TREASURY_EVM: treasury,
  ASSETS_JSON: JSON.stringify({
    ETH: { network: 'eip155:1337' },
    'USDC-ETH': { disabled: true },
    'WBTC-ETH': { disabled: true },
  }),
  RATES_USD: 'ETH=2000',
  PAYMENT_RECHECK_MS: String(RECHECK_MS),
  PAYMENT_RECHECK_MAX_MS: String(RECHECK_MAX_MS),
});

const { bearer, eventually, sha256Of, testApp, testJobsWorker, testQueueWorker, waitForJob } =
  await import('../helpers');
const { paymentsProcessor } = await import('../../workers/processors/payments');

// 50 cents at 2000 USD per ETH.

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
  await proxy.close();
  await chain.close();
});

interface Snapshot {
  status: string;
  reason: string | null;
  detail: string | null;
  checks: number;
  /** The wait the worker chose before the next check (next_check_at − updated_at, one statement). */
  waitMs: number | null;
}

/** Watches a payment row until `until` holds, recording each distinct check it went through. */
async function watch(paymentId: string, until: (s: Snapshot) => boolean, seen: Map<string, Snapshot>) {
  return eventually(
    async () => {
      const row = await app.deps.db('payments').where({ id: paymentId }).first();
      const s: Snapshot = {
        status: row.status,
        reason: row.reason,
        detail: row.detail,
        checks: row.checks,
        waitMs: row.next_check_at ? row.next_check_at.getTime() - row.updated_at.getTime() : null,
      };
      seen.set(`${s.status}/${s.checks}/${s.reason}`, s);
      return until(s) ? s : undefined;
    },
    15_000,
    10,
  );
}

const expectedWait = (checks: number) => Math.min(RECHECK_MS * 2 ** (checks - 1), RECHECK_MAX_MS);

describe('the EVM RPC goes down, then comes back', () => {
  it('keeps the payment pending with backoff while unreachable, and confirms it once the node answers', async () => {
    const input = { digests: [await sha256Of(`outage ${Math.random()}`)] };
    const created = await app.request.post('/api/jobs').send({ service: 'attest.batch', input }).expect(402);
    const jobId = created.body.job.id as string;
    const token = created.body.accessToken as string;
    // The job's own ETH amount: the price plus the offset that tells its quote from every other.
    const quoted = BigInt(
      created.body.payment.quotes.find((q: { asset: string }) => q.asset === 'ETH').amount,
    );
    // Mined and final on the node itself; only our view of it is cut.
    const tx = await chain.sendEth(payer, treasury, quoted);

    await proxy.set('refuse');
    const res = await app.request
      .post(`/api/jobs/${jobId}/payment`)
      .set(bearer(token))
      .send({ asset: 'ETH', txRef: tx, payer })
      .expect(202);
    const paymentId = res.body.payment.id as string;
    expect(res.body.payment.status).toBe('pending');

    const seen = new Map<string, Snapshot>();
    // Connections refused (the port is closed).
    const refused = await watch(paymentId, (s) => s.status === 'pending' && s.checks >= 3, seen);
    expect(refused.reason).toBe('rpc_unreachable');
    expect(refused.detail).toMatch(/could not be reached/);

    // The BullMQ job waits in the delayed set between checks; no attempt is spent on an outage.
    const queued = await app.deps.queues.get('payments').getJob(paymentId);
    expect(await queued!.getState()).toBe('delayed');
    expect(queued!.attemptsMade).toBe(0);

    const status = await app.request.get(`/api/jobs/${jobId}`).set(bearer(token)).expect(200);
    expect(status.body.job.status).toBe('awaiting_payment');
    expect(status.body.payment.payments[0]).toMatchObject({
      id: paymentId,
      status: 'pending',
      reason: 'rpc_unreachable',
    });
    expect(status.body.payment.payments[0].nextCheckAt).not.toBeNull();

    // Connections accepted but never answered: each check ends at the RPC timeout.
    await proxy.set('stall');
    const stalled = await watch(paymentId, (s) => s.status === 'pending' && s.checks >= 5, seen);
    expect(stalled.reason).toBe('rpc_unreachable');
    expect(stalled.detail).toMatch(new RegExp(`no answer within ${RPC_TIMEOUT_MS} ms`));

    await proxy.set('up');
    const settled = await watch(paymentId, (s) => !['pending', 'verifying'].includes(s.status), seen);
    expect(settled.status).toBe('confirmed');
    const row = await app.deps.db('payments').where({ id: paymentId }).first();
    expect(row).toMatchObject({ settlement: 'exact', amount_received: quoted.toString(), reason: null });
    expect(row.checks).toBeGreaterThanOrEqual(6);
    expect((await waitForJob(app.request, jobId, token)).status).toBe('succeeded');

    // While the node was away the row only ever went between pending and verifying.
    const states = [...seen.values()];
    for (const s of states.filter((s) => s.status !== 'confirmed'))
      expect(['pending', 'verifying']).toContain(s.status);
    // Each wait doubled from PAYMENT_RECHECK_MS up to PAYMENT_RECHECK_MAX_MS (a slow statement can only
    // shorten the measured wait, never lengthen it).
    const waits = states.filter((s) => s.status === 'pending' && s.waitMs !== null);
    expect(new Set(waits.map((s) => s.checks)).size).toBeGreaterThanOrEqual(4);
    for (const s of waits) {
      expect(s.waitMs!).toBeLessThanOrEqual(expectedWait(s.checks) + 20);
      expect(s.waitMs!).toBeGreaterThan(expectedWait(s.checks) / 2);
    }
  });
});
