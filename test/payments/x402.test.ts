// x402 end to end, with a facilitator: an unmodified @x402/fetch client (a viem local account) creates
// and pays a priced job in one call against the real app on loopback; ganache runs the demo EIP-3009
// token; the facilitator on loopback is built from the @x402 packages. Then the attacks: a replayed
// signature, another job's requirement, a lower amount, a wrong payTo, a forged or unfunded payer —
// each refused with a problem document and nothing settled — and a settlement whose answer is lost,
// recovered from the chain by the sweeper's pass. The paid reply, the only one such a client sees,
// carries a token of the job; whoever replays the signature (public on chain once settled) gets none.
import { describe, expect, it } from 'vitest';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { randomBytes } from 'node:crypto';
import { getAddress, parseEther, toHex } from 'viem';
import type { Address, Hex, LocalAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { demoTokenBalance, deployDemoToken, mintDemoToken } from '../../dev/chain/token';
import { startChain } from './ganache';
import { startFacilitator } from './x402-facilitator';
import type { Chain } from './ganache';

// The node, the token and the facilitator come first: the env the modules parse once must name them.
const chain: Chain = await startChain(1337);
const [deployer, treasury, gasFunder] = chain.accounts as [Address, Address, Address];
const token = await deployDemoToken({ rpcUrl: chain.url, account: deployer });
const payer = privateKeyToAccount(generatePrivateKey());
const stranger = privateKeyToAccount(generatePrivateKey());
await mintDemoToken({ rpcUrl: chain.url, account: deployer }, token.address, payer.address, 100_000_000n);
const gasKey = generatePrivateKey();
await chain.sendEth(gasFunder, privateKeyToAccount(gasKey).address, parseEther('10'));
const facilitator = await startFacilitator(chain.url, 1337, gasKey);

Object.assign(process.env, {
  EVM_RPC_URL: chain.url,
  EVM_CONFIRMATIONS: '1',
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '2000',
  TREASURY_EVM: treasury,
  // The demo token's EIP-712 domain is USDC's by default, so only network and contract are set.
  ASSETS_JSON: JSON.stringify({
    ETH: { network: 'eip155:1337' },
    'USDC-ETH': { network: 'eip155:1337', contract: token.address },
    'WBTC-ETH': { disabled: true },
  }),
  RATES_USD: 'ETH=2000',
  PAYMENT_RECHECK_MS: '100',
  PAYMENT_RECHECK_MAX_MS: '300',
  X402_FACILITATOR_URL: facilitator.url,
  X402_FACILITATOR_TIMEOUT_MS: '20000',
});

const { bearer, sha256Of, waitForJob } = await import('../helpers');
const { capabilityHash } = await import('../../shared/platform/capabilities');
const { registerAgent } = await import('../exchange/fixtures');
const { paidStack } = await import('./x402-stack');
const { verifyReceipt } = await import('../../shared/payments/receipts');
const { recoverX402Settlements } = await import('../../shared/payments/x402/recover');

const stack = paidStack(async () => {
  await facilitator.close();
  await chain.close();
});

const db = () => stack.app.deps.db;
// The sweeper's next pass, a second on: rows Postgres stamped with its own clock (microseconds) in
// the last millisecond are then already behind it.
const nextTick = () => ({ graceMs: 0, now: new Date(Date.now() + 1_000) });
const balance = (who: Address) => demoTokenBalance(chain.url, token.address, who);

/** An unmodified x402 client paying as `account`; `seen` records every request it sends. */
function payingFetch(account: LocalAccount) {
  const seen: Request[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    seen.push(request.clone());
    return fetch(request);
  };
  const client = new x402Client().register('eip155:1337', new ExactEvmScheme(account));
  // The client's own spending policy: the devnet token is not one of its built-in assets, so it is
  // allowed by name, with a cap per payment (10 tokens).
  client.setSpendControls({
    allowedAssets: [{ network: 'eip155:1337', asset: token.address, maxAmountPerPayment: '10000000' }],
  });
  return { fetch: wrapFetchWithPayment(recording, client), client, seen };
}

const jobBody = async (label: string) => ({
  service: 'attest.batch',
  input: { digests: [await sha256Of(`${label} ${Math.random()}`)] },
});

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${stack.base}/api/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

/** Creates an unpaid job; returns it with its decoded PAYMENT-REQUIRED. */
async function unpaid(body: unknown) {
  const res = await post(body);
  expect(res.status).toBe(402);
  const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
  return {
    res,
    required,
    body: (await res.json()) as { job: { id: string }; accessToken: string; payment: { quotes: Quote[] } },
  };
}
interface Quote {
  asset: string;
  amount: string;
  payTo: string;
  reference: string;
}

type Requirement = PaymentRequired['accepts'][number];

/**
 * A PAYMENT-SIGNATURE made by the x402 client for `required`: with `before`, for a requirement
 * tampered before signing; with `after`, the signed payload's `accepted` altered afterwards.
 */
async function signatureFor(
  account: LocalAccount,
  required: PaymentRequired,
  tamper: { before?: (r: Requirement) => void; after?: (r: Requirement) => void } = {},
) {
  const { client } = payingFetch(account);
  const copy = structuredClone(required);
  tamper.before?.(copy.accepts[0]!);
  const payload = await client.createPaymentPayload(copy);
  tamper.after?.(payload.accepted);
  return Buffer.from(JSON.stringify(payload)).toString('base64');
}

async function expectProblem(res: Response, status: number, code: string) {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(JSON.parse(text).code).toBe(code);
  return JSON.parse(text) as Record<string, unknown>;
}

async function untouched<T>(act: () => Promise<T>): Promise<T> {
  const before = {
    settle: facilitator.calls.settle,
    payer: await balance(payer.address),
    treasury: await balance(treasury),
    payments: (await db()('payments').count({ n: '*' }))[0]!.n,
  };
  const out = await act();
  expect(facilitator.calls.settle).toBe(before.settle);
  expect(await balance(payer.address)).toBe(before.payer);
  expect(await balance(treasury)).toBe(before.treasury);
  expect((await db()('payments').count({ n: '*' }))[0]!.n).toBe(before.payments);
  return out;
}

describe('the 402', () => {
  it('answers an unpaid priced job with 402, the job and its quotes, and PAYMENT-REQUIRED for the EIP-3009 token only', async () => {
    const { res, required, body } = await unpaid(await jobBody('402'));
    expect(res.headers.get('location')).toBe(`${stack.base}/api/jobs/${body.job.id}`);
    expect(body.job).toMatchObject({ status: 'awaiting_payment' });
    expect(body.payment.quotes.map((q) => q.asset).sort()).toEqual(['ETH', 'USDC-ETH']);
    const usdc = body.payment.quotes.find((q) => q.asset === 'USDC-ETH')!;
    expect(required.x402Version).toBe(2);
    expect(required.resource.url).toBe(`${stack.base}/api/jobs/${body.job.id}`);
    // ETH is a native coin: `exact` cannot pay it, so it is quoted for submitPayment only.
    expect(required.accepts).toHaveLength(1);
    expect(required.accepts[0]).toMatchObject({
      scheme: 'exact',
      network: 'eip155:1337',
      asset: token.address,
      amount: usdc.amount,
      extra: { name: 'USD Coin', version: '2', reference: usdc.reference },
    });
    expect(required.accepts[0]!.payTo.toLowerCase()).toBe(treasury.toLowerCase());
    expect(required.accepts[0]!.maxTimeoutSeconds).toBeGreaterThan(600);
  });
});

describe('an unmodified x402 client', () => {
  let paidJobId: string;
  let paidSignature: string;
  let paidKey: string;
  let paidToken: string;
  let body: Awaited<ReturnType<typeof jobBody>>;

  it('creates and pays a job in one call; the job runs and its receipt verifies', async () => {
    body = await jobBody('paid');
    const { fetch: pay, seen } = payingFetch(payer);
    const [payerBefore, treasuryBefore] = [await balance(payer.address), await balance(treasury)];
    paidKey = `x402-${Math.random()}`;
    const res = await pay(`${stack.base}/api/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Idempotency-Key': paidKey },
      body: JSON.stringify(body),
    });
    const reply = (await res.json()) as {
      job: { id: string; status: string };
      accessToken: string;
      payment: { payments: unknown[] };
    };
    expect(res.status, JSON.stringify(reply)).toBe(202);
    // Two requests: the 402 and the paid retry, which paid the job the first one made.
    expect(seen).toHaveLength(2);
    paidSignature = seen[1]!.headers.get('payment-signature')!;
    expect(paidSignature).toBeTruthy();
    paidJobId = reply.job.id;
    // The reply to the paid retry carries a token of the job (the 402's never reached the caller):
    // a capability of its own, stored only as its hash beside the creator's.
    paidToken = reply.accessToken;
    expect(paidToken).toMatch(/^jt_[\w-]{43}$/);
    const stored = await db()('jobs').where({ id: paidJobId }).first();
    expect(stored.payer_access_hash).toBe(capabilityHash(paidToken));
    expect(stored.access_hash).not.toBe(stored.payer_access_hash);
    expect(JSON.stringify(stored)).not.toContain(paidToken);
    expect(await db()('jobs').whereRaw('input::text like ?', [`%${body.input.digests[0]}%`])).toHaveLength(1);

    const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settled).toMatchObject({ success: true, network: 'eip155:1337' });
    expect(settled.payer?.toLowerCase()).toBe(payer.address.toLowerCase());
    const [quote] = await db()('quotes').where({ job_id: paidJobId, asset: 'USDC-ETH' });
    expect(await balance(payer.address)).toBe(payerBefore - BigInt(quote.amount));
    expect(await balance(treasury)).toBe(treasuryBefore + BigInt(quote.amount));
    // The body says what the header says: settled, no longer required, no offer to pay again.
    expect(reply.payment).toMatchObject({
      required: false,
      settlement: { success: true, transaction: settled.transaction, network: 'eip155:1337' },
    });
    expect((reply.payment as Record<string, unknown>).x402).toBeUndefined();
    expect(JSON.stringify(reply)).not.toContain('Payment required');
    // Recorded as an ordinary payment of the settling transaction, verified by the payments worker.
    expect(reply.payment.payments).toHaveLength(1);
    const [payment] = await db()('payments').where({ job_id: paidJobId });
    expect(payment.tx_ref).toBe(settled.transaction.toLowerCase());

    const job = await waitForJob(stack.app.request, paidJobId, paidToken);
    expect(job.status).toBe('succeeded');
    const receiptUrl = new URL(job.links.receipt!);
    const { receipt } = (await stack.app.request.get(receiptUrl.pathname).expect(200)).body;
    const { publicKey } = (await stack.app.request.get('/api/health').expect(200)).body.signingKey;
    expect(verifyReceipt(receipt, publicKey)).toBe(true);
    expect(receipt).toMatchObject({
      jobId: paidJobId,
      asset: 'USDC-ETH',
      amount: String(quote.amount),
      settlement: 'exact',
      transaction: { txRef: settled.transaction.toLowerCase() },
    });
    const [row] = await db()('x402_settlements').where({ job_id: paidJobId });
    expect(row).toMatchObject({ status: 'settled', payment_id: payment.id, settler: 'facilitator' });
  });

  it('refuses the same PAYMENT-SIGNATURE again: nothing is settled or paid twice, no token given', async () => {
    expect(paidSignature).toBeTruthy();
    const hashBefore = (await db()('jobs').where({ id: paidJobId }).first()).payer_access_hash;
    const texts: string[] = [];
    const problem = await untouched(async () =>
      expectProblem(await post(body, { 'PAYMENT-SIGNATURE': paidSignature }), 409, 'payment_signature_used'),
    );
    expect(problem.jobId).toBe(paidJobId);
    texts.push(JSON.stringify(problem));
    // Under the legacy header name too, and with a key of its own (an agent replaying what it saw).
    texts.push(
      JSON.stringify(
        await untouched(async () =>
          expectProblem(await post(body, { 'X-PAYMENT': paidSignature }), 409, 'payment_signature_used'),
        ),
      ),
    );
    const agent = await registerAgent(stack.app, { name: 'replayer' });
    texts.push(
      JSON.stringify(
        await untouched(async () =>
          expectProblem(
            await post(body, { 'PAYMENT-SIGNATURE': paidSignature, ...agent.auth }),
            409,
            'payment_signature_used',
          ),
        ),
      ),
    );
    // The paid request's own Idempotency-Key, from the same address: the stored reply carried the
    // token, so it is withheld from an anonymous caller (only the job's Location comes back).
    const again = await untouched(() =>
      post(body, { 'PAYMENT-SIGNATURE': paidSignature, 'Idempotency-Key': paidKey }),
    );
    const withheld = await expectProblem(again, 409, 'idempotency_reply_withheld');
    expect(again.headers.get('location')).toBe(`${stack.base}/api/jobs/${paidJobId}`);
    texts.push(JSON.stringify(withheld));
    for (const text of texts) expect(text).not.toMatch(/jt_/);
    // No token was made for any replay: the one the paid request got is still the only one.
    expect((await db()('jobs').where({ id: paidJobId }).first()).payer_access_hash).toBe(hashBefore);
    expect(await db()('payments').where({ job_id: paidJobId })).toHaveLength(1);
    // The paid token opens the job; the job id alone does not.
    await stack.app.request.get(`/api/jobs/${paidJobId}`).set(bearer(paidToken)).expect(200);
    await stack.app.request.get(`/api/jobs/${paidJobId}`).expect(404);
  });
});

describe('payments that must not pay', () => {
  it("refuses a signature for another job's requirement", async () => {
    const a = await jobBody('a');
    const b = await jobBody('b');
    await unpaid(a);
    const { required: forB } = await unpaid(b);
    const signature = await signatureFor(payer, forB);
    await untouched(async () =>
      expectProblem(await post(a, { 'PAYMENT-SIGNATURE': signature }), 409, 'payment_for_other_job'),
    );
  });

  it('refuses a lower amount, a wrong payTo, another asset, and a requirement it never issued', async () => {
    const body = await jobBody('tamper');
    const { required } = await unpaid(body);
    const cases: Array<Parameters<typeof signatureFor>[2]> = [
      { before: (r) => (r.amount = String(BigInt(r.amount) - 1n)) },
      { before: (r) => (r.payTo = stranger.address) },
      // Signed as issued, then claimed to be for a lower amount or another asset.
      { after: (r) => (r.amount = String(BigInt(r.amount) - 1n)) },
      { after: (r) => (r.asset = '0x000000000000000000000000000000000000dEaD') },
      { before: (r) => (r.extra = { ...r.extra, reference: 'pay_01jd3zzzzzzzzzzzzzzzzzzzzz' }) },
    ];
    const codes = [];
    for (const tamper of cases) {
      const signature = await signatureFor(payer, required, tamper);
      const res = await untouched(() => post(body, { 'PAYMENT-SIGNATURE': signature }));
      codes.push((await expectProblem(res, 422, 'payment_requirements_mismatch')).code);
    }
    expect(codes).toHaveLength(5);
    expect(await db()('x402_settlements').count({ n: '*' })).toEqual([{ n: '1' }]);
  });

  it('answers 402 with fresh requirements when the facilitator refuses: a payer without funds', async () => {
    const body = await jobBody('broke');
    const { required } = await unpaid(body);
    const signature = await signatureFor(stranger, required);
    const res = await untouched(() => post(body, { 'PAYMENT-SIGNATURE': signature }));
    const problem = await expectProblem(res, 402, 'payment_invalid');
    expect(String(problem.reason)).toMatch(/insufficient|simulation/i);
    const again = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    expect(again.accepts[0]!.extra.reference).toBe(required.accepts[0]!.extra.reference);
  });

  it('refuses garbage, a v1 payload, and a payload of another scheme with 400', async () => {
    const body = await jobBody('garbage');
    const { required } = await unpaid(body);
    const upto = await signatureFor(payer, required, { after: (r) => (r.scheme = 'upto') });
    const v1 = Buffer.from(
      JSON.stringify({ x402Version: 1, scheme: 'exact', network: 'stack.base', payload: {} }),
    ).toString('base64');
    await untouched(async () => {
      await expectProblem(
        await post(body, { 'PAYMENT-SIGNATURE': 'not base64!' }),
        400,
        'payment_signature_invalid',
      );
      await expectProblem(await post(body, { 'PAYMENT-SIGNATURE': v1 }), 400, 'x402_version_unsupported');
      await expectProblem(await post(body, { 'PAYMENT-SIGNATURE': upto }), 400, 'payment_signature_invalid');
    });
  });
});

/**
 * A PAYMENT-SIGNATURE for `required`'s first requirement with the authorization's fields (and the
 * accepted requirement's) replaced, signed by `account` wherever the fields are uint256 at all: a
 * payer's own valid signature over an absurd authorization, not a forgery the facilitator would catch.
 */
async function authorizationWith(
  account: LocalAccount,
  required: PaymentRequired,
  fields: Record<string, unknown>,
  acceptedFields: Record<string, unknown> = {},
) {
  const accepted = required.accepts[0]!;
  const now = Math.floor(Date.now() / 1000);
  const authorization: Record<string, unknown> = {
    from: account.address,
    to: getAddress(accepted.payTo),
    value: accepted.amount,
    validAfter: '0',
    validBefore: String(now + accepted.maxTimeoutSeconds),
    nonce: toHex(randomBytes(32)),
    ...fields,
  };
  const uint = (v: unknown) => typeof v === 'string' && /^\d{1,78}$/.test(v) && BigInt(v) < 2n ** 256n;
  const signable = ['value', 'validAfter', 'validBefore'].every((k) => uint(authorization[k]));
  const signature = await account.signTypedData({
    domain: {
      name: String(accepted.extra.name),
      version: String(accepted.extra.version),
      chainId: 1337,
      verifyingContract: getAddress(accepted.asset),
    },
    types: {
      TransferWithAuthorization: [
        { name: 'from', type: 'address' },
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'validAfter', type: 'uint256' },
        { name: 'validBefore', type: 'uint256' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'TransferWithAuthorization',
    message: {
      from: account.address,
      to: getAddress(accepted.payTo),
      value: signable ? BigInt(authorization.value as string) : 1n,
      validAfter: signable ? BigInt(authorization.validAfter as string) : 0n,
      validBefore: signable ? BigInt(authorization.validBefore as string) : 1n,
      nonce: /^0x[0-9a-f]{64}$/.test(String(authorization.nonce))
        ? (authorization.nonce as Hex)
        : toHex(randomBytes(32)),
    },
  });
  const payload = {
    x402Version: 2,
    resource: required.resource,
    accepted: { ...accepted, ...acceptedFields },
    payload: { authorization, signature },
  };
  return Buffer.from(JSON.stringify(payload)).toString('base64');
}

describe('payment fields out of bounds', () => {
  /** Nothing written, nothing sent: no settlement row, no payment, the job's quotes as they were. */
  async function refusedAtParse(jobId: string, act: () => Promise<Response>) {
    const before = {
      settlements: await db()('x402_settlements').count({ n: '*' }),
      quotes: JSON.stringify(await db()('quotes').where({ job_id: jobId }).orderBy('id')),
      job: JSON.stringify(await db()('jobs').where({ id: jobId }).first()),
      verify: facilitator.calls.verify,
    };
    const problem = await untouched(async () => expectProblem(await act(), 400, 'payment_signature_invalid'));
    expect(facilitator.calls.verify).toBe(before.verify);
    expect(await db()('x402_settlements').count({ n: '*' })).toEqual(before.settlements);
    expect(JSON.stringify(await db()('quotes').where({ job_id: jobId }).orderBy('id'))).toBe(before.quotes);
    expect(JSON.stringify(await db()('jobs').where({ id: jobId }).first())).toBe(before.job);
    return problem;
  }

  it('refuses a huge, negative, fractional or inverted validity window, an absurd value and a malformed nonce with 400', async () => {
    const body = await jobBody('bounds');
    const { required, body: created } = await unpaid(body);
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string, Record<string, unknown>, Record<string, unknown>?]> = [
      ['validBefore 2^200', { validBefore: (2n ** 200n).toString() }],
      ['validBefore 9e12 s', { validBefore: '9000000000000' }],
      ['validBefore past uint256', { validBefore: (2n ** 256n).toString() }],
      ['validBefore negative', { validBefore: '-1' }],
      ['validBefore fractional', { validBefore: `${now + 600}.5` }],
      ['validBefore in exponent form', { validBefore: '1e12' }],
      ['validBefore a JSON number', { validBefore: now + 600 }],
      ['validAfter huge', { validAfter: (2n ** 200n).toString() }],
      ['validAfter after validBefore', { validAfter: String(now + 1200), validBefore: String(now + 600) }],
      ['value past uint256', { value: (2n ** 256n).toString() }],
      ['value 10^100', { value: `1${'0'.repeat(100)}` }],
      ['value with a leading zero', { value: `0${required.accepts[0]!.amount}` }],
      ['value negative', { value: `-${required.accepts[0]!.amount}` }],
      ['nonce short', { nonce: '0x1234' }],
      ['nonce not hex', { nonce: `0x${'zz'.repeat(32)}` }],
      ['nonce too long', { nonce: `0x${'ab'.repeat(33)}` }],
      ['from not an address', { from: 'payer' }],
      ['accepted.amount 10^100', {}, { amount: `1${'0'.repeat(100)}` }],
      ['accepted.network 5,000 characters', {}, { network: `eip155:${'1'.repeat(5000)}` }],
      ['accepted.maxTimeoutSeconds 1e300', {}, { maxTimeoutSeconds: 1e300 }],
      ['accepted.payTo not an address', {}, { payTo: 'treasury' }],
      [
        'accepted.extra.reference 1,000 characters',
        {},
        { extra: { ...required.accepts[0]!.extra, reference: 'p'.repeat(1000) } },
      ],
    ];
    for (const [name, fields, accepted] of cases) {
      const signature = await authorizationWith(payer, required, fields, accepted);
      const problem = await refusedAtParse(created.job.id, () =>
        post(body, { 'PAYMENT-SIGNATURE': signature }),
      );
      expect(problem.detail, name).toBeTruthy();
    }
    // A header longer than any payment (under Node's own header limit).
    await refusedAtParse(created.job.id, () => post(body, { 'PAYMENT-SIGNATURE': 'A'.repeat(13_000) }));
    // The same payer's well-formed authorization for the job still pays it.
    const good = await post(body, { 'PAYMENT-SIGNATURE': await authorizationWith(payer, required, {}) });
    expect(good.status, await good.clone().text()).toBe(202);
  });

  it('refuses an authorization valid for more than a day past its quote with 422, nothing written or sent', async () => {
    const body = await jobBody('long-lived');
    const { required, body: created } = await unpaid(body);
    const [quote] = await db()('quotes').where({ job_id: created.job.id, asset: 'USDC-ETH' });
    const expiry = Math.floor(new Date(quote.expires_at).getTime() / 1000);
    const verify = facilitator.calls.verify;
    const settlements = await db()('x402_settlements').count({ n: '*' });
    const signature = await authorizationWith(payer, required, { validBefore: String(expiry + 86_400 + 60) });
    await untouched(async () =>
      expectProblem(
        await post(body, { 'PAYMENT-SIGNATURE': signature }),
        422,
        'payment_requirements_mismatch',
      ),
    );
    expect(facilitator.calls.verify).toBe(verify);
    expect(await db()('x402_settlements').count({ n: '*' })).toEqual(settlements);
  });
});

describe('a settlement whose answer is lost', () => {
  it('is written before broadcast, and the sweeper pass credits it from the chain, once', async () => {
    const body = await jobBody('lost');
    const { required, body: created } = await unpaid(body);
    const signature = await signatureFor(payer, required);
    facilitator.dropNextSettleAnswer();
    const treasuryBefore = await balance(treasury);
    const res = await post(body, { 'PAYMENT-SIGNATURE': signature });
    await expectProblem(res, 503, 'payment_settlement_unknown');
    // The money moved, the payment is not recorded yet, the intent is.
    expect(await balance(treasury)).toBe(treasuryBefore + BigInt(required.accepts[0]!.amount));
    expect(await db()('payments').where({ job_id: created.job.id })).toHaveLength(0);
    const [intent] = await db()('x402_settlements').where({ job_id: created.job.id });
    expect(intent).toMatchObject({ status: 'settling', tx_hash: null });
    // Retrying the same signature meanwhile settles nothing.
    await untouched(async () =>
      expectProblem(await post(body, { 'PAYMENT-SIGNATURE': signature }), 409, 'payment_in_progress'),
    );

    expect(await recoverX402Settlements(db(), stack.app.deps.queues, nextTick())).toEqual({
      paid: 1,
      failed: 0,
    });
    const [row] = await db()('x402_settlements').where({ job_id: created.job.id });
    expect(row.status).toBe('settled');
    expect(row.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await waitForJob(stack.app.request, created.job.id, created.accessToken)).status).toBe(
      'succeeded',
    );
    // A second pass finds nothing to do.
    expect(await recoverX402Settlements(db(), stack.app.deps.queues, nextTick())).toEqual({
      paid: 0,
      failed: 0,
    });
    expect(await db()('payments').where({ job_id: created.job.id })).toHaveLength(1);
  });
});
