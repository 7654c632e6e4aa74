// Ethereum (EVM JSON-RPC) adapter: native value sent to the treasury, or ERC-20 `Transfer` logs of the
// asset's contract to it; final after N confirmations; a reverted transaction pays nothing.
import type { Asset } from './assets';
import { RpcError, jsonRpc, networkProbe, rpcBatcher, unreachable, wrongNetwork } from './http';
import type { RpcOptions, RpcOutcome } from './http';
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
  blockHash?: string;
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
  /** Most JSON-RPC calls in one batch request (default 100). */
  maxBatch?: number;
}

/** Block timestamps (ms) by block hash: a block's time never changes, and payments share blocks. */
class BlockTimes {
  private readonly times = new Map<string, number>();
  constructor(private readonly max = 4096) {}
  get(hash: string): number | undefined {
    return this.times.get(hash);
  }
  set(hash: string, ms: number): void {
    if (this.times.size >= this.max) this.times.delete(this.times.keys().next().value!);
    this.times.set(hash, ms);
  }
}

type Step<T> = { ok: true; result: T } | { ok: false; verdict: VerifyResult };

export function createEvmAdapter(options: EvmAdapterOptions): ChainAdapter {
  const rpc = <T>(method: string, params: unknown[]) => jsonRpc<T>(options.rpcUrl, method, params, options);
  const batcher = rpcBatcher(options.rpcUrl, { ...options, maxBatch: options.maxBatch ?? 100 });
  const probe = networkProbe(async () => `eip155:${BigInt(await rpc<string>('eth_chainId', []))}`);
  const blockTimes = new BlockTimes();

  /** A failed call as the check's answer: transport trouble and node errors both mean "ask again". */
  function failed(outcome: RpcOutcome): VerifyResult {
    if (outcome.ok) throw new Error('not a failure');
    const down = unreachable(outcome.error, probe);
    if (down) return down;
    const e = outcome.error as RpcError;
    return { status: 'pending', reason: 'rpc_error', detail: `RPC error ${e.code}: ${e.message}` };
  }
  function step<T>(outcome: RpcOutcome | undefined): Step<T> {
    if (!outcome) throw new Error('missing outcome');
    return outcome.ok ? { ok: true, result: outcome.result as T } : { ok: false, verdict: failed(outcome) };
  }

  /**
   * Checks many transactions with two batch requests at most: the head, each transaction and each
   * receipt together; then the time of each block not seen before (its hash comes from the receipt,
   * so it cannot join the first request). One call failing in a batch leaves the others' checks whole.
   */
  async function verifyTransfers(reqs: readonly VerifyRequest[]): Promise<VerifyResult[]> {
    const results: Array<VerifyResult | undefined> = reqs.map((req) => {
      if (req.asset.family !== 'evm') return { status: 'mismatch', reason: 'unsupported_asset' };
      if (!/^0x[0-9a-fA-F]{64}$/.test(req.txRef))
        return { status: 'not_found', reason: 'invalid_tx_ref', detail: 'Not a transaction hash.' };
      return undefined;
    });
    const open = reqs.flatMap((req, i) => (results[i] ? [] : [i]));
    if (open.length === 0) return results as VerifyResult[];
    try {
      // A node on another chain (a testnet by mistake) must never confirm mainnet payments.
      const network = await probe.get();
      for (const i of open) results[i] = wrongNetwork(reqs[i]!.asset.network, network);
    } catch (err) {
      const down = unreachable(err, probe);
      if (down) return results.map((r) => r ?? down);
      if (err instanceof RpcError) {
        const verdict = failed({ ok: false, error: err });
        return results.map((r) => r ?? verdict);
      }
      throw err;
    }
    const asked = open.filter((i) => !results[i]);
    if (asked.length === 0) return results as VerifyResult[];

    const hashes = [...new Set(asked.map((i) => reqs[i]!.txRef.toLowerCase()))];
    const first = await batcher.call([
      { method: 'eth_blockNumber', params: [] },
      ...hashes.flatMap((h) => [
        { method: 'eth_getTransactionByHash', params: [h] },
        { method: 'eth_getTransactionReceipt', params: [h] },
      ]),
    ]);
    const head = step<string>(first[0]);
    const found = new Map(
      hashes.map((h, k) => [
        h,
        { tx: step<RpcTx | null>(first[1 + 2 * k]), receipt: step<RpcReceipt | null>(first[2 + 2 * k]) },
      ]),
    );

    // Second request: the times of the blocks these receipts name that are not known yet.
    const wanted = new Set<string>();
    for (const { tx, receipt } of found.values()) {
      if (!tx.ok || !receipt.ok || !tx.result?.blockNumber || !receipt.result) continue;
      if (receipt.result.status !== undefined && BigInt(receipt.result.status) === 0n) continue;
      const hash = receipt.result.blockHash?.toLowerCase();
      if (hash && blockTimes.get(hash) === undefined) wanted.add(hash);
    }
    const blockAnswers = new Map<string, Step<{ timestamp: string } | null>>();
    if (wanted.size > 0) {
      const blocks = [...wanted];
      const answers = await batcher.call(
        blocks.map((b) => ({ method: 'eth_getBlockByHash', params: [b, false] })),
      );
      blocks.forEach((b, k) => {
        const answer = step<{ timestamp: string } | null>(answers[k]);
        blockAnswers.set(b, answer);
        if (answer.ok && answer.result) blockTimes.set(b, Number(BigInt(answer.result.timestamp)) * 1000);
      });
    }

    for (const i of asked) {
      const req = reqs[i]!;
      const { tx, receipt } = found.get(req.txRef.toLowerCase())!;
      results[i] = judge(req, head, tx, receipt, blockAnswers);
    }
    return results as VerifyResult[];
  }

  function judge(
    req: VerifyRequest,
    head: Step<string>,
    tx: Step<RpcTx | null>,
    receipt: Step<RpcReceipt | null>,
    blockAnswers: Map<string, Step<{ timestamp: string } | null>>,
  ): VerifyResult {
    if (!tx.ok) return tx.verdict;
    if (!tx.result) return { status: 'not_found' };
    if (!tx.result.blockNumber) return { status: 'pending', reason: 'in_mempool', confirmations: 0 };
    if (!receipt.ok) return receipt.verdict;
    if (!receipt.result) return { status: 'pending', reason: 'in_mempool', confirmations: 0 };
    if (!head.ok) return head.verdict;
    const confirmations = Number(BigInt(head.result) - BigInt(receipt.result.blockNumber) + 1n);
    if (receipt.result.status !== undefined && BigInt(receipt.result.status) === 0n) {
      return { status: 'mismatch', reason: 'reverted', confirmations, detail: 'The transaction reverted.' };
    }
    const blockHash = receipt.result.blockHash?.toLowerCase();
    let blockMs = blockHash ? blockTimes.get(blockHash) : undefined;
    if (blockMs === undefined && blockHash) {
      const block = blockAnswers.get(blockHash);
      if (block && !block.ok) return block.verdict;
      if (block?.ok && block.result) blockMs = Number(BigInt(block.result.timestamp)) * 1000;
    }
    const token = req.asset.contract ? req.asset.contract.toLowerCase() : 'native';
    return judgeTransfers(
      evmTransfers(tx.result, receipt.result),
      req,
      token,
      { final: confirmations >= options.confirmations, confirmations, reason: 'too_few_confirmations' },
      sameEvmAddress,
      { blockTime: blockMs === undefined ? undefined : new Date(blockMs) },
    );
  }

  async function verifyTransfer(req: VerifyRequest): Promise<VerifyResult> {
    return (await verifyTransfers([req]))[0]!;
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

  return { family: 'evm', verifyTransfer, verifyTransfers, readBalance, network: () => probe.get() };
}
