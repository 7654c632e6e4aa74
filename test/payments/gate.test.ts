// The random-amount payment gate on a real EVM node (ganache): unique amounts among open requests,
// released when the window closes, and a transfer matched by exact amount and recipient.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChain } from './ganache';
import type { Chain } from './ganache';
import type { TestApp } from '../helpers';
import { expectProblem } from '../licensing/helpers';

const chain: Chain = await startChain(1337);
const [payer, treasury, stranger] = chain.accounts as [string, string, string];
const usdc = await chain.deployToken(6, 10n ** 15n);
Object.assign(process.env, {
  EVM_RPC_URL: chain.url,
  EVM_CONFIRMATIONS: '2',
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '2000',
  TREASURY_EVM: treasury,
  ASSETS_JSON: JSON.stringify({
    ETH: { network: 'eip155:1337' },
    'USDC-ETH': { network: 'eip155:1337', contract: usdc },
  }),
  PAYMENT_GATE_SPREAD: '6',
  PAYMENT_GATE_WINDOW_SECONDS: '600',
});

const { testApp } = await import('../helpers');

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  await app?.close();
  await chain.close();
});

const base = '/api/v1/payment-gate/random';
const db = () => app.deps.db;
const count = async (table: string) => Number((await db()(table).count({ n: '*' }))[0]!.n);
/** Each request's client secret, as its prepare reply gave it. */
const secrets = new Map<string, string>();
const opener = (requestId: string) => ({ Authorization: `Bearer ${secrets.get(requestId) ?? 'gs_none'}` });
async function prepare(body: Record<string, unknown>) {
  const res = await app.request.post(`${base}/prepare`).send(body);
  if (res.status === 201) {
    expect(res.body.clientSecret).toMatch(/^gs_[A-Za-z0-9_-]{43}$/);
    secrets.set(res.body.request.id, res.body.clientSecret);
  }
  return res;
}
const verify = (requestId: string, txRef: string) =>
  app.request.post(`${base}/verify`).set(opener(requestId)).send({ requestId, txRef });
const status = (requestId: string) =>
  app.request.get(`${base}/status?requestId=${requestId}`).set(opener(requestId));

describe('payment gate', () => {
  it('never gives two open requests the same amount', async () => {
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => prepare({ asset: 'USDC-ETH', baseAmount: '1000' })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(201));
    const amounts = answers.map((a) => a.body.request.amount as string).sort();
    expect(amounts).toEqual(['1001', '1002', '1003', '1004', '1005', '1006']);
    for (const a of answers)
      expect(a.body.request).toMatchObject({ status: 'open', baseAmount: '1000', payTo: treasury });

    // Every amount is taken: the next request cannot be told apart, so it is refused and nothing is written.
    const before = await count('payment_gate_requests');
    expectProblem(await prepare({ asset: 'USDC-ETH', baseAmount: '1000' }), 503, 'gate_amounts_exhausted');
    expect(await count('payment_gate_requests')).toBe(before);
    // The same amount in another asset is another request.
    expect((await prepare({ asset: 'ETH', baseAmount: '1000' })).status).toBe(201);
    // The database itself refuses a duplicate open amount.
    const row = await db()('payment_gate_requests').where({ id: answers[0]!.body.request.id }).first();
    await expect(
      db()('payment_gate_requests').insert({ ...row, id: 'gate_01m7ycenb0y37det98dds34qjx' }),
    ).rejects.toThrow(/payment_gate_open_amount/);

    // A closed window releases its amount.
    const first = answers[0]!.body.request;
    await db()('payment_gate_requests')
      .where({ id: first.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const reuse = await prepare({ asset: 'USDC-ETH', baseAmount: '1000' });
    expect(reuse.status).toBe(201);
    expect(reuse.body.request.amount).toBe(first.amount);
    expect((await status(first.id).expect(200)).body.request.status).toBe('expired');
    expectProblem(await verify(first.id, `0x${'c'.repeat(64)}`), 409, 'gate_expired');

    const overview = await app.request.get(`${base}/status`).expect(200);
    expect(overview.body).toMatchObject({
      windowSeconds: 600,
      randomSpread: { min: 1, max: 6 },
      open: { 'USDC-ETH': 6, ETH: 1 },
    });
  });

  it('matches a transfer by its exact amount to the treasury', async () => {
    const res = await prepare({ asset: 'USDC-ETH', usdCents: 250 });
    expect(res.status).toBe(201);
    const request = res.body.request;
    expect(request.baseAmount).toBe('2500000');
    const amount = BigInt(request.amount);
    expect(amount > 2_500_000n && amount <= 2_500_006n).toBe(true);

    // Not yet final: pending, still open.
    const early = await chain.transferToken(usdc, payer, treasury, amount);
    const pending = await verify(request.id, early).expect(200);
    expect(pending.body.verification).toMatchObject({
      matched: false,
      status: 'pending',
      reason: 'too_few_confirmations',
    });
    await chain.mine(1);

    // A near miss is not a match.
    const off = await chain.transferToken(usdc, payer, treasury, amount + 1n);
    await chain.mine(1);
    const miss = await verify(request.id, off).expect(200);
    expect(miss.body.verification).toMatchObject({
      matched: false,
      status: 'mismatch',
      reason: 'amount_mismatch',
    });
    const elsewhere = await chain.transferToken(usdc, payer, stranger, amount);
    await chain.mine(1);
    expect((await verify(request.id, elsewhere).expect(200)).body.verification).toMatchObject({
      matched: false,
      reason: 'wrong_recipient',
    });
    expect((await status(request.id)).body.request.status).toBe('open');

    const hit = await verify(request.id, early).expect(200);
    expect(hit.body.verification).toMatchObject({ matched: true, status: 'matched' });
    expect(hit.body.request).toMatchObject({
      status: 'matched',
      txRef: early.toLowerCase(),
      payer: payer.toLowerCase(),
    });
    // Asking again answers the same; the transfer cannot match another request.
    expect((await verify(request.id, early).expect(200)).body.verification.matched).toBe(true);
    const other = (await prepare({ asset: 'USDC-ETH', usdCents: 250 })).body.request;
    expectProblem(await verify(other.id, early), 409, 'payment_already_claimed');
    expectProblem(await verify(request.id, off), 409, 'gate_already_matched');
    expect(await db()('payment_claims').where({ gate_request_id: request.id })).toHaveLength(1);
  });

  it('does not match a transfer made before the request, even of its exact amount', async () => {
    const request = (await prepare({ asset: 'ETH', baseAmount: '5000' })).body.request;
    expect(request.paymentInstructions).toMatchObject({
      scheme: 'eip-681',
      uri: `ethereum:${treasury}@1337?value=${request.amount}`,
      exactAmount: true,
    });
    await chain.setTime(new Date(Date.now() - 10 * 60_000));
    const old = await chain.sendEth(payer, treasury, BigInt(request.amount));
    await chain.setTime(new Date());
    await chain.mine(2);
    const answer = await verify(request.id, old).expect(200);
    expect(answer.body.verification).toMatchObject({
      matched: false,
      status: 'mismatch',
      reason: 'transfer_before_quote',
    });
    expect(answer.body.request.status).toBe('open');
    expect(await db()('payment_claims').where({ tx_ref: old.toLowerCase() })).toHaveLength(0);
    // Its amount is held in the reservation every kind of quote shares, until it is matched or expires.
    expect(await db()('payment_amounts').where({ owner: request.id, amount: request.amount })).toHaveLength(
      1,
    );
  });

  it('answers bad input with a problem and writes nothing', async () => {
    const cases: Array<[Record<string, unknown> | string, number, string]> = [
      [{ asset: 'USDC-ETH', baseAmount: '10', usdCents: 5 }, 400, 'validation_failed'],
      [{ asset: 'USDC-ETH' }, 400, 'validation_failed'],
      [{ asset: 'DOGE', baseAmount: '10' }, 400, 'validation_failed'],
      [{ asset: 'USDC-ETH', baseAmount: '-5' }, 400, 'validation_failed'],
      [{ asset: 'USDC-ETH', baseAmount: '10', memo: 'x' }, 400, 'validation_failed'],
      [{ asset: 'SOL', baseAmount: '10' }, 422, 'asset_unavailable'],
    ];
    const before = await count('payment_gate_requests');
    for (const [body, status, code] of cases)
      expectProblem(await prepare(body as Record<string, unknown>), status, code);
    expectProblem(await app.request.get(`${base}/status?requestId=nope`), 400, 'validation_failed');
    expectProblem(
      await app.request.get(`${base}/status?requestId=gate_01m7ycenb0y37det98dds34qjx`),
      404,
      'not_found',
    );
    expectProblem(await verify('gate_01m7ycenb0y37det98dds34qjx', `0x${'a'.repeat(64)}`), 404, 'not_found');
    const open = (await prepare({ asset: 'ETH', baseAmount: '77' })).body.request;
    expectProblem(await verify(open.id, 'not-a-hash'), 400, 'validation_failed');
    expect(await count('payment_gate_requests')).toBe(before + 1);
  });
});
