// The demo EIP-3009 dollar token for tests and local devnets: its compiled artifact (committed, built by
// `npm run devchain:build` from DemoToken.sol) and viem helpers to deploy it and mint to an address.
// Defaults mirror USDC's EIP-712 domain (name "USD Coin", version "2", 6 decimals), so the token can stand
// in for USDC on a devnet with only its contract address configured.
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeDeployData,
  encodeFunctionData,
  getAddress,
  http,
  numberToHex,
} from 'viem';
import type { Account, Address, Chain, Hash, Hex, PublicClient, Transport } from 'viem';
import { demoTokenArtifact } from './DemoToken.artifact';

export const demoTokenAbi = demoTokenArtifact.abi;
export const demoTokenBytecode = demoTokenArtifact.bytecode;

export interface DemoTokenConfig {
  /** EIP-712 domain name and ERC-20 name. */
  name: string;
  /** EIP-712 domain version. */
  version: string;
  symbol: string;
  decimals: number;
}

export const DEMO_TOKEN_DEFAULTS: Readonly<DemoTokenConfig> = Object.freeze({
  name: 'USD Coin',
  version: '2',
  symbol: 'USDC',
  decimals: 6,
});

/**
 * Who sends the transactions: a node's JSON-RPC address and either a viem local account (signs here)
 * or the address of an account the node holds unlocked (ganache, anvil, hardhat).
 */
export interface DevchainSigner {
  rpcUrl: string;
  account: Account | Address;
}

export interface DemoToken extends DemoTokenConfig {
  address: Address;
  chainId: number;
  /** The deployer, the only account allowed to mint. */
  minter: Address;
  deployTx: Hash;
}

interface Clients {
  chain: Chain;
  publicClient: PublicClient<Transport, Chain>;
  from: Address;
  /** Sends a transaction from the signer: signed here for a local account, by the node otherwise. */
  send(tx: { to?: Address; data: Hex }): Promise<Hash>;
}

async function clients(signer: DevchainSigner): Promise<Clients> {
  if (!signer?.rpcUrl) throw new Error('devchain: signer.rpcUrl is required');
  if (!signer.account) throw new Error('devchain: signer.account is required');
  const probe = createPublicClient({ transport: http(signer.rpcUrl) });
  const id = await probe.getChainId();
  const chain = defineChain({
    id,
    name: `devchain-${id}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [signer.rpcUrl] } },
  });
  const transport = http(signer.rpcUrl);
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 50 });
  const { account } = signer;
  if (typeof account === 'string') {
    // An unlocked node account: plain eth_sendTransaction (some dev nodes, ganache among them, answer
    // viem's wallet_sendTransaction probe with an error viem does not fall back from).
    const node = createWalletClient({ chain, transport });
    return {
      chain,
      publicClient,
      from: account,
      send: ({ to, data }) =>
        node.request({
          method: 'eth_sendTransaction',
          params: [{ from: account, ...(to ? { to } : {}), data, gas: numberToHex(3_000_000) }],
        }),
    };
  }
  const walletClient = createWalletClient({ chain, transport, account, pollingInterval: 50 });
  return {
    chain,
    publicClient,
    from: account.address,
    send: ({ to, data }) => walletClient.sendTransaction({ ...(to ? { to } : {}), data }),
  };
}

async function confirmed(publicClient: PublicClient<Transport, Chain>, hash: Hash, what: string) {
  const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  if (receipt.status !== 'success') throw new Error(`devchain: ${what} reverted (${hash})`);
  return receipt;
}

/** Deploys a DemoToken and waits for it to be mined; the signer becomes its minter. */
export async function deployDemoToken(
  signer: DevchainSigner,
  config: Partial<DemoTokenConfig> = {},
): Promise<DemoToken> {
  const full: DemoTokenConfig = { ...DEMO_TOKEN_DEFAULTS, ...config };
  if (!Number.isInteger(full.decimals) || full.decimals < 0 || full.decimals > 36) {
    throw new Error(`devchain: decimals must be an integer in 0..36, got ${full.decimals}`);
  }
  const { chain, publicClient, from, send } = await clients(signer);
  const deployTx = await send({
    data: encodeDeployData({
      abi: demoTokenAbi,
      bytecode: demoTokenBytecode,
      args: [full.name, full.version, full.symbol, full.decimals],
    }),
  });
  const receipt = await confirmed(publicClient, deployTx, 'DemoToken deployment');
  if (!receipt.contractAddress) throw new Error(`devchain: deployment ${deployTx} created no contract`);
  return {
    ...full,
    address: getAddress(receipt.contractAddress),
    chainId: chain.id,
    minter: from,
    deployTx,
  };
}

/** Mints `amount` base units of the token at `token` to `to`; the signer must be the token's minter. */
export async function mintDemoToken(
  signer: DevchainSigner,
  token: Address,
  to: Address,
  amount: bigint,
): Promise<Hash> {
  if (amount <= 0n) throw new Error('devchain: amount must be positive');
  const { publicClient, from, send } = await clients(signer);
  const data = encodeFunctionData({ abi: demoTokenAbi, functionName: 'mint', args: [to, amount] });
  // A dry run first, so a refusal (not the minter) comes back with the token's own reason.
  await publicClient.call({ account: from, to: token, data });
  const hash = await send({ to: token, data });
  await confirmed(publicClient, hash, 'DemoToken mint');
  return hash;
}

/** The token's balance of `owner`, in base units. */
export async function demoTokenBalance(rpcUrl: string, token: Address, owner: Address): Promise<bigint> {
  const publicClient = createPublicClient({ transport: http(rpcUrl) });
  return publicClient.readContract({
    address: token,
    abi: demoTokenAbi,
    functionName: 'balanceOf',
    args: [owner],
  });
}
