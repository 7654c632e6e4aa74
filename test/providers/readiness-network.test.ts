// Readiness asks each configured chain endpoint which network it serves: a local node (chain id 1337)
// behind Ethereum mainnet assets answers, but is the wrong chain, so the web is not ready and says so,
// before any paid job finds out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChain } from '../payments/ganache';
import type { TestApp } from '../helpers';

const chain = await startChain(1337);
const [, treasury] = chain.accounts as [string, string];
// Mainnet assets (the registry's own networks) on a local node's endpoint.
Object.assign(process.env, {
  EVM_RPC_URL: chain.url,
  TREASURY_EVM: treasury,
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '2000',
});

const { testApp } = await import('../helpers');
const { parseEnv } = await import('../../shared/platform/env');
const { chainNetworkReadiness } = await import('../../shared/providers/probes');

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  await app.close();
  await chain.close();
});

describe('chain networks in readiness', () => {
  it('is not ready while the EVM endpoint serves another network than its assets', async () => {
    const res = await app.request.get('/api/v1/readiness').expect(503);
    expect(res.body.ready).toBe(false);
    // It answers: the endpoint is reachable, and still the wrong chain.
    expect(res.body.checks.chainAdapters.ok).toBe(true);
    expect(res.body.checks.chainNetworks).toEqual({
      ok: false,
      detail: 'evm: the endpoint serves eip155:1337, its assets need eip155:1',
    });
    // The public answer names networks, never the endpoint.
    expect(JSON.stringify(res.body)).not.toContain(new URL(chain.url).port);
  });

  it('lists each endpoint that fails, one clause per chain', async () => {
    // The EVM node on the wrong chain, and a Solana endpoint that is no Solana node (it cannot say its
    // genesis): both are named, in one not-ready answer.
    const settings = parseEnv({
      EVM_RPC_URL: chain.url,
      TREASURY_EVM: treasury,
      SOLANA_RPC_URL: chain.url,
      TREASURY_SOLANA: 'BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe',
      CHAIN_RPC_RETRIES: '0',
      PROVIDER_TIMEOUT_MS: '2000',
    });
    const readiness = await chainNetworkReadiness(settings);
    expect(readiness.ok).toBe(false);
    expect(readiness.detail.split('; ').sort()).toEqual([
      'evm: the endpoint serves eip155:1337, its assets need eip155:1',
      'solana: the endpoint did not say which network it serves',
    ]);
  });

  it('passes when the assets are on the network the endpoint serves, naming those left elsewhere', async () => {
    const settings = parseEnv({
      EVM_RPC_URL: chain.url,
      TREASURY_EVM: treasury,
      ASSETS_JSON: JSON.stringify({
        ETH: { network: 'eip155:1337' },
        'USDC-ETH': { network: 'eip155:1337' },
      }),
    });
    expect(await chainNetworkReadiness(settings)).toEqual({
      ok: true,
      detail: 'evm eip155:1337 (WBTC-ETH on another network, not offered)',
    });
    // No endpoint configured: nothing to ask.
    expect(await chainNetworkReadiness(parseEnv({}))).toEqual({
      ok: true,
      detail: 'no chain endpoint settles an enabled asset',
    });
  });
});
