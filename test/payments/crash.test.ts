// A worker process killed with SIGKILL while it holds a group of payment checks loses nothing and
// doubles nothing: the next worker checks them again, and each payment is confirmed once, with one
// claim, one receipt and one move of its job to queued.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChain } from './ganache';
import { startRpcFront } from './rpc-front';
import type { TestApp } from '../helpers';
import type { Chain } from './ganache';
import type { RpcFront } from './rpc-front';
import { processArgs } from '../processes';

const chain: Chain = await startChain(1337);
// The node answers slowly at first, so the worker is surely holding checks when it is killed.
const front: RpcFront = await startRpcFront(chain.url);
const [payer, treasury] = chain.accounts as [string, string];
Object.assign(process.env, {
  EVM_RPC_URL: front.url,
  EVM_CONFIRMATIONS: '1',
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '10000',
  TREASURY_EVM: treasury,
  ASSETS_JSON: JSON.stringify({
    ETH: { network: 'eip155:1337' },
    'USDC-ETH': { disabled: true },
    'WBTC-ETH': { disabled: true },
  }),
  RATES_USD: 'ETH=2000',
  // Every job here comes from one address; the per-caller cap is tested in test/security/amounts.test.ts.
  AMOUNT_HOLDS_PER_CALLER: '1000',
});

const { eventually, sha256Of, testApp } = await import('../helpers');

let app: TestApp;
const children: ChildProcess[] = [];

function startWorkerProcess(): ChildProcess {
  const child = spawn(process.execPath, processArgs('worker'), {
    env: { ...process.env, SWEEP_INTERVAL_MS: '60000', WORKER_LOCK_DURATION_MS: '1500' },
    stdio: 'ignore',
  });
  children.push(child);
  return child;
}

beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await app?.close();
  await front.close();
  await chain.close();
});

const db = () => app.deps.db;

describe('SIGKILL while payments are being checked', () => {
  it('confirms every payment exactly once after the worker dies holding a group', async () => {
    const total = 24;
    const jobIds: string[] = [];
    const paymentIds: string[] = [];
    for (let i = 0; i < total; i++) {
      const input = { digests: [await sha256Of(`crash payment ${i} ${Math.random()}`)] };
      const res = await app.request.post('/api/jobs').send({ service: 'attest.batch', input }).expect(402);
      const wei = BigInt(res.body.payment.quotes.find((q: { asset: string }) => q.asset === 'ETH').amount);
      const tx = await chain.sendEth(payer, treasury, wei);
      const paid = await app.request
        .post(`/api/jobs/${res.body.job.id}/payment`)
        .set('Authorization', `Bearer ${res.body.accessToken}`)
        .send({ asset: 'ETH', txRef: tx })
        .expect(202);
      jobIds.push(res.body.job.id);
      paymentIds.push(paid.body.payment.id);
    }
    const count = async (status: string) =>
      Number((await db()('payments').whereIn('id', paymentIds).andWhere({ status }).count({ n: '*' }))[0]!.n);

    front.delayMs = 3000;
    const first = startWorkerProcess();
    const heldAtKill = await eventually(
      async () => {
        const held = await count('verifying');
        if (held > 0) {
          first.kill('SIGKILL');
          return held;
        }
        return false;
      },
      60_000,
      5,
    );
    await new Promise((r) => first.once('exit', r));
    expect(heldAtKill).toBeGreaterThan(0);
    const held = await db()('payments')
      .whereIn('id', paymentIds)
      .andWhere({ status: 'verifying' })
      .pluck('id');
    expect(held.length).toBeGreaterThan(0);
    expect(await count('confirmed')).toBe(0);

    front.delayMs = 0;
    startWorkerProcess();
    await eventually(async () => (await count('confirmed')) === total, 90_000, 100);

    // One claim, one receipt and one `queued` event each; the held ones were checked again.
    const perPayment = async (table: string) =>
      (await db()(table).whereIn('payment_id', paymentIds).pluck('payment_id')).sort();
    expect(await perPayment('payment_claims')).toEqual([...paymentIds].sort());
    expect(await perPayment('receipts')).toEqual([...paymentIds].sort());
    const queued = await db()('job_events')
      .whereIn('job_id', jobIds)
      .andWhere({ type: 'queued' })
      .select('job_id')
      .count({ n: '*' })
      .groupBy('job_id');
    expect(queued).toHaveLength(total);
    expect(queued.every((r) => Number(r.n) === 1)).toBe(true);
    const checks = await db()('payments').whereIn('id', held).pluck('checks');
    expect(checks.every((c: number) => c >= 2)).toBe(true);
  }, 180_000);
});
