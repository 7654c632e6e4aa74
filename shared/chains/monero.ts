// Monero adapter over monero-wallet-rpc, run with the treasury's wallet (a view-only wallet is enough).
// Each quote gets its own subaddress (`create_address`); a payment is checked with the payer's
// transaction key against that subaddress (`check_tx_key`), and the treasury wallet's own record of the
// transfer (`get_transfer_by_txid`) gives its block time and unlock time: an output locked into the
// future could not be spent, so it pays nothing.
import { RpcError, jsonRpc, networkProbe, unreachable, wrongNetwork } from './http';
import type { RpcOptions } from './http';
import { judgeTransfers } from './judge';
import type { ChainAdapter, VerifyRequest, VerifyResult } from './types';

// wallet_rpc_server_error_codes.h
const WRONG_TXID = -8;
const WRONG_KEY = -25;
const UNKNOWN_ERROR = -1;

/**
 * Monero has no registered CAIP namespace; like bip122, an id is the first 16 bytes of the network's
 * genesis block hash.
 */
export const moneroNetworks: Record<string, string> = {
  mainnet: 'monero:418015bb9ae982a1975da7d79277c270',
  stagenet: 'monero:76ee3cc98646292206cd3e86f74d88b4',
  testnet: 'monero:48ca7cd3c8de5b6a4d53d2861fbdaedc',
};

// Below this an unlock time is a block height, above it a Unix time (cryptonote_config.h).
const MAX_BLOCK_NUMBER = 500_000_000;
// A height- or time-locked output is spendable this much early (CRYPTONOTE_LOCKED_TX_ALLOWED_DELTA_*).
const ALLOWED_DELTA_SECONDS = 120;

interface CheckTxKey {
  received: number | string;
  in_pool: boolean;
  confirmations: number;
}

interface WalletTransfer {
  type: string;
  amount: number | string;
  height: number;
  timestamp: number;
  unlock_time: number | string;
  confirmations?: number;
  subaddr_index: { major: number; minor: number };
}

export interface MoneroAdapterOptions extends RpcOptions {
  /** Base URL of monero-wallet-rpc (its /json_rpc endpoint is used); run it with --disable-rpc-login on loopback. */
  walletRpcUrl: string;
  confirmations: number;
  /** The treasury's primary address: the wallet must be this one before it hands out subaddresses. */
  treasury?: string;
}

export interface MoneroAdapter extends ChainAdapter {
  /** A fresh subaddress of account 0 for one quote, labelled with the quote's reference. */
  createSubaddress(label: string): Promise<{ address: string; index: number }>;
}

/** Whether an output with this unlock time can be spent at chain height `height` and time `now`. */
export function unlocked(unlockTime: bigint, height: number, now: Date): boolean {
  if (unlockTime === 0n) return true;
  if (unlockTime < BigInt(MAX_BLOCK_NUMBER)) return BigInt(height) >= unlockTime;
  return BigInt(Math.floor(now.getTime() / 1000) + ALLOWED_DELTA_SECONDS) >= unlockTime;
}

export function createMoneroAdapter(options: MoneroAdapterOptions): MoneroAdapter {
  const endpoint = `${options.walletRpcUrl.replace(/\/+$/, '').replace(/\/json_rpc$/, '')}/json_rpc`;
  const call = <T>(method: string, params: unknown, exactIntegers?: string[]) =>
    jsonRpc<T>(endpoint, method, params, exactIntegers ? { ...options, exactIntegers } : options);
  const primaryAddress = () =>
    call<{ address: string }>('get_address', { account_index: 0 }).then((r) => r.address);
  // The wallet says which network its own address belongs to.
  const probe = networkProbe(async () => {
    const { nettype } = await call<{ valid: boolean; nettype: string }>('validate_address', {
      address: await primaryAddress(),
      any_net_type: true,
    });
    return moneroNetworks[nettype] ?? `monero:${nettype}`;
  });

  async function createSubaddress(label: string) {
    if (options.treasury && (await primaryAddress()) !== options.treasury) {
      throw new Error('the wallet behind MONERO_WALLET_RPC_URL is not the TREASURY_MONERO wallet');
    }
    const res = await call<{ address: string; address_index: number }>('create_address', {
      account_index: 0,
      label,
    });
    return { address: res.address, index: res.address_index };
  }

  async function verifyTransfer(req: VerifyRequest): Promise<VerifyResult> {
    if (req.asset.family !== 'monero') return { status: 'mismatch', reason: 'unsupported_asset' };
    if (!/^[0-9a-fA-F]{64}$/.test(req.txRef)) {
      return { status: 'not_found', reason: 'invalid_tx_ref', detail: 'Not a transaction id.' };
    }
    if (!req.txKey) {
      return {
        status: 'mismatch',
        reason: 'tx_key_required',
        detail: 'A Monero payment needs its transaction key.',
      };
    }
    if (!/^(?:[0-9a-fA-F]{64})+$/.test(req.txKey)) {
      return { status: 'mismatch', reason: 'invalid_tx_key', detail: 'The transaction key is not hex.' };
    }
    let res: CheckTxKey;
    let record: WalletTransfer | undefined;
    try {
      const wrong = wrongNetwork(req.asset.network, await probe.get());
      if (wrong) return wrong;
      res = await call<CheckTxKey>('check_tx_key', { txid: req.txRef, tx_key: req.txKey, address: req.to }, [
        'received',
      ]);
      if (BigInt(res.received) > 0n) record = await walletRecord(req);
    } catch (err) {
      const down = unreachable(err, probe);
      if (down) return down;
      if (err instanceof RpcError) {
        if (err.code === WRONG_KEY)
          return { status: 'mismatch', reason: 'invalid_tx_key', detail: err.message };
        if (err.code === WRONG_TXID)
          return { status: 'not_found', reason: 'invalid_tx_ref', detail: err.message };
        // wallet2 throws this when its daemon does not know the txid.
        if (err.code === UNKNOWN_ERROR && /failed to get transaction from daemon/i.test(err.message)) {
          return { status: 'not_found' };
        }
        return {
          status: 'pending',
          reason: 'rpc_error',
          detail: `Wallet RPC error ${err.code}: ${err.message}`,
        };
      }
      throw err;
    }
    const received = BigInt(res.received);
    const confirmations = res.in_pool ? 0 : res.confirmations;
    // Nothing decoded for the address: it is not the recipient, or the key is not this transaction's.
    if (received === 0n) {
      return {
        status: 'mismatch',
        reason: 'wrong_recipient',
        confirmations,
        detail: 'The key shows nothing received by the address.',
      };
    }
    if (!record) {
      return {
        status: 'pending',
        reason: 'block_time_unknown',
        amount: received.toString(),
        confirmations,
        detail: 'The treasury wallet has not recorded the transfer yet.',
      };
    }
    const unlockTime = BigInt(record.unlock_time);
    if (!unlocked(unlockTime, record.height + confirmations, new Date())) {
      return {
        status: 'mismatch',
        reason: 'output_locked',
        amount: received.toString(),
        confirmations,
        detail: `The output is locked until ${unlockTime < BigInt(MAX_BLOCK_NUMBER) ? `block ${unlockTime}` : new Date(Number(unlockTime) * 1000).toISOString()}; a locked output cannot pay.`,
      };
    }
    const mined = !res.in_pool && record.height > 0;
    return judgeTransfers(
      [{ output: 'tx', to: req.to, amount: received, token: 'native' }],
      req,
      'native',
      {
        final: !res.in_pool && confirmations >= options.confirmations,
        confirmations,
        reason: res.in_pool ? 'in_mempool' : 'too_few_confirmations',
      },
      undefined,
      { blockTime: mined ? new Date(record.timestamp * 1000) : undefined },
    );
  }

  /** The treasury wallet's record of the incoming transfer to the quote's subaddress, if it has one. */
  async function walletRecord(req: VerifyRequest): Promise<WalletTransfer | undefined> {
    try {
      const res = await call<{ transfer?: WalletTransfer; transfers?: WalletTransfer[] }>(
        'get_transfer_by_txid',
        { txid: req.txRef, account_index: 0 },
        ['amount', 'unlock_time'],
      );
      const all = res.transfers ?? (res.transfer ? [res.transfer] : []);
      const incoming = all.filter((t) => t.type === 'in' || t.type === 'pool');
      const index = req.binding?.kind === 'address' ? req.binding.index : undefined;
      return incoming.find((t) => index === undefined || t.subaddr_index.minor === index);
    } catch (err) {
      if (err instanceof RpcError && err.code === WRONG_TXID) return undefined;
      throw err;
    }
  }

  return { family: 'monero', verifyTransfer, network: () => probe.get(), createSubaddress };
}
