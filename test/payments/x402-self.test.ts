// x402 settled by the service itself (X402_EVM_SETTLER_KEY, no facilitator): an unmodified @x402/fetch
// client pays a job in one call; the settling transaction's hash is recorded before it is broadcast;
// the job runs and its receipt verifies; a replay settles nothing; an intent whose authorization
// expired without ever running ends `failed` on the sweeper's pass.
import { describe, expect, it } from 'vitest';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { parseEther } from 'viem';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { demoTokenBalance, deployDemoToken, mintDemoToken } from '../../dev/chain/token';
import { startChain } from './ganache';
import type { Chain } from './ganache';

const chain: Chain = await startChain(1337);
const [deployer, treasury, gasFunder] = chain.accounts as [Address, Address, Address];
// A token with a domain of its own, configured through ASSETS_JSON.
const token = await deployDemoToken(
  { rpcUrl: chain.url, account: deployer },
  { name: 'Devnet Dollar', version: '7' },
);
const payer = privateKeyToAccount(generatePrivateKey());
await mintDemoToken({ rpcUrl: chain.url, account: deployer }, token.address, payer.address, 10_000_000n);
const settlerKey = generatePrivateKey();
const settler = privateKeyToAccount(settlerKey).address;
await chain.sendEth(gasFunder, settler, parseEther('5'));

Object.assign(process.env, {
  EVM_RPC_URL: chain.url,
  EVM_CONFIRMATIONS: '1',
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '2000',
  TREASURY_EVM: treasury,
  ASSETS_JSON: JSON.stringify({
    ETH: { disabled: true },
    'WBTC-ETH': { disabled: true },
    'USDC-ETH': {
      network: 'eip155:1337',
      contract: token.address,
      eip712: { name: 'Devnet Dollar', version: '7' },
    },
  }),
  PAYMENT_RECHECK_MS: '100',
  PAYMENT_RECHECK_MAX_MS: '300',
  X402_EVM_SETTLER_KEY: settlerKey,
});

const { sha256Of, waitForJob } = await import('../helpers');
const { paidStack } = await import('./x402-stack');
const { verifyReceipt } = await import('../../shared/payments/receipts');
const { recoverX402Settlements } = await import('../../shared/payments/x402/recover');
const { selfSettler } = await import('../../shared/payments/x402/settle');

const stack = paidStack(async () => {
  await chain.close();
});

const db = () => stack.app.deps.db;
// The sweeper's next pass, a second on: rows Postgres stamped with its own clock (microseconds) in
// the last millisecond are then already behind it.
const nextTick = () => ({ graceMs: 0, now: new Date(Date.now() + 1_000) });
const balance = (who: Address) => demoTokenBalance(chain.url, token.address, who);

describe('self-settlement with the service gas key', () => {
  it('pays a job in one call from an unmodified client, the hash written before broadcast', async () => {
    const seen: Request[] = [];
    const client = new x402Client().register('eip155:1337', new ExactEvmScheme(payer));
    client.setSpendControls({
      allowedAssets: [{ network: 'eip155:1337', asset: token.address, maxAmountPerPayment: '10000000' }],
    });
    const pay = wrapFetchWithPayment(async (input: string | URL | Request, init?: RequestInit) => {
      const request = new Request(input, init);
      seen.push(request.clone());
      return fetch(request);
    }, client);
    const body = { service: 'attest.batch', input: { digests: [await sha256Of(`self ${Math.random()}`)] } };
    const settlerEth = await chain.rpc<string>('eth_getBalance', [settler, 'latest']);

    const res = await pay(`${stack.base}/api/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const reply = (await res.json()) as { job: { id: string }; accessToken: string };
    expect(res.status, JSON.stringify(reply)).toBe(202);
    expect(seen).toHaveLength(2);
    // The paid reply is the only one the client sees: it carries a token of the job.
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settled.success).toBe(true);

    // The service's account paid the gas; the payer's tokens went to the treasury, not to it.
    expect(BigInt(await chain.rpc<string>('eth_getBalance', [settler, 'latest']))).toBeLessThan(
      BigInt(settlerEth),
    );
    const [quote] = await db()('quotes').where({ job_id: reply.job.id, asset: 'USDC-ETH' });
    expect(await balance(treasury)).toBe(BigInt(quote.amount));
    expect(await balance(settler)).toBe(0n);
    const tx = (await chain.rpc<{ from: string }>('eth_getTransactionByHash', [settled.transaction]))!;
    expect(tx.from.toLowerCase()).toBe(settler.toLowerCase());

    const [row] = await db()('x402_settlements').where({ job_id: reply.job.id });
    expect(row).toMatchObject({
      status: 'settled',
      settler: 'self',
      tx_hash: settled.transaction.toLowerCase(),
    });
    const job = await waitForJob(stack.app.request, reply.job.id, reply.accessToken);
    expect(job.status).toBe('succeeded');
    const { receipt } = (await stack.app.request.get(new URL(job.links.receipt!).pathname).expect(200)).body;
    const { publicKey } = (await stack.app.request.get('/api/health').expect(200)).body.signingKey;
    expect(verifyReceipt(receipt, publicKey)).toBe(true);
    expect(receipt.transaction.txRef).toBe(settled.transaction.toLowerCase());

    // The same signature again: refused, nothing moves.
    const treasuryAfter = await balance(treasury);
    const replay = await fetch(`${stack.base}/api/jobs`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'PAYMENT-SIGNATURE': seen[1]!.headers.get('payment-signature')!,
      },
      body: JSON.stringify(body),
    });
    expect(replay.status).toBe(409);
    const refused = await replay.text();
    expect((JSON.parse(refused) as { code: string }).code).toBe('payment_signature_used');
    expect(refused).not.toMatch(/jt_/);
    expect(await balance(treasury)).toBe(treasuryAfter);
    expect(await db()('payments').where({ job_id: reply.job.id })).toHaveLength(1);
  });

  it('ends an intent whose authorization expired without running as failed, paying nothing', async () => {
    const created = await stack.app.request
      .post('/api/jobs')
      .send({ service: 'attest.batch', input: { digests: [await sha256Of(`stale ${Math.random()}`)] } })
      .expect(402);
    const [quote] = await db()('quotes').where({ job_id: created.body.job.id, asset: 'USDC-ETH' });
    const key = {
      network: 'eip155:1337',
      token: token.address.toLowerCase(),
      payer: payer.address.toLowerCase(),
      nonce: `0x${'ab'.repeat(32)}`,
    };
    // As a process that died after writing the intent and before broadcasting leaves it.
    await db()('x402_settlements').insert({
      ...key,
      job_id: created.body.job.id,
      quote_id: quote.id,
      payload_hash: 'x',
      status: 'settling',
      settler: 'self',
      tx_hash: `0x${'cd'.repeat(32)}`,
      valid_before: new Date(Date.now() - 10 * 60_000),
    });
    expect(await recoverX402Settlements(db(), stack.app.deps.queues, nextTick())).toEqual({
      paid: 0,
      failed: 1,
    });
    const [row] = await db()('x402_settlements').where(key);
    expect(row).toMatchObject({ status: 'failed', error: 'authorization_expired_unused' });
    expect(await db()('payments').where({ job_id: created.body.job.id })).toHaveLength(0);
    expect(
      (
        await stack.app.request
          .get(`/api/jobs/${created.body.job.id}`)
          .set('Authorization', `Bearer ${created.body.accessToken}`)
          .expect(200)
      ).body.job.status,
    ).toBe('awaiting_payment');
  });

  it('knows the transaction hash before the node does: the intent can name it before broadcast', async () => {
    const created = await stack.app.request
      .post('/api/jobs')
      .send({ service: 'attest.batch', input: { digests: [await sha256Of(`hook ${Math.random()}`)] } })
      .expect(402);
    const required = decodePaymentRequiredHeader(created.headers['payment-required']!);
    const client = new x402Client().register('eip155:1337', new ExactEvmScheme(payer));
    client.setSpendControls({ allowedAssets: true });
    const payload = await client.createPaymentPayload(required);
    let known: unknown = 'not called';
    let hooked: string | undefined;
    const result = await selfSettler(settlerKey, chain.url, 10_000).settle(
      payload,
      required.accepts[0]!,
      async (hash) => {
        hooked = hash;
        known = await chain.rpc('eth_getTransactionByHash', [hash]);
      },
    );
    expect(result.success).toBe(true);
    expect(hooked).toBe(result.transaction);
    expect(known).toBeNull();

    // That transfer went out beside the service's records. Written down as a settlement reported
    // failed, it is still watched until its authorization expires: the sweeper's pass finds the
    // AuthorizationUsed event and credits the job with it, once.
    const auth = (payload.payload as { authorization: { from: string; nonce: string; validBefore: string } })
      .authorization;
    const [quote] = await db()('quotes').where({ job_id: created.body.job.id, asset: 'USDC-ETH' });
    await db()('x402_settlements').insert({
      network: 'eip155:1337',
      token: token.address.toLowerCase(),
      payer: auth.from.toLowerCase(),
      nonce: auth.nonce.toLowerCase(),
      job_id: created.body.job.id,
      quote_id: quote.id,
      payload_hash: 'x',
      status: 'failed',
      settler: 'self',
      error: 'transaction_failed',
      valid_before: new Date(Number(auth.validBefore) * 1000),
    });
    expect(await recoverX402Settlements(db(), stack.app.deps.queues, nextTick())).toEqual({
      paid: 1,
      failed: 0,
    });
    // Settled by the sweeper, not by a request: no payer token was made, the creator's opens the job.
    expect((await db()('jobs').where({ id: created.body.job.id }).first()).payer_access_hash).toBeNull();
    expect((await waitForJob(stack.app.request, created.body.job.id, created.body.accessToken)).status).toBe(
      'succeeded',
    );
    const [payment] = await db()('payments').where({ job_id: created.body.job.id });
    expect(payment).toMatchObject({ status: 'confirmed', tx_ref: result.transaction.toLowerCase() });
    expect(await recoverX402Settlements(db(), stack.app.deps.queues, nextTick())).toEqual({
      paid: 0,
      failed: 0,
    });
  });
});
