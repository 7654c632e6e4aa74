// A paying exchange for tests: a local EVM node with a USDC token, the env that names it and the
// treasury, and a real in-process payments worker. Loads no configuration until the env is set.
import { startChain } from '../payments/ganache';
import type { Chain } from '../payments/ganache';
import type { TestApp, TestWorker } from '../helpers';

export interface PaidChain {
  chain: Chain;
  /** Holds the whole token supply and ETH. */
  payer: string;
  treasury: string;
  usdc: string;
}

/**
 * Starts the node and sets the env for it: call before any module that parses the env is imported
 * (import those dynamically afterwards). ETH and USDC-ETH are enabled, confirmed after 2 blocks.
 */
export async function startPaidChain(): Promise<PaidChain> {
  const chain = await startChain(1337);
  const [payer, treasury] = chain.accounts as [string, string];
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
    RATES_USD: 'ETH=2000',
    PAYMENT_RECHECK_MS: '100',
    PAYMENT_RECHECK_MAX_MS: '300',
  });
  return { chain, payer, treasury, usdc };
}

/** A real `payments` worker in this process, on this file's queue prefix. */
export async function testPaymentsWorker(app: TestApp): Promise<TestWorker> {
  const { testQueueWorker } = await import('../helpers');
  const { paymentsProcessor } = await import('../../workers/processors/payments');
  return testQueueWorker('payments', (db) => paymentsProcessor(db, app.deps.queues));
}
