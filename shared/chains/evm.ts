// Ethereum (EVM JSON-RPC) adapter: native value sent to the treasury, or ERC-20 `Transfer` logs of the
// asset's contract to it; final after N confirmations; a reverted transaction pays nothing.
import type { Asset } from '../payments/assets';
import { RpcError, jsonRpc, networkProbe, unreachable, wrongNetwork } from './http';
import type { RpcOptions } from './http';
import { judgeTransfers } from './judge';
import type { Balance, ChainAdapter, Transfer, VerifyRequest, VerifyResult } from './types';

/** keccak256("Transfer(address,address,uint256)") */
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

interface RpcTx {
  hash: string;
  from: string;
  to: string | null;
  value: string;
  blockNumber: string | null;
}
interface RpcLog {
  address: string;
  topics: string[];
  data: string;
  logIndex: string;
}
interface RpcReceipt {
  status?: string;
  blockNumber: string;
  logs: RpcLog[];
}

const topicAddress = (topic: string | undefined) =>
  topic && /^0x0{24}[0-9a-fA-F]{40}$/.test(topic) ? `0x${topic.slice(26)}`.toLowerCase() : undefined;
const sameEvmAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** Native value and ERC-20 Transfer logs of one transaction, as candidate transfers. */
export function evmTransfers(tx: RpcTx, receipt: RpcReceipt): Transfer[] {
  const transfers: Transfer[] = [];
  const value = BigInt(tx.value);
  if (tx.to && value > 0n) {
    transfers.push({
      output: 'value',
      to: tx.to.toLowerCase(),
      amount: value,
      token: 'native',
      payer: tx.from.toLowerCase(),
    });
  }
  for (const log of receipt.logs) {
    // ERC-20 Transfer has from and to indexed (3 topics); ERC-721's also indexes the id (4 topics).
    if (log.topics.length !== 3 || log.topics[0]?.toLowerCase() !== TRANSFER_TOPIC) continue;
    const from = topicAddress(log.topics[1]);
    const to = topicAddress(log.topics[2]);
    if (!to || !/^0x[0-9a-fA-F]{1,64}$/.test(log.data)) continue;
    transfers.push({
      output: `log:${Number(BigInt(log.logIndex))}`,
      to,
      amount: BigInt(log.data),
      token: log.address.toLowerCase(),
      ...(from ? { payer: from } : {}),
    });
  }
  return transfers;
}

export interface EvmAdapterOptions extends RpcOptions {
  rpcUrl: string;
  /** Blocks, counting the transaction's own, before a payment is final. */
  confirmations: number;
}

export function createEvmAdapter(options: EvmAdapterOptions): ChainAdapter {
  const rpc = <T>(method: string, params: unknown[]) => jsonRpc<T>(options.rpcUrl, method, params, options);
  const probe = networkProbe(async () => `eip155:${BigInt(await rpc<string>('eth_chainId', []))}`);

  async function verifyTransfer(req: VerifyRequest): Promise<VerifyResult> {
    if (req.asset.family !== 'evm') return { status: 'mismatch', reason: 'unsupported_asset' };
    if (!/^0x[0-9a-fA-F]{64}$/.test(req.txRef)) {
      return { status: 'not_found', reason: 'invalid_tx_ref', detail: 'Not a transaction hash.' };
    }
    try {
      // A node on another chain (a testnet by mistake) must never confirm mainnet payments.
      const wrong = wrongNetwork(req.asset.network, await probe.get());
      if (wrong) return wrong;

      const tx = await rpc<RpcTx | null>('eth_getTransactionByHash', [req.txRef]);
      if (!tx) return { status: 'not_found' };
      if (!tx.blockNumber) return { status: 'pending', reason: 'in_mempool', confirmations: 0 };
      const receipt = await rpc<RpcReceipt | null>('eth_getTransactionReceipt', [req.txRef]);
      if (!receipt) return { status: 'pending', reason: 'in_mempool', confirmations: 0 };
      const [head, block] = await Promise.all([
        rpc<string>('eth_blockNumber', []),
        rpc<{ timestamp: string } | null>('eth_getBlockByNumber', [receipt.blockNumber, false]),
      ]);
      const confirmations = Number(BigInt(head) - BigInt(receipt.blockNumber) + 1n);
      if (receipt.status !== undefined && BigInt(receipt.status) === 0n) {
        return { status: 'mismatch', reason: 'reverted', confirmations, detail: 'The transaction reverted.' };
      }
      const token = req.asset.contract ? req.asset.contract.toLowerCase() : 'native';
      return judgeTransfers(
        evmTransfers(tx, receipt),
        req,
        token,
        { final: confirmations >= options.confirmations, confirmations, reason: 'too_few_confirmations' },
        sameEvmAddress,
        { blockTime: block ? new Date(Number(BigInt(block.timestamp)) * 1000) : undefined },
      );
    } catch (err) {
      const down = unreachable(err, probe);
      if (down) return down;
      if (err instanceof RpcError)
        return { status: 'pending', reason: 'rpc_error', detail: `RPC error ${err.code}: ${err.message}` };
      throw err;
    }
  }

  async function readBalance(address: string, asset: Asset): Promise<Balance> {
    if (!asset.contract) {
      const wei = await rpc<string>('eth_getBalance', [address, 'latest']);
      return { address, asset: asset.id, amount: BigInt(wei).toString() };
    }
    // balanceOf(address)
    const data = `0x70a08231${address.slice(2).toLowerCase().padStart(64, '0')}`;
    const out = await rpc<string>('eth_call', [{ to: asset.contract, data }, 'latest']);
    return { address, asset: asset.id, amount: BigInt(out === '0x' ? 0 : out).toString() };
  }

  return { family: 'evm', verifyTransfer, readBalance, network: () => probe.get() };
}
