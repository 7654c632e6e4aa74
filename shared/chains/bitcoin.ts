// Bitcoin adapter over an Esplora-compatible HTTP API (blockstream/esplora, mempool.space, electrs):
// outputs paying the treasury address, final after N confirmations.
import type { Asset } from './assets';
import {
  RpcUnreachableError,
  endpointName,
  httpRequest,
  networkProbe,
  unreachable,
  wrongNetwork,
} from './http';
import type { RpcOptions } from './http';
import { judgeTransfers } from './judge';
import type { Balance, ChainAdapter, Transfer, VerifyRequest, VerifyResult } from './types';

interface EsploraTx {
  txid: string;
  vin: { prevout?: { scriptpubkey_address?: string } | null; is_coinbase?: boolean }[];
  vout: { scriptpubkey_address?: string; value: number }[];
  status: { confirmed: boolean; block_height?: number; block_time?: number };
}

// Bech32 addresses are case-insensitive; base58 ones are not.
const sameBitcoinAddress = (a: string, b: string) =>
  /^(bc|tb|bcrt)1/i.test(a) ? a.toLowerCase() === b.toLowerCase() : a === b;

/** Every output with an address, as candidate transfers; the first input's address is the payer. */
export function bitcoinTransfers(tx: EsploraTx): Transfer[] {
  const payer = tx.vin[0]?.prevout?.scriptpubkey_address;
  return tx.vout.flatMap((out, n) =>
    out.scriptpubkey_address
      ? [
          {
            output: `vout:${n}`,
            to: out.scriptpubkey_address,
            amount: BigInt(out.value),
            token: 'native',
            ...(payer ? { payer } : {}),
          },
        ]
      : [],
  );
}

export interface BitcoinAdapterOptions extends RpcOptions {
  esploraUrl: string;
  confirmations: number;
}

export function createBitcoinAdapter(options: BitcoinAdapterOptions): ChainAdapter {
  const base = options.esploraUrl.replace(/\/+$/, '');

  async function getJson<T>(path: string): Promise<T | undefined> {
    const answer = await httpRequest(`${base}${path}`, {}, options);
    // Esplora answers 404 for an unknown txid and 400 for a malformed one.
    if (answer.status === 404 || answer.status === 400) return undefined;
    if (answer.status >= 300)
      throw new RpcUnreachableError(
        endpointName(base),
        `${endpointName(base)} answered HTTP ${answer.status}`,
      );
    try {
      return JSON.parse(answer.text) as T;
    } catch {
      throw new RpcUnreachableError(endpointName(base), `${endpointName(base)} answered without JSON`);
    }
  }

  // The network is named by its genesis block: CAIP-2's bip122 ids are its hash's first 32 hex digits.
  const probe = networkProbe(async () => {
    const answer = await httpRequest(
      `${base}/block-height/0`,
      { headers: { accept: 'text/plain' } },
      options,
    );
    const hash = answer.text.trim();
    if (answer.status !== 200 || !/^[0-9a-f]{64}$/.test(hash))
      throw new RpcUnreachableError(
        endpointName(base),
        `${endpointName(base)} did not name its genesis block`,
      );
    return `bip122:${hash.slice(0, 32)}`;
  });

  async function verifyTransfer(req: VerifyRequest): Promise<VerifyResult> {
    if (req.asset.family !== 'bitcoin') return { status: 'mismatch', reason: 'unsupported_asset' };
    if (!/^[0-9a-fA-F]{64}$/.test(req.txRef)) {
      return { status: 'not_found', reason: 'invalid_tx_ref', detail: 'Not a transaction id.' };
    }
    try {
      const wrong = wrongNetwork(req.asset.network, await probe.get());
      if (wrong) return wrong;
      const tx = await getJson<EsploraTx>(`/tx/${req.txRef.toLowerCase()}`);
      if (!tx) return { status: 'not_found' };
      let confirmations = 0;
      if (tx.status.confirmed && tx.status.block_height !== undefined) {
        const tip = await getJson<number>('/blocks/tip/height');
        if (tip === undefined)
          throw new RpcUnreachableError(endpointName(base), 'the tip height is unavailable');
        confirmations = Math.max(0, tip - tx.status.block_height + 1);
      }
      return judgeTransfers(
        bitcoinTransfers(tx),
        req,
        'native',
        {
          final: confirmations >= options.confirmations,
          confirmations,
          reason: confirmations === 0 ? 'in_mempool' : 'too_few_confirmations',
        },
        sameBitcoinAddress,
        { blockTime: tx.status.block_time ? new Date(tx.status.block_time * 1000) : undefined },
      );
    } catch (err) {
      const down = unreachable(err, probe);
      if (down) return down;
      throw err;
    }
  }

  async function readBalance(address: string, asset: Asset): Promise<Balance> {
    const stats = await getJson<{
      chain_stats: { funded_txo_sum: number; spent_txo_sum: number };
      mempool_stats: { funded_txo_sum: number; spent_txo_sum: number };
    }>(`/address/${encodeURIComponent(address)}`);
    if (!stats)
      throw new RpcUnreachableError(endpointName(base), 'the address is unknown to the Esplora server');
    const chain = BigInt(stats.chain_stats.funded_txo_sum) - BigInt(stats.chain_stats.spent_txo_sum);
    const pool = BigInt(stats.mempool_stats.funded_txo_sum) - BigInt(stats.mempool_stats.spent_txo_sum);
    return { address, asset: asset.id, amount: chain.toString(), pending: pool.toString() };
  }

  return { family: 'bitcoin', verifyTransfer, readBalance, network: () => probe.get() };
}
