// Licenses grant product lines and quotas, never free exchange jobs: a TRIAL (claimed with a wallet
// signature over a one-time challenge, once per wallet and per normalized organization, a few per
// address a day) gets priced jobs quoted like anyone; a tier's prepaid credit pays a job only in the
// transaction that creates it, and never below zero.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers';

// One enabled asset (a stablecoin: no rate needed), so priced jobs can be quoted.
process.env.TREASURY_SOLANA = 'So11111111111111111111111111111111111111112';

const { behindProxy, grantLicense, sha256Of, testApp } = await import('../helpers');
const { expectProblem, newWallet } = await import('../exchange/fixtures');
const { trialProof } = await import('../licensing/helpers');

let app: TestApp;
let proxied: ReturnType<typeof behindProxy>;
beforeAll(() => {
  app = testApp();
  proxied = behindProxy(app);
});
afterAll(() => app.close());

const count = async (table: string) => Number((await app.deps.db(table).count({ n: '*' }))[0]!.n);
let addressSeq = 0;
const newAddress = () => `203.0.113.${++addressSeq}`;

async function claimTrial(organization: string, from: string, wallet = newWallet()) {
  const proof = await trialProof(app.request, wallet);
  return proxied
    .post('/api/v1/commercial/checkout/prepare')
    .set('X-Forwarded-For', from)
    .send({ license: 'TRIAL', organization, email: 'trial@example.test', ...proof });
}

const pricedJob = async (auth: { Authorization: string }) =>
  app.request
    .post('/api/jobs')
    .set(auth)
    .send({ service: 'attest.batch', input: { digests: [await sha256Of(String(Math.random()))] } });

describe('TRIAL', () => {
  it('gets a priced job quoted, not free', async () => {
    const res = await claimTrial('Trial Corp', newAddress());
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const token = res.body.checkout.license.token as string;
    const job = await pricedJob({ Authorization: `Bearer ${token}` });
    expect([202, 402]).toContain(job.status);
    expect(job.body.job).toMatchObject({ status: 'awaiting_payment', price: { usdCents: 50 } });
    expect(job.body.payment.required).toBe(true);
    expect(job.body.payment.quotes.length).toBeGreaterThan(0);
    expect(await count('license_credit_debits')).toBe(0);
    expect((await app.deps.db('jobs').where({ id: job.body.job.id }).first()).status).toBe(
      'awaiting_payment',
    );
  });

  it('is refused a second time per wallet and per normalized organization, and per address a day', async () => {
    const from = newAddress();
    const wallet = newWallet();
    expect((await claimTrial('Acmé Corp', from, wallet)).status).toBe(201);
    const [checkouts, licenses] = [await count('checkouts'), await count('licenses')];
    // The same wallet, another name; another wallet, the same organization spelled otherwise.
    expectProblem(await claimTrial('Completely Different Ltd', from, wallet), 409, 'trial_already_used');
    for (const name of ['ACME corp.', 'acme', ' A.C.M.E ', 'Ａｃｍｅ', 'ACME, Inc.'])
      expectProblem(await claimTrial(name, from), 409, 'trial_already_used');
    expect(await count('checkouts')).toBe(checkouts);
    expect(await count('licenses')).toBe(licenses);

    // Three a day from one address; the fourth waits for tomorrow.
    expect((await claimTrial('Beta Works', from)).status).toBe(201);
    expect((await claimTrial('Gamma Works', from)).status).toBe(201);
    const capped = await claimTrial('Delta Works', from);
    expectProblem(capped, 429, 'trial_limit_reached');
    expect(capped.headers['retry-after']).toBeDefined();
    // Another address is not held to this one's share.
    expect((await claimTrial('Delta Works', newAddress())).status).toBe(201);
  });

  it('needs the wallet’s signature over an unaltered, unused challenge', async () => {
    const from = newAddress();
    const before = await count('checkouts');
    const prepare = (body: Record<string, unknown>) =>
      proxied
        .post('/api/v1/commercial/checkout/prepare')
        .set('X-Forwarded-For', from)
        .send({ license: 'TRIAL', organization: 'Signed Org', email: 's@example.test', ...body });

    expectProblem(await prepare({}), 400, 'validation_failed');
    const wallet = newWallet();
    const proof = await trialProof(app.request, wallet);
    const other = newWallet();
    expectProblem(
      await prepare({ ...proof, signature: other.sign(proof.challenge) }),
      401,
      'wallet_signature_invalid',
    );
    const altered = proof.challenge.replace('Expiration Time: 2', 'Expiration Time: 3');
    expectProblem(
      await prepare({ ...proof, challenge: altered, signature: wallet.sign(altered) }),
      404,
      'challenge_unknown',
    );
    // Another wallet's challenge, signed by the claimant, names the wrong wallet.
    const theirs = await trialProof(app.request, other);
    expectProblem(
      await prepare({
        wallet: wallet.publicKey,
        challenge: theirs.challenge,
        signature: wallet.sign(theirs.challenge),
      }),
      404,
      'challenge_unknown',
    );
    expect(await count('checkouts')).toBe(before);

    expect((await prepare(proof)).status).toBe(201);
    expectProblem(
      await proxied
        .post('/api/v1/commercial/checkout/prepare')
        .set('X-Forwarded-For', from)
        .send({ license: 'TRIAL', organization: 'Replay Org', email: 'r@example.test', ...proof }),
      409,
      'challenge_used',
    );
    expect(await count('checkouts')).toBe(before + 1);
  });
});

describe('prepaid credit', () => {
  it('pays a priced job in the transaction that creates it, and is never overspent', async () => {
    const business = await grantLicense(app.deps.db, 'Business');
    const credit = async () =>
      (await app.deps.db('licenses').where({ id: business.id }).first()).credit_usd_cents as number;
    expect(await credit()).toBe(5_000);

    const paid = await pricedJob(business.auth);
    expect(paid.status).toBe(202);
    expect(paid.body.job.status).toBe('queued');
    expect(paid.body.payment).toBeUndefined();
    expect(await credit()).toBe(4_950);
    expect(await app.deps.db('license_credit_debits').where({ job_id: paid.body.job.id })).toHaveLength(1);

    // Two jobs' worth left; six at once: two are paid, four are quoted, the credit ends at zero.
    await app.deps.db('licenses').where({ id: business.id }).update({ credit_usd_cents: 100 });
    const results = await Promise.all(Array.from({ length: 6 }, () => pricedJob(business.auth)));
    const statuses = results.map((r) => r.body.job?.status).sort();
    expect(statuses).toEqual([
      'awaiting_payment',
      'awaiting_payment',
      'awaiting_payment',
      'awaiting_payment',
      'queued',
      'queued',
    ]);
    expect(await credit()).toBe(0);

    // At zero the credit pays nothing, and the job is quoted like anyone's.
    const quoted = await pricedJob(business.auth);
    expect(quoted.body.job.status).toBe('awaiting_payment');
    expect(quoted.body.payment.quotes.length).toBeGreaterThan(0);
    expect(await credit()).toBe(0);
    expect(await app.deps.db('license_credit_debits').where({ license_id: business.id })).toHaveLength(3);
  });
});

describe('product lines and quotas', () => {
  it('refuses a product line the tier does not include', async () => {
    const starter = await grantLicense(app.deps.db, 'Starter');
    const rooms = await count('rooms');
    expectProblem(
      await app.request.post('/api/governance/rooms').set(starter.auth).send({ name: 'Board' }),
      403,
      'license_product_not_included',
    );
    expect(await count('rooms')).toBe(rooms);
  });

  it('spends a quota unit per creation, refunds a refused one, and stops at the quota', async () => {
    const trial = await grantLicense(app.deps.db, 'TRIAL');
    const now = Date.now();
    const auction = (title: string, bidding = 60_000) =>
      app.request
        .post('/api/auctions')
        .set(trial.auth)
        .send({
          title,
          asset: 'USDC-SOL',
          pricing: 'first',
          biddingEndsAt: new Date(now + bidding).toISOString(),
          revealEndsAt: new Date(now + 120_000).toISOString(),
        });
    // A refused creation (reveal before bidding ends) spends nothing.
    expect((await auction('backwards', 600_000)).status).toBeGreaterThanOrEqual(400);
    await auction('one').expect(201);
    await auction('two').expect(201);
    const auctions = await count('auctions');
    expectProblem(await auction('three'), 403, 'license_quota_exhausted');
    expect(await count('auctions')).toBe(auctions);
    const usage = await app.deps.db('license_usage').where({ license_id: trial.id }).first();
    expect(usage).toMatchObject({ product_line: 'auctions', used: 2 });
    // The licensee sees the same.
    const view = await app.request.get('/api/v1/commercial/license').set(trial.auth).expect(200);
    expect(view.body).toMatchObject({ tier: 'TRIAL', creditUsdCents: 0 });
    expect(view.body.usage.find((u: { line: string }) => u.line === 'auctions')).toMatchObject({
      quota: 2,
      used: 2,
      left: 0,
    });
  });
});
