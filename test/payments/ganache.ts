// A real EVM node for payment tests: ganache in process on loopback, with the test ERC-20 deployed.
// Loads no configuration, so a test can start it and only then set the env its modules read.
import ganache from 'ganache';
import type { AddressInfo } from 'node:net';
import { fixture } from '../chains/replay';

const { bytecode } = fixture<{ bytecode: string }>('evm/TestToken.json');
const word = (v: bigint | string) => BigInt(v).toString(16).padStart(64, '0');

export interface Chain {
  url: string;
  accounts: string[];
  rpc<T>(method: string, params?: unknown[]): Promise<T>;
  sendEth(from: string, to: string, wei: bigint): Promise<string>;
  transferToken(token: string, from: string, to: string, amount: bigint): Promise<string>;
  deployToken(decimals: number, supply: bigint): Promise<string>;
  mine(blocks: number): Promise<void>;
  /** Sets the node's clock: the next blocks carry this time (to make a transfer look older). */
  setTime(at: Date): Promise<void>;
  close(): Promise<void>;
}

export async function startChain(chainId = 1337): Promise<Chain> {
  // ganache's bundled typings resolve the options type to `undefined` under this tsconfig.
  const startServer = ganache.server as (options: object) => ReturnType<typeof ganache.server>;
  const server = startServer({
    logging: { quiet: true },
    chain: { chainId },
    wallet: { deterministic: true, totalAccounts: 4 },
  });
  await server.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  async function rpc<T>(method: string, params: unknown[] = []): Promise<T> {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const doc = (await res.json()) as { result: T; error?: { message: string } };
    if (doc.error) throw new Error(doc.error.message);
    return doc.result;
  }
  const send = (tx: Record<string, string>) =>
    rpc<string>('eth_sendTransaction', [{ gas: '0x100000', ...tx }]);
  const accounts = await rpc<string[]>('eth_accounts');
  return {
    url,
    accounts,
    rpc,
    sendEth: (from, to, wei) => send({ from, to, value: `0x${wei.toString(16)}` }),
    transferToken: (token, from, to, amount) =>
      send({ from, to: token, data: `0xa9059cbb${word(BigInt(to))}${word(amount)}` }),
    async deployToken(decimals, supply) {
      const hash = await send({
        from: accounts[0]!,
        data: `${bytecode}${word(BigInt(decimals))}${word(supply)}`,
      });
      const receipt = await rpc<{ contractAddress: string }>('eth_getTransactionReceipt', [hash]);
      return receipt.contractAddress;
    },
    async mine(blocks) {
      for (let i = 0; i < blocks; i++) await rpc('evm_mine');
    },
    async setTime(at) {
      await rpc('evm_setTime', [at.getTime()]);
    },
    close: () => server.close(),
  };
}
