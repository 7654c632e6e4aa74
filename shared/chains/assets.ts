// The registry of payable assets: nine built in, each overridable by ASSETS_JSON, enabled only where
// its chain family has a treasury address.
import { z } from 'zod';
import { env } from '../platform/env';
import type { Env } from '../platform/env';

export const chainFamilies = ['solana', 'evm', 'bitcoin', 'monero'] as const;
export type ChainFamily = (typeof chainFamilies)[number];

export const assetIds = [
  'USDC-SOL',
  'USDC-ETH',
  'SOL',
  'ETH',
  'BTC',
  'WBTC-ETH',
  'XMR',
  'USDT-SOL',
  'PYUSD-SOL',
] as const;
export type AssetId = (typeof assetIds)[number];

export interface Asset {
  id: AssetId;
  /** Ticker shown to payers. */
  symbol: string;
  name: string;
  family: ChainFamily;
  /** CAIP-2 chain id, as x402 payment requirements name the network. */
  network: string;
  /** Base units per whole coin are 10^decimals. */
  decimals: number;
  /** SPL mint or ERC-20 contract; absent for a chain's native coin. */
  contract?: string;
  /** Solana token program owning the mint (classic SPL Token or Token-2022). */
  tokenProgram?: string;
  /** Pegged 1:1 to the US dollar, so quotes need no rate. */
  stable: boolean;
  /** Symbol whose USD price converts quotes for non-stable assets (WBTC is priced as BTC). */
  rateSymbol?: string;
  /**
   * Where quotes are told apart by amount (EVM; Bitcoin without an xpub): the random offset added to
   * the price is 1 to this many base units. Sized so the offset stays worth about a cent or less.
   */
  amountSpread?: number;
  /**
   * The EIP-712 domain (name, version) of a token's EIP-3009 `transferWithAuthorization`: set only for
   * tokens that implement it, which x402's `exact` scheme can then pay (it is in the requirement's
   * `extra`, the payer signs over it).
   */
  eip712?: { name: string; version: string };
  /** Turned off by configuration. */
  disabled?: boolean;
}

export const SPL_TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
export const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';

// CAIP-2 ids. Monero has no registered CAIP namespace; bip122's convention (the first 16 bytes of
// the genesis block hash) is followed so the id is still unambiguous.
export const networks = {
  solanaMainnet: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
  ethereumMainnet: 'eip155:1',
  bitcoinMainnet: 'bip122:000000000019d6689c085ae165831e93',
  moneroMainnet: 'monero:418015bb9ae982a1975da7d79277c270',
} as const;

const builtIn: readonly Asset[] = [
  {
    id: 'USDC-SOL',
    symbol: 'USDC',
    name: 'USD Coin on Solana',
    family: 'solana',
    network: networks.solanaMainnet,
    decimals: 6,
    contract: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    tokenProgram: SPL_TOKEN_PROGRAM,
    stable: true,
  },
  {
    id: 'USDC-ETH',
    symbol: 'USDC',
    name: 'USD Coin on Ethereum',
    family: 'evm',
    network: networks.ethereumMainnet,
    decimals: 6,
    contract: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
    stable: true,
    amountSpread: 9_999,
    // FiatTokenV2's domain on Ethereum mainnet.
    eip712: { name: 'USD Coin', version: '2' },
  },
  {
    id: 'SOL',
    symbol: 'SOL',
    name: 'Solana',
    family: 'solana',
    network: networks.solanaMainnet,
    decimals: 9,
    stable: false,
    rateSymbol: 'SOL',
  },
  {
    id: 'ETH',
    symbol: 'ETH',
    name: 'Ether',
    family: 'evm',
    network: networks.ethereumMainnet,
    decimals: 18,
    stable: false,
    rateSymbol: 'ETH',
    amountSpread: 999_999_999,
  },
  {
    id: 'BTC',
    symbol: 'BTC',
    name: 'Bitcoin',
    family: 'bitcoin',
    network: networks.bitcoinMainnet,
    decimals: 8,
    stable: false,
    rateSymbol: 'BTC',
    amountSpread: 999,
  },
  {
    id: 'WBTC-ETH',
    symbol: 'WBTC',
    name: 'Wrapped Bitcoin on Ethereum',
    family: 'evm',
    network: networks.ethereumMainnet,
    decimals: 8,
    contract: '0x2260FAC5E5542a773Aa44fBCfeDf7C193bc2C599',
    stable: false,
    rateSymbol: 'BTC',
    amountSpread: 999,
  },
  {
    id: 'XMR',
    symbol: 'XMR',
    name: 'Monero',
    family: 'monero',
    network: networks.moneroMainnet,
    decimals: 12,
    stable: false,
    rateSymbol: 'XMR',
  },
  {
    id: 'USDT-SOL',
    symbol: 'USDT',
    name: 'Tether USD on Solana',
    family: 'solana',
    network: networks.solanaMainnet,
    decimals: 6,
    contract: 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB',
    tokenProgram: SPL_TOKEN_PROGRAM,
    stable: true,
  },
  {
    id: 'PYUSD-SOL',
    symbol: 'PYUSD',
    name: 'PayPal USD on Solana',
    family: 'solana',
    network: networks.solanaMainnet,
    decimals: 6,
    contract: '2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo',
    tokenProgram: TOKEN_2022_PROGRAM,
    stable: true,
  },
];

const base58Address = z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, 'a base58 address');
const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'a 0x-prefixed 20-byte hex address');

const overrideSchema = z
  .object({
    name: z.string().min(1).optional(),
    symbol: z.string().min(1).optional(),
    network: z
      .string()
      .regex(/^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/, 'a CAIP-2 chain id')
      .optional(),
    decimals: z.number().int().min(0).max(36).optional(),
    contract: z.string().optional(),
    tokenProgram: base58Address.optional(),
    rateSymbol: z
      .string()
      .regex(/^[A-Z0-9]+$/)
      .optional(),
    amountSpread: z.number().int().min(1).max(1_000_000_000_000).optional(),
    /** The token's EIP-3009 EIP-712 domain; null: the token does not implement EIP-3009. */
    eip712: z
      .object({ name: z.string().min(1).max(100), version: z.string().min(1).max(20) })
      .strict()
      .nullable()
      .optional(),
    disabled: z.boolean().optional(),
  })
  .strict();
const overridesSchema = z.partialRecord(z.enum(assetIds), overrideSchema);

export class AssetConfigError extends Error {
  constructor(detail: string) {
    super(`ASSETS_JSON: ${detail}`);
    this.name = 'AssetConfigError';
  }
}

export type AssetSettings = Pick<
  Env,
  | 'ASSETS_JSON'
  | 'TREASURY_SOLANA'
  | 'TREASURY_EVM'
  | 'TREASURY_BITCOIN'
  | 'TREASURY_BITCOIN_XPUB'
  | 'TREASURY_MONERO'
>;

const cache = new Map<string, readonly Asset[]>();

/** The nine assets with ASSETS_JSON applied; a malformed override throws AssetConfigError. */
export function listAssets(settings: Pick<AssetSettings, 'ASSETS_JSON'> = env): readonly Asset[] {
  const key = settings.ASSETS_JSON ?? '';
  const hit = cache.get(key);
  if (hit) return hit;
  const assets = applyOverrides(key);
  cache.set(key, assets);
  return assets;
}

function applyOverrides(json: string): readonly Asset[] {
  if (!json) return builtIn;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new AssetConfigError('not valid JSON');
  }
  const parsed = overridesSchema.safeParse(raw);
  if (!parsed.success) {
    throw new AssetConfigError(
      parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  }
  return builtIn.map((asset) => {
    const o = parsed.data[asset.id];
    if (!o) return asset;
    const { eip712, ...rest } = o;
    const merged: Asset = { ...asset, ...rest };
    if (eip712 === null) delete merged.eip712;
    else if (eip712 !== undefined) {
      if (asset.family !== 'evm' || !asset.contract)
        throw new AssetConfigError(`${asset.id}.eip712: only an EVM token has an EIP-712 domain`);
      merged.eip712 = eip712;
    }
    if (o.contract !== undefined) {
      if (!asset.contract) throw new AssetConfigError(`${asset.id}: a native coin has no contract`);
      const check = asset.family === 'evm' ? evmAddress : base58Address;
      if (!check.safeParse(o.contract).success)
        throw new AssetConfigError(`${asset.id}.contract: not an address`);
    }
    return Object.freeze(merged);
  });
}

/** The built-in entry of an asset id, whatever ASSETS_JSON says today (family, symbol, name). */
export function builtInAsset(id: string): Asset | undefined {
  return builtIn.find((a) => a.id === id);
}

/** One asset by id (overrides applied), or undefined for an unknown id. */
export function findAsset(id: string, settings: Pick<AssetSettings, 'ASSETS_JSON'> = env): Asset | undefined {
  return listAssets(settings).find((a) => a.id === id);
}

/** The configured treasury address of a chain family, if any. */
export function treasuryFor(family: ChainFamily, settings: AssetSettings = env): string | undefined {
  switch (family) {
    case 'solana':
      return settings.TREASURY_SOLANA;
    case 'evm':
      return settings.TREASURY_EVM;
    case 'bitcoin':
      return settings.TREASURY_BITCOIN;
    case 'monero':
      return settings.TREASURY_MONERO;
  }
}

export type AssetStatus =
  /** payTo is absent where every quote gets an address of its own (Bitcoin from an xpub only). */
  | { asset: Asset; enabled: true; payTo?: string }
  | {
      asset: Asset;
      enabled: false;
      reason: 'no_treasury' | 'disabled_by_config' | 'wrong_network';
      detail: string;
    };

/** Whether a family can receive at all: an address, or (Bitcoin) an account key to derive them from. */
export function canReceive(family: ChainFamily, settings: AssetSettings = env): boolean {
  return !!treasuryFor(family, settings) || (family === 'bitcoin' && !!settings.TREASURY_BITCOIN_XPUB);
}

const treasuryVariable: Record<ChainFamily, string> = {
  solana: 'TREASURY_SOLANA',
  evm: 'TREASURY_EVM',
  bitcoin: 'TREASURY_BITCOIN (or TREASURY_BITCOIN_XPUB)',
  monero: 'TREASURY_MONERO',
};

/** Every asset with whether it can be paid in and, if not, why (for discovery and treasury routes). */
export function assetStatus(settings: AssetSettings = env): AssetStatus[] {
  return listAssets(settings).map((asset): AssetStatus => {
    if (asset.disabled) {
      return {
        asset,
        enabled: false,
        reason: 'disabled_by_config',
        detail: `${asset.id} is disabled by ASSETS_JSON.`,
      };
    }
    const payTo = treasuryFor(asset.family, settings);
    if (!canReceive(asset.family, settings)) {
      return {
        asset,
        enabled: false,
        reason: 'no_treasury',
        detail: `${treasuryVariable[asset.family]} is not set, so ${asset.id} cannot be received.`,
      };
    }
    return { asset, enabled: true, ...(payTo ? { payTo } : {}) };
  });
}

/** The assets that can be paid in now. */
export function enabledAssets(settings: AssetSettings = env): Asset[] {
  return assetStatus(settings)
    .filter((s) => s.enabled)
    .map((s) => s.asset);
}
