// Monero adapter: monero-wallet-rpc `check_tx_key`. Amounts are hidden on chain, so the payer supplies
// the transaction's secret key and the wallet RPC decodes what the treasury address received.
import { RpcError, jsonRpc, unreachable } from './http';
import type { RpcOptions } from './http';
import { judgeTransfers } from './judge';
import type { ChainAdapter, VerifyRequest, VerifyResult } from './types';

// wallet_rpc_server_error_codes.h
const WRONG_TXID = -8;
const WRONG_KEY = -25;
const UNKNOWN_ERROR = -1;

interface CheckTxKey {
  received: number | string;
  in_pool: boolean;
  confirmations: number;
}

export interface MoneroAdapterOptions extends RpcOptions {
  /** Base URL of monero-wallet-rpc (its /json_rpc endpoint is used); run it with --disable-rpc-login on loopback. */
  walletRpcUrl: string;
  confirmations: number;
}

export function createMoneroAdapter(options: MoneroAdapterOptions): ChainAdapter {
  const endpoint = `${options.walletRpcUrl.replace(/\/+$/, '').replace(/\/json_rpc$/, '')}/json_rpc`;

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
    try {
      res = await jsonRpc<CheckTxKey>(
        endpoint,
        'check_tx_key',
        { txid: req.txRef, tx_key: req.txKey, address: req.to },
        {
          ...options,
          exactIntegers: ['received'],
        },
      );
    } catch (err) {
      const down = unreachable(err);
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
    const transfers = received > 0n ? [{ output: 'tx', to: req.to, amount: received, token: 'native' }] : [];
    if (transfers.length === 0) {
      return {
        status: 'mismatch',
        reason: 'wrong_recipient',
        confirmations,
        detail: 'The key shows nothing received by the address.',
      };
    }
    return judgeTransfers(transfers, req, 'native', {
      final: !res.in_pool && confirmations >= options.confirmations,
      confirmations,
      reason: res.in_pool ? 'in_mempool' : 'too_few_confirmations',
    });
  }

  return { family: 'monero', verifyTransfer };
}
