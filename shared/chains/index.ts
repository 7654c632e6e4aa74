// The chain adapter registry: one adapter per family, built from env; a family without an endpoint
// says so instead of failing.
import { env } from '../platform/env';
import type { Env } from '../platform/env';
import { treasuryFor } from './assets';
import type { Asset, AssetSettings, ChainFamily } from './assets';
import { createBitcoinAdapter } from './bitcoin';
import { createEvmAdapter } from './evm';
import { createMoneroAdapter } from './monero';
import { createSolanaAdapter } from './solana';
import type { MoneroAdapter } from './monero';
import type { Balance, ChainAdapter } from './types';

export type {
  Balance,
  ChainAdapter,
  TransferBinding,
  VerifyRequest,
  VerifyResult,
  VerifyStatus,
  VerifyReason,
} from './types';

export type ChainSettings = Pick<
  Env,
  | 'SOLANA_RPC_URL'
  | 'EVM_RPC_URL'
  | 'BITCOIN_ESPLORA_URL'
  | 'MONERO_WALLET_RPC_URL'
  | 'SOLANA_TOKEN_ACCOUNTS'
  | 'EVM_CONFIRMATIONS'
  | 'BITCOIN_CONFIRMATIONS'
  | 'MONERO_CONFIRMATIONS'
  | 'CHAIN_RPC_TIMEOUT_MS'
  | 'CHAIN_RPC_RETRIES'
  | 'EVM_RPC_BATCH_MAX'
  | 'TREASURY_MONERO'
>;

export type AdapterLookup =
  | { configured: true; adapter: ChainAdapter }
  | { configured: false; reason: 'adapter_unconfigured'; detail: string };

const endpointVariable: Record<ChainFamily, keyof ChainSettings> = {
  solana: 'SOLANA_RPC_URL',
  evm: 'EVM_RPC_URL',
  bitcoin: 'BITCOIN_ESPLORA_URL',
  monero: 'MONERO_WALLET_RPC_URL',
};

const built = new WeakMap<object, Map<ChainFamily, ChainAdapter>>();

/** The adapter of a chain family, or why there is none (its endpoint variable is unset). */
export function adapterFor(family: ChainFamily, settings: ChainSettings = env): AdapterLookup {
  let perSettings = built.get(settings);
  if (!perSettings) built.set(settings, (perSettings = new Map()));
  const cached = perSettings.get(family);
  if (cached) return { configured: true, adapter: cached };

  const rpc = { timeoutMs: settings.CHAIN_RPC_TIMEOUT_MS, retries: settings.CHAIN_RPC_RETRIES };
  let adapter: ChainAdapter | undefined;
  switch (family) {
    case 'solana':
      if (settings.SOLANA_RPC_URL) {
        adapter = createSolanaAdapter({
          ...rpc,
          rpcUrl: settings.SOLANA_RPC_URL,
          tokenAccounts: settings.SOLANA_TOKEN_ACCOUNTS?.split(',') ?? [],
        });
      }
      break;
    case 'evm':
      if (settings.EVM_RPC_URL) {
        adapter = createEvmAdapter({
          ...rpc,
          rpcUrl: settings.EVM_RPC_URL,
          confirmations: settings.EVM_CONFIRMATIONS,
          maxBatch: settings.EVM_RPC_BATCH_MAX,
        });
      }
      break;
    case 'bitcoin':
      if (settings.BITCOIN_ESPLORA_URL) {
        adapter = createBitcoinAdapter({
          ...rpc,
          esploraUrl: settings.BITCOIN_ESPLORA_URL,
          confirmations: settings.BITCOIN_CONFIRMATIONS,
        });
      }
      break;
    case 'monero':
      if (settings.MONERO_WALLET_RPC_URL) {
        adapter = createMoneroAdapter({
          ...rpc,
          walletRpcUrl: settings.MONERO_WALLET_RPC_URL,
          confirmations: settings.MONERO_CONFIRMATIONS,
          ...(settings.TREASURY_MONERO ? { treasury: settings.TREASURY_MONERO } : {}),
        });
      }
      break;
  }
  if (!adapter) {
    const variable = endpointVariable[family];
    return {
      configured: false,
      reason: 'adapter_unconfigured',
      detail: `${variable} is not set; ${family} payments cannot be verified.`,
    };
  }
  perSettings.set(family, adapter);
  return { configured: true, adapter };
}

export type BalanceLookup =
  | ({ available: true } & Balance)
  | {
      available: false;
      asset: Asset['id'];
      reason: 'no_treasury' | 'adapter_unconfigured' | 'unsupported' | 'rpc_unreachable';
      detail: string;
    };

/** The treasury's balance in one asset, for the treasury status route; never throws for chain trouble. */
export async function treasuryBalance(
  asset: Asset,
  settings: ChainSettings & AssetSettings = env,
): Promise<BalanceLookup> {
  const address = treasuryFor(asset.family, settings);
  if (!address)
    return {
      available: false,
      asset: asset.id,
      reason: 'no_treasury',
      detail: `No ${asset.family} treasury is set.`,
    };
  const lookup = adapterFor(asset.family, settings);
  if (!lookup.configured)
    return { available: false, asset: asset.id, reason: 'adapter_unconfigured', detail: lookup.detail };
  if (!lookup.adapter.readBalance) {
    return {
      available: false,
      asset: asset.id,
      reason: 'unsupported',
      detail: `${asset.family} balances are not read.`,
    };
  }
  try {
    return { available: true, ...(await lookup.adapter.readBalance(address, asset)) };
  } catch (err) {
    return { available: false, asset: asset.id, reason: 'rpc_unreachable', detail: (err as Error).message };
  }
}

/**
 * The CAIP-2 network a family's endpoint serves, for offering assets: waits at most `waitMs` for an
 * answer not known yet (the ask goes on, and a later call sees it). Undefined when the family has no
 * endpoint, or it did not answer in time: payments then wait, they are never settled blind.
 */
export async function endpointNetwork(
  family: ChainFamily,
  settings: ChainSettings = env,
  waitMs = 1500,
): Promise<string | undefined> {
  const lookup = adapterFor(family, settings);
  if (!lookup.configured) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), waitMs);
  });
  try {
    return await Promise.race([lookup.adapter.network().catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The Monero adapter, which also hands out subaddresses, when MONERO_WALLET_RPC_URL is set. */
export function moneroWallet(settings: ChainSettings = env): MoneroAdapter | undefined {
  const lookup = adapterFor('monero', settings);
  return lookup.configured ? (lookup.adapter as MoneroAdapter) : undefined;
}
