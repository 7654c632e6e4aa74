// x402 from the first start: the development chain `npm start` provisions (provisionDevnet, the same
// code devnet-main runs, here against ganache on loopback) comes with a funded settler gas key, and the
// settings npm start hands web and worker (devnetChildEnv) make the service settle x402 with it. An
// unmodified @x402/fetch client with the demo payer's key pays a priced job in one call, once the demo
// token is opted in to its spendControls as the README shows; without that opt-in it pays nothing. A
// settler configured by the operator (a facilitator, or a key of its own) is left as it is.
import { readFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, describe, expect, it } from 'vitest';
import { demoTokenBalance } from '../../dev/chain/token';
import { devnetChildEnv, devnetPaths, provisionDevnet } from '../../dev/stack/devnet';
import { env, parseEnv } from '../../shared/platform/env';
import { startChain } from '../payments/ganache';

const chain = await startChain(1337);
const dataDir = mkdtempSync(join(tmpdir(), 'px-x402-devnet-'));
const info = await provisionDevnet({ dataDir, rpcUrl: chain.url });
const childEnv = devnetChildEnv(info, undefined);
Object.assign(process.env, childEnv, {
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '2000',
  PAYMENT_RECHECK_MS: '100',
  PAYMENT_RECHECK_MAX_MS: '300',
});
// The settings are read once, and provisioning the chain (dev/stack/devnet.ts) read them already: they
// are read again here, as a process npm start starts reads them, before the service's modules load.
Object.assign(env, parseEnv(process.env));

const { sha256Of, waitForJob } = await import('../helpers');
const { paidStack } = await import('../payments/x402-stack');

const stack = paidStack(async () => {
  await chain.close();
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const payer = privateKeyToAccount(readFileSync(info.payerKeyFile, 'utf8').trim() as Hex);
const balance = (who: `0x${string}`) => demoTokenBalance(chain.url, info.token.address, who);
const batch = async () => ({
  service: 'attest.batch',
  input: { digests: [await sha256Of(`devnet x402 ${Math.random()}`)] },
});
const post = (f: typeof fetch, body: unknown) =>
  f(`${stack.base}/api/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('x402 on the development chain', () => {
  it('provisions a funded settler whose key only the settings carry', async () => {
    expect(info.settler).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const key = readFileSync(devnetPaths(dataDir).settlerKey, 'utf8').trim();
    expect(statSync(devnetPaths(dataDir).settlerKey).mode & 0o777).toBe(0o600);
    expect(privateKeyToAccount(key as Hex).address).toBe(info.settler);
    expect(childEnv.X402_EVM_SETTLER_KEY).toBe(key);
    expect(BigInt(await chain.rpc<string>('eth_getBalance', [info.settler, 'latest']))).toBeGreaterThan(0n);
    expect(readFileSync(devnetPaths(dataDir).info, 'utf8')).not.toContain(key.slice(2));
    // An operator's own settler is left as it is.
    expect(devnetChildEnv(info, undefined, { facilitatorUrl: 'https://x402.example' })).not.toHaveProperty(
      'X402_EVM_SETTLER_KEY',
    );
    expect(devnetChildEnv(info, undefined, { settlerKey: `0x${'1'.repeat(64)}` })).not.toHaveProperty(
      'X402_EVM_SETTLER_KEY',
    );
  });

  it('answers a priced job with a 402 that offers the demo token (never an empty accepts)', async () => {
    const res = await post(fetch, await batch());
    expect(res.status).toBe(402);
    const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    expect(required.accepts.length).toBeGreaterThan(0);
    expect(required.accepts[0]).toMatchObject({
      scheme: 'exact',
      network: 'eip155:1337',
      asset: info.token.address,
      payTo: info.treasury,
    });
  });

  it('is paid in one call by an unmodified @x402/fetch client that opts the demo token in', async () => {
    const client = new x402Client().register('eip155:1337', new ExactEvmScheme(payer));
    // The demo token is no default asset of x402 clients: it is allowed by name, as the README shows.
    client.setSpendControls({ allowedAssets: [{ network: 'eip155:1337', asset: info.token.address }] });
    const pay = wrapFetchWithPayment(fetch, client);
    const before = await balance(info.treasury);
    const res = await pay(`${stack.base}/api/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(await batch()),
    });
    const reply = (await res.json()) as { job: { id: string }; accessToken: string };
    expect(res.status, JSON.stringify(reply)).toBe(202);
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settled.success).toBe(true);
    const tx = (await chain.rpc<{ from: string }>('eth_getTransactionByHash', [settled.transaction]))!;
    expect(tx.from.toLowerCase()).toBe(info.settler!.toLowerCase());
    expect(await balance(info.treasury)).toBeGreaterThan(before);
    const job = await waitForJob(stack.app.request, reply.job.id, reply.accessToken);
    expect(job.status).toBe('succeeded');
  });

  it('shows an A2A task its x402 requirements, the same as the 402 offers', async () => {
    const res = await fetch(`${stack.base}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ data: await batch() }] },
        },
      }),
    });
    const task = (
      (await res.json()) as {
        result: {
          task: { status: { state: string; message: { metadata: Record<string, { accepts: unknown[] }> } } };
        };
      }
    ).result.task;
    expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const meta = task.status.message.metadata;
    expect(meta['x402.payment.status']).toBe('payment-required');
    expect(meta['x402.payment.required']!.accepts).toHaveLength(1);
    expect(meta['x402.payment.required']!.accepts[0]).toMatchObject({
      scheme: 'exact',
      network: 'eip155:1337',
      asset: info.token.address,
      payTo: info.treasury,
    });
  });

  it('pays nothing for a client that has not opted the demo token in', async () => {
    const client = new x402Client().register('eip155:1337', new ExactEvmScheme(payer));
    const pay = wrapFetchWithPayment(fetch, client);
    const before = await balance(info.treasury);
    await expect(post(pay, await batch())).rejects.toThrow(/spendControls/);
    expect(await balance(info.treasury)).toBe(before);
    expect(
      await stack.app.deps.db('x402_settlements').where({ status: 'settled' }).count({ n: '*' }),
    ).toEqual([{ n: '1' }]);
  });
});
