// The demo EIP-3009 token on a real EVM node (ganache on loopback): deploy, mint, a signed
// transferWithAuthorization pays once, and a forged, replayed or expired authorization does nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPublicClient, createWalletClient, encodeFunctionData, http, parseSignature } from 'viem';
import type { Address, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startChain } from '../payments/ganache';
import type { Chain } from '../payments/ganache';
import {
  DEMO_TOKEN_DEFAULTS,
  demoTokenAbi,
  demoTokenBalance,
  deployDemoToken,
  mintDemoToken,
} from '../../dev/chain/token';
import type { DemoToken } from '../../dev/chain/token';

let chain: Chain;
let token: DemoToken;
const payer = privateKeyToAccount(generatePrivateKey());
const stranger = privateKeyToAccount(generatePrivateKey());

beforeAll(async () => {
  chain = await startChain(31337);
  token = await deployDemoToken({ rpcUrl: chain.url, account: chain.accounts[0] as Address });
  await mintDemoToken(
    { rpcUrl: chain.url, account: chain.accounts[0] as Address },
    token.address,
    payer.address,
    5_000_000n,
  );
});
afterAll(async () => {
  await chain?.close();
});

const types = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

async function authorize(signer = payer, to: Address, value: bigint, validBefore?: bigint) {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const message = {
    from: payer.address,
    to,
    value,
    validAfter: now - 600n,
    validBefore: validBefore ?? now + 600n,
    nonce: generatePrivateKey() as Hex,
  };
  const signature = await signer.signTypedData({
    domain: {
      name: token.name,
      version: token.version,
      chainId: token.chainId,
      verifyingContract: token.address,
    },
    types,
    primaryType: 'TransferWithAuthorization',
    message,
  });
  return { message, signature };
}

async function relay(auth: Awaited<ReturnType<typeof authorize>>) {
  const relayer = createWalletClient({ transport: http(chain.url) });
  const client = createPublicClient({ transport: http(chain.url) });
  const { v, r, s } = parseSignature(auth.signature);
  const { message: m } = auth;
  const args = [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, Number(v), r, s] as const;
  await client.simulateContract({
    address: token.address,
    abi: demoTokenAbi,
    functionName: 'transferWithAuthorization',
    args,
    account: chain.accounts[1] as Address,
  });
  const hash = await relayer.request({
    method: 'eth_sendTransaction',
    params: [
      {
        from: chain.accounts[1] as Address,
        to: token.address,
        data: encodeFunctionData({ abi: demoTokenAbi, functionName: 'transferWithAuthorization', args }),
        gas: '0x100000',
      },
    ],
  });
  return client.waitForTransactionReceipt({ hash });
}

describe('demo EIP-3009 token', () => {
  it('deploys with the USDC-like EIP-712 domain and mints only for its minter', async () => {
    const client = createPublicClient({ transport: http(chain.url) });
    const read = (functionName: 'name' | 'version' | 'symbol' | 'decimals') =>
      client.readContract({ address: token.address, abi: demoTokenAbi, functionName });
    expect(await read('name')).toBe(DEMO_TOKEN_DEFAULTS.name);
    expect(await read('version')).toBe(DEMO_TOKEN_DEFAULTS.version);
    expect(await read('decimals')).toBe(6);
    expect(token.chainId).toBe(31337);
    expect(await demoTokenBalance(chain.url, token.address, payer.address)).toBe(5_000_000n);
    await expect(
      mintDemoToken(
        { rpcUrl: chain.url, account: chain.accounts[2] as Address },
        token.address,
        stranger.address,
        1n,
      ),
    ).rejects.toThrow(/not the minter/);
    expect(await demoTokenBalance(chain.url, token.address, stranger.address)).toBe(0n);
  });

  it('moves funds with a signed authorization exactly once', async () => {
    const auth = await authorize(payer, stranger.address, 1_250_000n);
    const receipt = await relay(auth);
    expect(receipt.status).toBe('success');
    expect(await demoTokenBalance(chain.url, token.address, stranger.address)).toBe(1_250_000n);
    await expect(relay(auth)).rejects.toThrow(/used or canceled/);
    expect(await demoTokenBalance(chain.url, token.address, stranger.address)).toBe(1_250_000n);
  });

  it('refuses an authorization signed by someone else, or past its deadline', async () => {
    const before = await demoTokenBalance(chain.url, token.address, payer.address);
    await expect(relay(await authorize(stranger, stranger.address, 1n))).rejects.toThrow(/invalid signature/);
    const past = BigInt(Math.floor(Date.now() / 1000) - 60);
    await expect(relay(await authorize(payer, stranger.address, 1n, past))).rejects.toThrow(/expired/);
    expect(await demoTokenBalance(chain.url, token.address, payer.address)).toBe(before);
  });
});
