// Development chains: networks whose coins anyone mints for free. `npm start`'s local chain (chain id
// 1337) and the other local nodes' defaults (31337) are never real money: a payment settled on one is
// marked as such (payments.development) and never counted as revenue.
import type { Env } from '../platform/env';
import { listAssets } from './assets';

/** The CAIP-2 ids of the local EVM nodes: ganache and npm start's chain (1337), hardhat and anvil (31337). */
export const LOCAL_CHAIN_NETWORKS = ['eip155:1337', 'eip155:31337'] as const;

/**
 * The networks this process settles development money on: while it runs on `npm start`'s chain
 * (EVM_DEVNET, refused in production), the networks its EVM assets were moved to, and the local
 * nodes' ids. Empty otherwise: a deployment that configures a chain of its own is taken at its word.
 */
export function developmentNetworks(settings: Pick<Env, 'EVM_DEVNET' | 'ASSETS_JSON'>): string[] {
  if (!settings.EVM_DEVNET) return [];
  const moved = listAssets(settings)
    .filter((a) => a.family === 'evm')
    .map((a) => a.network);
  return [...new Set([...LOCAL_CHAIN_NETWORKS, ...moved])].filter((n) => n !== 'eip155:1');
}
