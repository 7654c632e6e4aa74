// The local development chain of `npm start`: when no chain is configured (and never in production), a
// ganache node on 127.0.0.1 with a demo EIP-3009 stablecoin, a treasury and a funded demo payer, so the
// priced services a newcomer sees advertised can be paid for. Its coins are demo money: anyone holding
// the node's well-known deployer key mints more.
//
// What lives under DATA_DIR/devnet: the chain (ganache's database, so balances, transactions and the
// token survive a restart, and receipts keep naming transactions that exist), ganache's log, the
// treasury's, the demo payer's and the x402 settler's private keys (0600, never printed), and devnet.json, what
// `npm run demo:pay` needs to find the chain, the token and the payer.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  numberToHex,
  parseEther,
  parseUnits,
} from 'viem';
import type { Address, Chain, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Env } from '../../shared/platform/env';
import { chainConfigured, isProduction } from '../../shared/platform/env';
import { deployDemoToken, demoTokenAbi, demoTokenBalance, mintDemoToken } from '../chain/token';
import { StartupFailure } from '../../shared/platform/failures';

export const DEVNET_CHAIN_ID = 1337;
export const DEVNET_NETWORK = `eip155:${DEVNET_CHAIN_ID}`;
/** How the chain is named wherever it shows: banner, logs, asset names, demo:pay. */
export const DEVNET_LABEL = 'local development chain';

/** The payer is topped up to these at every start when below half of them. */
const PAYER_ETH = parseEther('10');
/** The x402 settler's gas, topped up the same way: it pays for each transferWithAuthorization it sends. */
const SETTLER_ETH = parseEther('10');
const PAYER_TOKENS = '1000';

export type DevnetDecision =
  { start: true } | { start: false; reason: 'off' | 'production' | 'chain_configured' };

/**
 * Whether `npm start` runs the development chain: asked for (`DEVNET=on`), or by default when nothing at
 * all is configured for payments (a treasury or an endpoint of any family means the operator chose).
 */
export function devnetDecision(e: Env): DevnetDecision {
  if (e.DEVNET === 'off') return { start: false, reason: 'off' };
  if (isProduction(e)) return { start: false, reason: 'production' };
  if (e.DEVNET === 'auto' && chainConfigured(e)) return { start: false, reason: 'chain_configured' };
  return { start: true };
}

export interface DevnetInfo {
  label: string;
  rpcUrl: string;
  chainId: number;
  /** CAIP-2 id, as quotes name the network. */
  network: string;
  token: { address: Address; name: string; symbol: string; decimals: number };
  treasury: Address;
  payer: Address;
  /** Where the payer's private key is (0600); the key itself is never printed. */
  payerKeyFile: string;
  /**
   * The x402 settler's gas account (its key in settlerKeyFile, 0600): the service's own `exact`
   * facilitator sends the payer's signed transfers with it, so an x402 client pays from the first start.
   */
  settler?: Address;
  settlerKeyFile?: string;
}

export function devnetPaths(dataDir: string) {
  const dir = resolve(dataDir, 'devnet');
  return {
    dir,
    chain: join(dir, 'chain'),
    info: join(dir, 'devnet.json'),
    payerKey: join(dir, 'payer.key'),
    treasuryKey: join(dir, 'treasury.key'),
    settlerKey: join(dir, 'settler.key'),
  };
}

export function devnetChain(rpcUrl: string): Chain {
  return defineChain({
    id: DEVNET_CHAIN_ID,
    name: `proof-exchange ${DEVNET_LABEL}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    testnet: true,
  });
}

/** JSON-RPC `eth_chainId` answered with the development chain's id. */
export async function devnetAnswers(rpcUrl: string, timeoutMs = 1000): Promise<boolean> {
  try {
    const res = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const doc = (await res.json()) as { result?: string };
    return doc.result !== undefined && Number(doc.result) === DEVNET_CHAIN_ID;
  } catch {
    return false;
  }
}

/** A private key kept in a file only its owner can read; made on first use. */
function keyFile(file: string): Hex {
  try {
    const key = readFileSync(file, 'utf8').trim();
    if (/^0x[0-9a-f]{64}$/.test(key)) {
      chmodSync(file, 0o600);
      return key as Hex;
    }
  } catch {
    // made below
  }
  const key = generatePrivateKey();
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  chmodSync(file, 0o600); // a file that existed keeps its mode through writeFileSync
  return key;
}

function readInfo(file: string): Partial<DevnetInfo> {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Partial<DevnetInfo>;
  } catch {
    return {};
  }
}

/**
 * Makes the running chain ready to take payments, idempotently: the demo token deployed (unless the
 * chain already has it), the treasury's and payer's keys made, the payer topped up with ETH for gas and
 * with demo tokens. Writes devnet.json and returns it.
 */
export async function provisionDevnet(opts: { dataDir: string; rpcUrl: string }): Promise<DevnetInfo> {
  const paths = devnetPaths(opts.dataDir);
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  const chain = devnetChain(opts.rpcUrl);
  const transport = http(opts.rpcUrl, { retryCount: 0, timeout: 30_000 });
  const pub = createPublicClient({ chain, transport });
  const node = createWalletClient({ chain, transport });
  // ganache's first account, unlocked on the node: it deploys and mints the token and pays for gas.
  const [deployer] = await node.getAddresses();
  if (!deployer) throw new Error('the development chain has no unlocked account');
  const signer = { rpcUrl: opts.rpcUrl, account: deployer };

  // The token keeps USDC's EIP-712 domain (dev/chain/token.ts), which the registry's USDC-ETH
  // entry names, so x402 payers that sign for USDC sign for it too.
  const known = readInfo(paths.info).token?.address;
  const deployed = known && ((await pub.getCode({ address: known })) ?? '0x') !== '0x';
  const token = deployed ? known : (await deployDemoToken(signer)).address;
  const read = <F extends 'name' | 'symbol' | 'decimals'>(functionName: F) =>
    pub.readContract({ address: token, abi: demoTokenAbi, functionName });
  const [name, symbol, decimals] = await Promise.all([read('name'), read('symbol'), read('decimals')]);

  const treasury = privateKeyToAccount(keyFile(paths.treasuryKey)).address;
  const payer = privateKeyToAccount(keyFile(paths.payerKey)).address;
  const settler = privateKeyToAccount(keyFile(paths.settlerKey)).address;

  for (const [to, eth] of [
    [payer, PAYER_ETH],
    [settler, SETTLER_ETH],
  ] as const) {
    if ((await pub.getBalance({ address: to })) >= eth / 2n) continue;
    const hash = await node.request({
      method: 'eth_sendTransaction',
      params: [{ from: deployer, to, value: numberToHex(eth), gas: numberToHex(21_000) }],
    });
    await pub.waitForTransactionReceipt({ hash });
  }
  const tokens = parseUnits(PAYER_TOKENS, decimals);
  const held = await demoTokenBalance(opts.rpcUrl, token, payer);
  if (held < tokens / 2n) await mintDemoToken(signer, token, payer, tokens - held);

  const info: DevnetInfo = {
    label: DEVNET_LABEL,
    rpcUrl: opts.rpcUrl,
    chainId: DEVNET_CHAIN_ID,
    network: DEVNET_NETWORK,
    token: { address: token, name, symbol, decimals },
    treasury,
    payer,
    payerKeyFile: paths.payerKey,
    settler,
    settlerKeyFile: paths.settlerKey,
  };
  writeFileSync(paths.info, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o644 });
  return info;
}

/** What devnet.json says, or undefined when no development chain was ever provisioned here. */
export function readDevnetInfo(dataDir: string): DevnetInfo | undefined {
  const info = readInfo(devnetPaths(dataDir).info);
  return info.rpcUrl && info.token?.address && info.payerKeyFile ? (info as DevnetInfo) : undefined;
}

/**
 * The settings web, worker and prover get for the chain: its endpoint and treasury, one confirmation
 * (every transaction is mined at once), and the registry's EVM assets moved onto it: USDC-ETH becomes
 * the demo stablecoin (named as such), ETH the chain's native coin (quoted once a rate is configured).
 * WBTC-ETH stays on Ethereum, so it shows `wrong_network`: the chain has no WBTC. Other ASSETS_JSON
 * overrides are kept.
 */
export function devnetChildEnv(
  info: DevnetInfo,
  assetsJson: string | undefined,
  x402: { facilitatorUrl?: string | undefined; settlerKey?: string | undefined } = {},
): Record<string, string> {
  let overrides: Record<string, Record<string, unknown>> = {};
  if (assetsJson) {
    try {
      overrides = JSON.parse(assetsJson) as typeof overrides;
    } catch {
      throw new StartupFailure('ASSETS_JSON is not valid JSON', 'fix it, or unset it');
    }
  }
  const assets = {
    ...overrides,
    'USDC-ETH': {
      ...overrides['USDC-ETH'],
      network: info.network,
      contract: info.token.address,
      decimals: info.token.decimals,
      name: `${info.token.name} (demo token on the ${DEVNET_LABEL}, not real money)`,
    },
    ETH: { ...overrides.ETH, network: info.network, name: `Ether (${DEVNET_LABEL}, not real money)` },
  };
  return {
    EVM_RPC_URL: info.rpcUrl,
    TREASURY_EVM: info.treasury,
    EVM_CONFIRMATIONS: '1',
    EVM_DEVNET: 'true',
    ASSETS_JSON: JSON.stringify(assets),
    // The development settler, unless x402 settles elsewhere already (a facilitator, or a key given).
    ...(info.settlerKeyFile && !x402.facilitatorUrl && !x402.settlerKey
      ? { X402_EVM_SETTLER_KEY: readFileSync(info.settlerKeyFile, 'utf8').trim() }
      : {}),
  };
}
