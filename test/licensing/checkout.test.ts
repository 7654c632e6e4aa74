// License checkout end to end: wallet-signed trials once per organization, a paid checkout on a real EVM node
// (ganache) verified by the checkouts worker, the signed license offline and as a Bearer key, the
// payment outcomes (underpaid, paid late, expired), one license under concurrent verifies, and privacy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChain } from '../payments/ganache';
import type { Chain } from '../payments/ganache';
import type { TestApp } from '../helpers';
import { captureLogs, expectProblem, testCheckoutsWorker, trialProof } from './helpers';

const chain: Chain = await startChain(1337);
const [payer, treasury, stranger] = chain.accounts as [string, string, string];
const usdc = await chain.deployToken(6, 10n ** 15n);
Object.assign(process.env, {
  EVM_RPC_URL: chain.url,
  EVM_CONFIRMATIONS: '3',
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '2000',
  TREASURY_EVM: treasury,
  ASSETS_JSON: JSON.stringify({
    ETH: { network: 'eip155:1337' },
    'USDC-ETH': { network: 'eip155:1337', contract: usdc },
    'WBTC-ETH': { disabled: true },
  }),
  RATES_USD: 'ETH=2000',
  PAYMENT_RECHECK_MS: '100',
  PAYMENT_RECHECK_MAX_MS: '300',
  LICENSE_PRICES_USD_CENTS: 'Starter=4900',
  // Every trial here comes from the test's one address.
  TRIAL_PER_ADDRESS_PER_DAY: '1000',
});

const { eventually, testApp } = await import('../helpers');
const { verifyLicense } = await import('../../shared/licensing/license-token');
const { normalizeOrganization } = await import('../../shared/licensing/organizations');
const { processCheckout } = await import('../../shared/licensing/verify');

// Starter: 49 USD = 49 USDC (6 decimals) = 0.0245 ETH at 2000 USD.
const STARTER = { 'USDC-ETH': 49_000_000n, ETH: 24_500_000_000_000_000n };

let app: TestApp;
let worker: Awaited<ReturnType<typeof testCheckoutsWorker>>;
let logs: Awaited<ReturnType<typeof captureLogs>>;
const replies: string[] = [];

beforeAll(async () => {
  logs = await captureLogs();
  app = testApp();
  worker = await testCheckoutsWorker();
});
afterAll(async () => {
  logs?.stop();
  await worker?.close();
  await app?.close();
  await chain.close();
});

const db = () => app.deps.db;
const count = async (table: string) => Number((await db()(table).count({ n: '*' }))[0]!.n);
const base = '/api/v1/commercial/checkout';
let orgSeq = 0;
const org = () => `Org ${++orgSeq} ${Math.random().toString(36).slice(2, 8)}`;

/** Each checkout's client secret, as its prepare reply gave it: the buyer's key to its checkout. */
const secrets = new Map<string, string>();
const opener = (checkoutId: string) => ({ Authorization: `Bearer ${secrets.get(checkoutId) ?? 'cs_none'}` });

/** A TRIAL is claimed by a fresh wallet's signature over its challenge unless the body brings its own. */
async function prepare(body: Record<string, unknown>) {
  const signed = body.license === 'TRIAL' && !('wallet' in body) ? await trialProof(app.request) : {};
  const res = await app.request.post(`${base}/prepare`).send({ ...body, ...signed });
  replies.push(JSON.stringify(res.body));
  if (res.status === 201) secrets.set(res.body.checkout.id, res.body.clientSecret);
  return res;
}

/** Submits a transfer for a checkout, as its buyer (with its client secret). */
const verify = (body: { checkoutId: string; txRef?: string; txKey?: string }) =>
  app.request.post(`${base}/verify`).set(opener(body.checkoutId)).send(body);

async function paidCheckout(asset: 'USDC-ETH' | 'ETH' = 'USDC-ETH', organization = org()) {
  const res = await prepare({ license: 'Starter', asset, organization, email: 'buyer@example.com' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.checkout as { id: string; payment: { amount: string; payTo: string } };
}

async function payUsdc(amount: bigint, to = treasury) {
  const hash = await chain.transferToken(usdc, payer, to, amount);
  await chain.mine(2);
  return hash;
}

async function status(checkoutId: string) {
  const res = await app.request
    .get(`${base}/status?checkoutId=${checkoutId}`)
    .set(opener(checkoutId))
    .expect(200);
  replies.push(JSON.stringify(res.body));
  return res.body.checkout;
}

async function settled(checkoutId: string) {
  return eventually(async () => {
    const c = await status(checkoutId);
    return ['pending', 'verifying', 'awaiting_payment'].includes(c.status) ? undefined : c;
  }, 15_000);
}

describe('trial', () => {
  it('issues a TRIAL license at once, once per organization', async () => {
    const res = await prepare({ license: 'TRIAL', organization: 'Initech, Inc.', email: 'a@initech.test' });
    expect(res.status).toBe(201);
    const { checkout } = res.body;
    expect(checkout).toMatchObject({
      licenseType: 'TRIAL',
      status: 'confirmed',
      settlement: 'trial',
      payment: null,
    });
    expect(checkout.id).toMatch(/^chk_/);
    expect(checkout.license).toMatchObject({ tier: 'TRIAL', organization: 'Initech, Inc.', periodDays: 14 });
    expect(checkout.license.id).toMatch(/^lic_/);
    const days =
      (Date.parse(checkout.license.expiresAt) - Date.parse(checkout.license.issuedAt)) / 86_400_000;
    expect(days).toBe(14);

    const [checkouts, licenses] = [await count('checkouts'), await count('licenses')];
    for (const name of ['INITECH inc', '  initech ', 'Initech LLC']) {
      expectProblem(
        await prepare({ license: 'TRIAL', organization: name, email: 'b@initech.test' }),
        409,
        'trial_already_used',
      );
    }
    expect(await count('checkouts')).toBe(checkouts);
    expect(await count('licenses')).toBe(licenses);
    // Another organization still gets its own.
    expect(
      (await prepare({ license: 'TRIAL', organization: 'Initech Labs', email: 'c@initech.test' })).status,
    ).toBe(201);
  });

  it('gives no further trial to a name that only looks like one that had it', async () => {
    const first = await prepare({ license: 'TRIAL', organization: 'Acme', email: 'a@acme.example' });
    expect(first.status).toBe(201);
    const [checkouts, licenses, claims] = [
      await count('checkouts'),
      await count('licenses'),
      await count('trial_claims'),
    ];
    for (const name of [
      '\u0391cme', // Greek capital alpha
      '\u0410\u0441m\u0435', // Cyrillic А, с, е
      '\u0391\u0421\u039c\u0395', // Greek Α, Cyrillic С, Greek Μ, Ε
      'ＡＣＭＥ', // full-width
      'The Acme',
      'Acme S.A.',
      'ACME GmbH & Co. KG',
      'the ACME Pty Ltd',
      'Acmé, S.p.A.',
      'Acrne', // "rn" looks like "m"
    ]) {
      expectProblem(
        await prepare({ license: 'TRIAL', organization: name, email: 'b@acme.example' }),
        409,
        'trial_already_used',
      );
    }
    expect([await count('checkouts'), await count('licenses'), await count('trial_claims')]).toEqual([
      checkouts,
      licenses,
      claims,
    ]);
    // A different organization still gets its own.
    const other = await prepare({ license: 'TRIAL', organization: 'Acme Robotics', email: 'c@x.example' });
    expect(other.status).toBe(201);
  });

  it('gives one trial when the same organization races for it', async () => {
    const name = org();
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        prepare({ license: 'TRIAL', organization: name, email: 'r@race.test' }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    const key = normalizeOrganization(name);
    expect(await db()('licenses').where({ organization_key: key, tier: 'TRIAL' })).toHaveLength(1);
  });
});

describe('paid checkout', () => {
  let paidTx: string;

  it('runs a paid checkout end to end on a real chain', async () => {
    const catalogue = await app.request.get(`${base}/status`).expect(200);
    expect(catalogue.body.tiers.map((t: { type: string }) => t.type)).toEqual([
      'TRIAL',
      'Starter',
      'Business',
      'Enterprise',
    ]);
    expect(catalogue.body.tiers[1].priceUsdCents).toBe(4900);
    expect(catalogue.body.treasuries).toEqual({ solana: false, evm: true, bitcoin: false, monero: false });
    expect(catalogue.body.assets.find((a: { id: string }) => a.id === 'USDC-ETH').enabled).toBe(true);

    const checkout = await paidCheckout('USDC-ETH');
    expect(checkout).toMatchObject({ status: 'awaiting_payment', licenseType: 'Starter', license: null });
    expect(checkout.payment).toMatchObject({ payTo: treasury, reference: checkout.id, binding: 'amount' });
    // The price plus a random offset of at most 9999 base units: the amount identifies the checkout.
    const amount = BigInt(checkout.payment.amount);
    expect(amount > STARTER['USDC-ETH'] && amount <= STARTER['USDC-ETH'] + 9_999n).toBe(true);
    expect(checkout.payment).toMatchObject({
      paymentInstructions: {
        scheme: 'eip-681',
        uri: `ethereum:${usdc}@1337/transfer?address=${treasury}&uint256=${amount}`,
        exactAmount: true,
      },
    });

    paidTx = await payUsdc(amount);
    const submitted = await verify({ checkoutId: checkout.id, txRef: paidTx }).expect(202);
    expect(submitted.body.checkout.status).toBe('pending');

    const done = await settled(checkout.id);
    expect(done).toMatchObject({ status: 'confirmed', settlement: 'exact' });
    expect(done.transaction).toMatchObject({
      txRef: paidTx,
      amountReceived: amount.toString(),
      confirmations: 3,
    });
    expect(done.transaction.blockTime).toEqual(expect.any(String));
    const license = done.license;
    expect(license).toMatchObject({ tier: 'Starter', periodDays: 30, revoked: false });
    expect(license.token).toMatch(/^lk_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);

    // Offline: the published key verifies it; any change breaks it.
    const health = await app.request.get('/api/health').expect(200);
    const publicKey = catalogue.body.licenseKey.publicKey as string;
    expect(JSON.stringify(health.body)).toContain(publicKey);
    const check = verifyLicense(license.token, publicKey);
    expect(check).toMatchObject({
      valid: true,
      license: { licenseId: license.id, tier: 'Starter', checkoutId: checkout.id },
    });
    const [payload, sig] = (license.token as string).slice(3).split('.') as [string, string];
    const forged = JSON.parse(Buffer.from(payload, 'base64url').toString());
    forged.tier = 'Enterprise';
    const forgedToken = `lk_${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${sig}`;
    expect(verifyLicense(forgedToken, publicKey)).toMatchObject({ valid: false, reason: 'bad_signature' });
    expect(
      verifyLicense(license.token, publicKey, new Date(Date.parse(license.expiresAt) + 1)),
    ).toMatchObject({
      valid: false,
      reason: 'expired',
    });

    // As a Bearer key on an operator-or-license route.
    const started = await app.request
      .post('/api/proof-workflows/prepare')
      .set('Authorization', `Bearer ${license.token}`)
      .send({ template: 'Internal Audit' });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    expectProblem(
      await app.request
        .post('/api/proof-workflows/prepare')
        .set('Authorization', `Bearer ${forgedToken}`)
        .send({ template: 'Internal Audit' }),
      401,
      'unauthorized',
    );
  });

  it('refuses a transfer already credited to another checkout', async () => {
    const other = await paidCheckout('USDC-ETH');
    const writes = await count('payment_claims');
    expectProblem(await verify({ checkoutId: other.id, txRef: paidTx }), 409, 'payment_already_claimed');
    expect((await status(other.id)).status).toBe('awaiting_payment');
    expect(await count('payment_claims')).toBe(writes);
    // …and a job cannot be paid with it either: the claim is shared with job payments.
    const claim = await db()('payment_claims').where({ tx_ref: paidTx }).first();
    expect(claim.checkout_id).toBeTruthy();
    expect(claim.payment_id).toBeNull();
  });

  it('issues one license however many times verify is called at once', async () => {
    const checkout = await paidCheckout('ETH');
    const tx = await chain.sendEth(payer, treasury, BigInt(checkout.payment.amount));
    await chain.mine(2);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => verify({ checkoutId: checkout.id, txRef: tx })),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(202));
    // The processor itself, run concurrently beside the worker, settles it once.
    await Promise.all(Array.from({ length: 4 }, () => processCheckout(db(), checkout.id)));
    const done = await settled(checkout.id);
    expect(done.status).toBe('confirmed');
    await verify({ checkoutId: checkout.id, txRef: tx }).expect(202);
    await processCheckout(db(), checkout.id);
    expect(await db()('licenses').where({ checkout_id: checkout.id })).toHaveLength(1);
    expect(await db()('payment_claims').where({ checkout_id: checkout.id })).toHaveLength(1);
    // Another transfer for a paid checkout is refused.
    const again = await chain.sendEth(payer, treasury, BigInt(checkout.payment.amount));
    expectProblem(await verify({ checkoutId: checkout.id, txRef: again }), 409, 'checkout_already_paid');
  });
});

describe('payment outcomes', () => {
  it('takes only its own amount: another amount is not this checkout’s, then the exact one pays it', async () => {
    const checkout = await paidCheckout('USDC-ETH');
    const amount = BigInt(checkout.payment.amount);
    const short = await payUsdc(amount - 1n);
    await verify({ checkoutId: checkout.id, txRef: short }).expect(202);
    const other = await settled(checkout.id);
    expect(other).toMatchObject({ status: 'rejected', reason: 'amount_mismatch', license: null });
    expect(other.transaction.amountReceived).toBe((amount - 1n).toString());
    expect(await db()('payment_claims').where({ tx_ref: short.toLowerCase() })).toHaveLength(0);

    const exact = await payUsdc(amount);
    await verify({ checkoutId: checkout.id, txRef: exact }).expect(202);
    const paid = await settled(checkout.id);
    expect(paid).toMatchObject({ status: 'confirmed', settlement: 'exact' });
    expect(paid.license.tier).toBe('Starter');
  });

  it('refuses a transfer made before the checkout (transfer_before_quote)', async () => {
    const checkout = await paidCheckout('ETH');
    await chain.setTime(new Date(Date.now() - 10 * 60_000));
    const old = await chain.sendEth(payer, treasury, BigInt(checkout.payment.amount));
    await chain.setTime(new Date());
    await chain.mine(2);
    await verify({ checkoutId: checkout.id, txRef: old }).expect(202);
    expect(await settled(checkout.id)).toMatchObject({
      status: 'rejected',
      reason: 'transfer_before_quote',
      license: null,
    });
  });

  it('rejects a transfer to another address', async () => {
    const checkout = await paidCheckout('USDC-ETH');
    const wrong = await payUsdc(BigInt(checkout.payment.amount), stranger);
    await verify({ checkoutId: checkout.id, txRef: wrong }).expect(202);
    const done = await settled(checkout.id);
    expect(done).toMatchObject({ status: 'rejected', reason: 'wrong_recipient', license: null });
  });

  it('honours a late payment inside the watch window as paid_late, and expires one after it', async () => {
    const late = await paidCheckout('USDC-ETH');
    await db()('checkouts')
      .where({ id: late.id })
      .update({ expires_at: new Date(Date.now() - 60_000) });
    const tx = await payUsdc(BigInt(late.payment.amount));
    await verify({ checkoutId: late.id, txRef: tx }).expect(202);
    expect(await settled(late.id)).toMatchObject({ status: 'confirmed', settlement: 'paid_late' });

    const gone = await paidCheckout('USDC-ETH');
    await db()('checkouts')
      .where({ id: gone.id })
      .update({ expires_at: new Date(Date.now() - 2 * 3600_000) });
    expect(await status(gone.id)).toMatchObject({ status: 'expired', reason: 'quote_expired' });
    const tx2 = await payUsdc(BigInt(gone.payment.amount));
    expectProblem(await verify({ checkoutId: gone.id, txRef: tx2 }), 409, 'checkout_expired');
  });
});

describe('licenses as credentials', () => {
  it('refuses an expired license with license_expired and a revoked one with license_revoked', async () => {
    const res = await prepare({ license: 'TRIAL', organization: org(), email: 'e@x.test' });
    const { token, id } = res.body.checkout.license;
    const send = () =>
      app.request
        .post('/api/proof-workflows/prepare')
        .set('Authorization', `Bearer ${token}`)
        .send({ template: 'Grant Review' });
    expect((await send()).status).toBe(201);
    await db()('licenses')
      .where({ id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    expectProblem(await send(), 401, 'license_expired');
    await db()('licenses')
      .where({ id })
      .update({ expires_at: new Date(Date.now() + 86_400_000), revoked_at: new Date() });
    expectProblem(await send(), 401, 'license_revoked');
  });
});

describe('bad input', () => {
  const cases: Array<
    [
      string,
      () => Promise<{ status: number; headers: Record<string, string>; body: Record<string, unknown> }>,
      number,
      string,
    ]
  > = [
    [
      'unknown license',
      () => prepare({ license: 'Gold', asset: 'ETH', organization: 'X', email: 'x@x.test' }),
      400,
      'validation_failed',
    ],
    [
      'lower-case trial',
      () => prepare({ license: 'trial', organization: 'X', email: 'x@x.test' }),
      400,
      'validation_failed',
    ],
    [
      'bad email',
      () => prepare({ license: 'TRIAL', organization: 'X', email: 'not-an-email' }),
      400,
      'validation_failed',
    ],
    [
      'unknown field',
      () => prepare({ license: 'TRIAL', organization: 'X', email: 'x@x.test', coupon: 'FREE' }),
      400,
      'validation_failed',
    ],
    [
      'punctuation-only organization',
      () => prepare({ license: 'TRIAL', organization: '!!!', email: 'x@x.test' }),
      400,
      'validation_failed',
    ],
    [
      'paid without asset',
      () => prepare({ license: 'Business', organization: 'X', email: 'x@x.test' }),
      422,
      'asset_required',
    ],
    [
      'asset without treasury',
      () => prepare({ license: 'Business', asset: 'SOL', organization: 'X', email: 'x@x.test' }),
      422,
      'asset_unavailable',
    ],
    [
      'disabled asset',
      () => prepare({ license: 'Business', asset: 'WBTC-ETH', organization: 'X', email: 'x@x.test' }),
      422,
      'asset_unavailable',
    ],
    ['bad checkout id', () => app.request.get(`${base}/status?checkoutId=nope`), 400, 'validation_failed'],
    [
      'unknown checkout',
      () => app.request.get(`${base}/status?checkoutId=chk_01m7ycenb0y37det98dds34qjx`),
      404,
      'not_found',
    ],
    [
      'verify unknown checkout',
      () => verify({ checkoutId: 'chk_01m7ycenb0y37det98dds34qjx', txRef: `0x${'a'.repeat(64)}` }),
      404,
      'not_found',
    ],
    [
      'verify without txRef',
      () => verify({ checkoutId: 'chk_01m7ycenb0y37det98dds34qjx' }),
      400,
      'validation_failed',
    ],
  ];
  for (const [name, send, code, problem] of cases) {
    it(`${name} → ${code} ${problem}, nothing written`, async () => {
      const before = [await count('checkouts'), await count('licenses'), await count('payment_claims')];
      expectProblem(await send(), code, problem);
      expect([await count('checkouts'), await count('licenses'), await count('payment_claims')]).toEqual(
        before,
      );
    });
  }

  it('refuses a malformed txRef and a txKey for a non-Monero asset without changing the checkout', async () => {
    const checkout = await paidCheckout('USDC-ETH');
    expectProblem(await verify({ checkoutId: checkout.id, txRef: '0x1234' }), 400, 'validation_failed');
    expectProblem(
      await verify({ checkoutId: checkout.id, txRef: `0x${'b'.repeat(64)}`, txKey: 'a'.repeat(64) }),
      400,
      'validation_failed',
    );
    expectProblem(
      await verify({
        checkoutId: (await prepare({ license: 'TRIAL', organization: org(), email: 't@x.test' })).body
          .checkout.id,
        txRef: `0x${'b'.repeat(64)}`,
      }),
      409,
      'checkout_not_payable',
    );
    expect((await status(checkout.id)).status).toBe('awaiting_payment');
  });
});

describe('privacy', () => {
  it('never shows the email on a public reply or in a log line', async () => {
    const email = 'private.person+checkout@example.org';
    const res = await prepare({ license: 'Starter', asset: 'ETH', organization: org(), email });
    expect(res.status).toBe(201);
    await status(res.body.checkout.id);
    await prepare({ license: 'TRIAL', organization: org(), email });
    const stored = await db()('checkouts').where({ email });
    expect(stored).toHaveLength(2);
    for (const r of replies) expect(r).not.toContain('@example');
    expect(logs.lines.length).toBeGreaterThan(0);
    expect(logs.lines.join('')).not.toContain(email);
    expect(logs.lines.join('')).not.toContain('buyer@example.com');
  });
});
