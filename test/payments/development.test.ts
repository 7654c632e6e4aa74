// Development money stays development money: a payment settled on npm start's chain (EVM_DEVNET) is
// marked at settlement, receipted like any other, and never summed as revenue nor listed as a treasury
// inflow; the migration marks older rows by network; and a production process refuses to start on a
// database holding some, unless ALLOW_DEVELOPMENT_SETTLEMENTS=true.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPaidChain, testPaymentsWorker } from '../exchange/paid';
import type { TestApp, TestWorker } from '../helpers';

// The node first, and the env as npm start gives its processes: the chain is the development chain.
const { chain, payer, usdc } = await startPaidChain();
process.env.EVM_DEVNET = 'true';

const { sha256Of, testApp, testJobsWorker, waitForJob } = await import('../helpers');
const { registerAgent } = await import('../exchange/fixtures');
const { newId } = await import('../../shared/platform/ids');
const { developmentSettlementIssues } = await import('../../shared/payments/development');
const migration = await import('../../migrations/20261126200100_development_settlements');

const SOLANA = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';
const OPERATOR = { Authorization: 'Bearer op_test_token_0123456789' };

let app: TestApp;
let jobsWorker: TestWorker;
let payments: TestWorker;
let demoJob: string;

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

/** A confirmed payment on Solana mainnet with its receipt row, as the engine writes one (real money). */
async function mainnetPayment(jobId: string) {
  const db = app.deps.db;
  const quoteId = newId('pay').replace('pay_', 'q_');
  await db('quotes').insert({
    id: quoteId,
    job_id: jobId,
    asset: 'USDC-SOL',
    network: SOLANA,
    amount: '3000000',
    decimals: 6,
    pay_to: 'treasury',
    usd_cents: 300,
    expires_at: new Date(),
  });
  const paymentId = newId('pay');
  await db('payments').insert({
    id: paymentId,
    job_id: jobId,
    quote_id: quoteId,
    asset: 'USDC-SOL',
    chain: SOLANA,
    tx_ref: `sig-${paymentId}`,
    status: 'confirmed',
    settlement: 'exact',
    amount_received: '3000000',
    settled_at: new Date(),
  });
  const receipt = {
    asset: 'USDC-SOL',
    network: SOLANA,
    amount: '3000000',
    decimals: 6,
    usdCents: '300',
    serviceId: 'attest.batch',
    payTo: 'treasury',
  };
  await db('receipts').insert({
    id: newId('rcpt'),
    payment_id: paymentId,
    job_id: jobId,
    document: JSON.stringify(receipt),
    issued_at: new Date(),
  });
}

const revenue = async () => (await app.request.get('/api/revenue').set(OPERATOR).expect(200)).body;

describe('a payment settled on the development chain', () => {
  it('is marked at settlement, receipted, and counted as no revenue and no inflow', async () => {
    const buyer = await registerAgent(app, { name: 'Demo buyer' });
    const created = (
      await app.request
        .post('/api/jobs')
        .set(buyer.auth)
        .send({ service: 'attest.batch', input: { digests: [await sha256Of('demo')] } })
        .expect(402)
    ).body;
    demoJob = created.job.id;
    const quote = created.payment.quotes.find((q: { asset: string }) => q.asset === 'USDC-ETH');
    const tx = await chain.transferToken(usdc, payer, quote.payTo, BigInt(quote.amount));
    await chain.mine(1);
    await app.request
      .post(`/api/jobs/${demoJob}/payment`)
      .set(buyer.auth)
      .send({ asset: 'USDC-ETH', txRef: tx, payer })
      .expect(202);
    expect((await waitForJob(app.request, demoJob, buyer.apiKey)).status).toBe('succeeded');

    const row = await app.deps.db('payments').where('job_id', demoJob).first();
    expect(row).toMatchObject({ status: 'confirmed', chain: 'eip155:1337', development: true });
    expect(await app.deps.db('receipts').where('payment_id', row.id).first()).toBeTruthy();
    expect((await revenue()).totals).toEqual({ receipts: 0, usdCents: '0' });

    // Real money beside it is summed, and alone.
    await mainnetPayment(demoJob);
    const summary = await revenue();
    expect(summary.totals).toEqual({ receipts: 1, usdCents: '300' });
    expect(summary.byAsset.map((a: { asset: string }) => a.asset)).toEqual(['USDC-SOL']);
    const treasury = (await app.request.get('/api/treasury/status').set(OPERATOR).expect(200)).body;
    expect(treasury.recentInflows.map((i: { network: string }) => i.network)).toEqual([SOLANA]);
  }, 60_000);

  it('the migration marks settlements made before it by their network', async () => {
    const db = app.deps.db;
    await migration.down(db);
    await migration.up(db);
    const marks = await db('payments')
      .where('job_id', demoJob)
      .orderBy('chain')
      .select('chain', 'development');
    expect(marks).toEqual([
      { chain: 'eip155:1337', development: true },
      { chain: SOLANA, development: false },
    ]);
  });

  it('refuses a production start on the database unless ALLOW_DEVELOPMENT_SETTLEMENTS=true', async () => {
    expect(await developmentSettlementIssues(app.deps.db, { ALLOW_DEVELOPMENT_SETTLEMENTS: true })).toEqual(
      [],
    );
    const [line] = await developmentSettlementIssues(app.deps.db, { ALLOW_DEVELOPMENT_SETTLEMENTS: false });
    expect(line).toMatch(/^the database holds 1 payment\(s\) settled on a development chain \(eip155:1337\)/);
    expect(line).toContain('ALLOW_DEVELOPMENT_SETTLEMENTS=true');

    // The real processes, in production with every key given, refuse it before they listen or work:
    // web, worker and prover at start (exit 1), release after migrating (exit 78).
    const entries = {
      web: ['api/main.ts', 'web listening'],
      worker: ['workers/main.ts', 'worker started'],
      prover: ['workers/prover/main.ts', 'prover started'],
      release: ['workers/release.ts', 'schema is up to date'],
    } as const;
    const runs = await Promise.all(
      Object.entries(entries).map(async ([kind, [entry, started]]) => {
        const child = spawn(process.execPath, ['--import', 'tsx', entry], {
          env: {
            ...process.env,
            VITEST: '',
            NODE_ENV: 'production',
            EVM_DEVNET: '',
            BASE_URL: 'https://exchange.example',
            HOST: '127.0.0.1',
            PORT: '0',
            LOG_LEVEL: 'info',
            SERVICE_SIGNING_KEY: '7'.repeat(64),
            LOG_SIGNING_KEY: '8'.repeat(64),
            OPERATOR_TOKEN: 'op_production_token_0123456789',
            ALLOW_INSECURE_CIRCUITS: 'true',
            PROVER_BACKEND: 'snarkjs',
            PROVER_CONCURRENCY: '1',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const out: string[] = [];
        const err: string[] = [];
        child.stdout.on('data', (d: Buffer) => out.push(d.toString()));
        child.stderr.on('data', (d: Buffer) => err.push(d.toString()));
        const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
        const code = await new Promise((resolve) => child.once('exit', resolve));
        clearTimeout(timer);
        return { kind, started, code, stdout: out.join(''), stderr: err.join('') };
      }),
    );
    for (const run of runs) {
      const verb = run.kind === 'release' ? 'release' : 'start';
      expect(run.code, run.kind).toBe(run.kind === 'release' ? 78 : 1);
      expect(run.stderr.trimEnd().split('\n'), run.kind).toEqual([
        expect.stringMatching(
          new RegExp(
            `^Refusing to ${verb} in production: the database holds 1 payment\\(s\\) settled on a development chain \\(eip155:1337\\).*ALLOW_DEVELOPMENT_SETTLEMENTS=true`,
          ),
        ),
      ]);
      if (run.kind !== 'release') expect(run.stdout, run.kind).not.toContain(run.started);
    }
  }, 120_000);
});
