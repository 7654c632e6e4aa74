// No one can make a price unpayable by holding its unique amounts: a payment-gate flood from any number
// of networks takes at most the gate's share of an asset, callers without a paid license at most the
// public's share of a price's range (paid licenses keep the rest), one caller (a network with its
// anonymous requests and the agents it registered, a license) at most its cap of open amounts, and a
// refusal writes nothing. Holds end when their quote is paid or its watch window is over.
//
// Small settings keep it fast: USDC-ETH alone, a spread of 20 amounts per price; the gate may hold 5 of
// them (25 %), the public 10 (50 %); a caller 3, a paid license 6.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Response } from 'supertest';
import type { TestApp, TestWorker } from '../helpers';
import { startChain } from '../payments/ganache';
import type { Chain } from '../payments/ganache';

const chain: Chain = await startChain(1337);
const [payer, treasury] = chain.accounts as [string, string];
const usdc = await chain.deployToken(6, 10n ** 15n);
const SPREAD = 20;
Object.assign(process.env, {
  EVM_RPC_URL: chain.url,
  EVM_CONFIRMATIONS: '1',
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '2000',
  TREASURY_EVM: treasury,
  ASSETS_JSON: JSON.stringify({
    'USDC-ETH': { network: 'eip155:1337', contract: usdc, amountSpread: SPREAD },
    ETH: { disabled: true },
    'WBTC-ETH': { disabled: true },
  }),
  PAYMENT_GATE_SPREAD: String(SPREAD),
  AMOUNT_HOLDS_PER_CALLER: '3',
  AMOUNT_HOLDS_PER_LICENSE: '6',
  AMOUNT_PUBLIC_SHARE: '0.5',
  AMOUNT_GATE_SHARE: '0.25',
  PAYMENT_RECHECK_MS: '100',
  PAYMENT_RECHECK_MAX_MS: '300',
});

const { behindProxy, eventually, grantLicense, sha256Of, testApp, testQueueWorker } =
  await import('../helpers');
const { expectProblem, newWallet } = await import('../exchange/fixtures');
const { paymentsProcessor } = await import('../../workers/processors/payments');
const { expireUnpaidJobs } = await import('../../shared/payments/expiry');
const { env } = await import('../../shared/platform/env');

// attest.batch costs 50 cents: 500000 base units of USDC, quoted as 500001..500020.
const PRICE = 500_000n;
let app: TestApp;
let proxied: ReturnType<typeof behindProxy>;
let payments: TestWorker;

beforeAll(() => {
  app = testApp();
  proxied = behindProxy(app);
  payments = testQueueWorker('payments', (db) => paymentsProcessor(db, app.deps.queues));
});
afterAll(async () => {
  await payments?.close();
  await app?.close();
  await chain.close();
});
// Each test starts from a free range: every hold's window is made to be over, and the sweep frees it.
afterEach(async () => {
  await db()('payment_amounts').update({ open_until: new Date(Date.now() - 1000) });
  await db()('payment_gate_requests').where({ status: 'open' }).update({ expires_at: new Date() });
  await expireUnpaidJobs(db());
  expect(await count('payment_amounts')).toBe(0);
});

const db = () => app.deps.db;
const count = async (table: string, where: Record<string, unknown> = {}) =>
  Number((await db()(table).where(where).count({ n: '*' }))[0]!.n);
const written = async () =>
  Object.fromEntries(
    await Promise.all(
      ['jobs', 'quotes', 'job_events', 'payment_amounts', 'payment_gate_requests', 'checkouts'].map(
        async (t) => [t, await count(t)] as const,
      ),
    ),
  );

let seq = 0;
/** A fresh client network: an IPv4 address of the documentation ranges. */
const network = () => `198.51.100.${++seq}`;

async function createJob(from: string, auth?: { Authorization: string }) {
  const req = proxied.post('/api/jobs').set('X-Forwarded-For', from);
  if (auth) req.set(auth);
  return req.send({ service: 'attest.batch', input: { digests: [await sha256Of(`${Math.random()}`)] } });
}
function gate(from: string, auth?: { Authorization: string }) {
  const req = proxied.post('/api/v1/payment-gate/random/prepare').set('X-Forwarded-For', from);
  if (auth) req.set(auth);
  return req.send({ asset: 'USDC-ETH', baseAmount: PRICE.toString() });
}
const checkout = (from: string) =>
  proxied
    .post('/api/v1/commercial/checkout/prepare')
    .set('X-Forwarded-For', from)
    .send({ license: 'Starter', asset: 'USDC-ETH', organization: 'Flood Ltd', email: 'f@example.test' });

/** The job's USDC-ETH amount, checked to lie in the price's range. */
function quotedAmount(res: Response): bigint {
  expect(res.status, JSON.stringify(res.body)).toBe(402);
  const quotes = (res.body as { payment: { quotes: Array<{ asset: string; amount: string }> } }).payment
    .quotes;
  const amount = BigInt(quotes.find((q) => q.asset === 'USDC-ETH')!.amount);
  expect(amount > PRICE && amount <= PRICE + BigInt(SPREAD)).toBe(true);
  return amount;
}

function expectTooMany(res: Response) {
  expectProblem(res, 429, 'too_many_open_quotes');
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  expect(res.body).toMatchObject({ asset: 'USDC-ETH' });
}

describe('a flood from many networks', () => {
  it('takes at most the gate’s share with gate requests: the price stays quotable', async () => {
    // Twelve networks, each within its own cap (3), try to hold every amount of the 50-cent range:
    // without the gate's share, 36 requests would take all 20 amounts.
    const statuses: number[] = [];
    for (let n = 0; n < 12; n++) {
      const from = network();
      for (let i = 0; i < 3; i++) statuses.push((await gate(from)).status);
    }
    expect(statuses.filter((s) => s === 201)).toHaveLength(5);
    expect(statuses.filter((s) => s === 503)).toHaveLength(31);
    expect(await count('payment_gate_requests', { status: 'open' })).toBe(5);
    const refused = await gate(network());
    expectProblem(refused, 503, 'gate_amounts_exhausted');

    // The job price is still quoted at its own unique amount, to anyone.
    quotedAmount(await createJob(network()));
    // A paid license's gate requests spend the licenses' room, not the gate's: still served.
    const license = await grantLicense(db(), 'Starter');
    expect((await gate(network(), license.auth)).status).toBe(201);
  });

  it('takes at most the public’s share of a price with job quotes and checkouts: a paid license is still quoted', async () => {
    // The gate flood again, and then anonymous networks: each within its cap, together they fill the
    // public's half of the range (10 amounts) and no more.
    for (let n = 0; n < 3; n++) {
      const from = network();
      for (let i = 0; i < 2; i++) await gate(from);
    }
    const statuses: number[] = [];
    for (let n = 0; n < 5; n++) {
      const from = network();
      for (let i = 0; i < 3; i++) statuses.push((await createJob(from)).status);
    }
    expect(statuses.filter((s) => s === 402)).toHaveLength(10);
    expect(statuses.filter((s) => s === 503)).toHaveLength(5);
    const before = await written();
    const full = await createJob(network());
    expectProblem(full, 503, 'payments_unavailable');
    expect(full.body.unavailable).toContainEqual(
      expect.objectContaining({ asset: 'USDC-ETH', reason: 'amounts_exhausted' }),
    );
    expect(await written()).toEqual(before);

    // A paid license still finds the rest free: 20 − 5 gate − 10 public.
    const license = await grantLicense(db(), 'Starter');
    const amounts = new Set<bigint>();
    for (let i = 0; i < 5; i++) amounts.add(quotedAmount(await createJob(network(), license.auth)));
    expect(amounts.size).toBe(5);
    // Only now is every amount held (an attacker would need paid licenses to get here).
    expect(await count('payment_amounts')).toBe(SPREAD);
    expectProblem(await createJob(network(), license.auth), 503, 'payments_unavailable');
  });
});

describe('one caller', () => {
  it('holds at most its cap from one network, with jobs, gate requests and checkouts alike; a refusal writes nothing', async () => {
    const from = network();
    const first = await createJob(from);
    quotedAmount(first);
    for (let i = 0; i < 2; i++) quotedAmount(await createJob(from));
    const before = await written();
    expectTooMany(await createJob(from));
    expectTooMany(await gate(from));
    expectTooMany(await checkout(from));
    expect(await written()).toEqual(before);
    // The refusal names when the first hold ends: the quote's watch window.
    const res = await createJob(from);
    const firstEnds = new Date(res.body.releasedAt).getTime();
    const quote = await db()('quotes').where({ job_id: first.body.job.id }).first();
    expect(firstEnds).toBe(new Date(quote.expires_at).getTime() + env.QUOTE_LATE_WINDOW_SECONDS * 1000);
    // Another network is not held back by this one.
    quotedAmount(await createJob(network()));
  });

  it('cannot pass its cap with concurrent requests', async () => {
    const from = network();
    const before = await count('jobs');
    const answers = await Promise.all(Array.from({ length: 6 }, () => createJob(from)));
    expect(answers.map((a) => a.status).sort()).toEqual([402, 402, 402, 429, 429, 429]);
    expect(await count('jobs')).toBe(before + 3);
    expect(await count('payment_amounts')).toBe(3);
  });

  it('gets no more holds from eight agents registered on one network (any address of its /64)', async () => {
    const agents: Array<{ Authorization: string }> = [];
    for (let i = 1; i <= 8; i++) {
      const res = await proxied
        .post('/api/registry/register')
        .set('X-Forwarded-For', `2001:db8:aa:1::${i}`)
        .send({ name: `minted ${i}`, walletPublicKey: newWallet().publicKey })
        .expect(201);
      agents.push({ Authorization: `Bearer ${res.body.apiKey}` });
    }
    const before = await count('jobs');
    const statuses: number[] = [];
    // Each agent asks from an address of its own: the budget is the network that registered it.
    for (const [i, auth] of agents.entries())
      statuses.push((await createJob(`203.0.113.${i + 1}`, auth)).status);
    expect(statuses.filter((s) => s === 402)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
    expect(await count('jobs')).toBe(before + 3);
    // The network's anonymous requests share the same budget.
    expectTooMany(await createJob('2001:db8:aa:1::ffff'));
  });

  it('holds up to a paid license’s own cap; a TRIAL license counts as the network it calls from', async () => {
    const license = await grantLicense(db(), 'Starter');
    for (let i = 0; i < 6; i++) quotedAmount(await createJob(network(), license.auth));
    const before = await written();
    expectTooMany(await createJob(network(), license.auth));
    expectTooMany(await gate(network(), license.auth));
    expect(await written()).toEqual(before);

    // Trials are free to claim: each adds nothing to the network's holds.
    const from = network();
    const trials = [await grantLicense(db(), 'TRIAL'), await grantLicense(db(), 'TRIAL')];
    for (let i = 0; i < 3; i++) quotedAmount(await createJob(from, trials[i % 2]!.auth));
    expectTooMany(await createJob(from, trials[0]!.auth));
    expectTooMany(await createJob(from, trials[1]!.auth));
    expectTooMany(await createJob(from));
  });
});

describe('a hold ends', () => {
  it('when its quote is paid, and when its watch window is over', async () => {
    const from = network();
    const jobs: Array<{ id: string; token: string; amount: bigint }> = [];
    for (let i = 0; i < 3; i++) {
      const res = await createJob(from);
      jobs.push({
        id: res.body.job.id as string,
        token: res.body.accessToken as string,
        amount: quotedAmount(res),
      });
    }
    expectTooMany(await createJob(from));
    // A hold lasts the quote's watch window, a gate request's its window: as the docs say.
    const [hold] = await db()('payment_amounts')
      .join('quotes', 'quotes.id', 'payment_amounts.owner')
      .where('quotes.job_id', jobs[0]!.id)
      .select('payment_amounts.open_until', 'quotes.expires_at');
    expect(new Date(hold.open_until).getTime()).toBe(
      new Date(hold.expires_at).getTime() + env.QUOTE_LATE_WINDOW_SECONDS * 1000,
    );
    const request = (await gate(network())).body.request;
    const gateHold = await db()('payment_amounts').where({ owner: request.id }).first();
    expect(new Date(gateHold.open_until).toISOString()).toBe(request.expiresAt);

    // Paid: the payment's confirmation frees the amount, and the caller may hold another.
    const hash = await chain.transferToken(usdc, payer, treasury, jobs[0]!.amount);
    await chain.mine(1);
    await proxied
      .post(`/api/jobs/${jobs[0]!.id}/payment`)
      .set('X-Forwarded-For', from)
      .set('Authorization', `Bearer ${jobs[0]!.token}`)
      .send({ asset: 'USDC-ETH', txRef: hash })
      .expect(202);
    await eventually(async () => (await db()('jobs').where({ id: jobs[0]!.id }).first()).status === 'queued');
    quotedAmount(await createJob(from));
    expectTooMany(await createJob(from));

    // Expired: once the watch window is over, the sweep frees the amounts.
    const held = await db()('payment_amounts').whereIn(
      'owner',
      db()('quotes').whereIn('job_id', [jobs[1]!.id, jobs[2]!.id]).select('id'),
    );
    expect(held).toHaveLength(2);
    await db()('payment_amounts')
      .whereIn(
        'id',
        held.map((h: { id: string }) => h.id),
      )
      .update({ open_until: new Date(Date.now() - 1000) });
    await expireUnpaidJobs(db());
    expect(await count('payment_amounts', { holder: held[0].holder })).toBe(1);
    quotedAmount(await createJob(from));
    quotedAmount(await createJob(from));
    expectTooMany(await createJob(from));
  });
});
