// The contract every chain adapter meets: verify that one transaction paid one asset to one address.
import type { Asset } from '../payments/assets';

export interface VerifyRequest {
  asset: Asset;
  /** Transaction id: Solana signature, EVM tx hash, Bitcoin/Monero txid. */
  txRef: string;
  /** The receiving (treasury) address. */
  to: string;
  /** Base units that must arrive for the payment to count. */
  minAmount: bigint | string;
  /** The quote reference, for adapters that can bind a transfer to it. */
  reference?: string;
  /** Monero: the transaction secret key the payer supplies (`get_tx_key`). */
  txKey?: string;
  /** Outputs of this transaction already claimed by other payments, to be passed over. */
  skipOutputs?: readonly string[];
}

/**
 * - confirmed: a transfer of the asset to `to`, final by the family's policy, of at least minAmount;
 * - pending:   not final yet (too few confirmations, in the mempool) or the chain could not be asked;
 *              ask again later. An unreachable RPC is always pending, never mismatch;
 * - not_found: the chain does not know the transaction;
 * - mismatch:  the transaction exists but does not pay this asset to this address in full, and
 *              waiting will not change that (underpaid, wrong recipient, wrong asset, reverted, ...).
 */
export type VerifyStatus = 'confirmed' | 'pending' | 'not_found' | 'mismatch';

export type VerifyReason =
  | 'rpc_unreachable'
  | 'rpc_error'
  | 'rpc_wrong_chain'
  | 'in_mempool'
  | 'not_finalized'
  | 'too_few_confirmations'
  | 'underpaid'
  | 'wrong_recipient'
  | 'wrong_asset'
  | 'not_a_transfer'
  | 'reverted'
  | 'unsupported_asset'
  | 'tx_key_required'
  | 'invalid_tx_key'
  | 'invalid_tx_ref'
  | 'already_claimed';

export interface VerifyResult {
  status: VerifyStatus;
  /** Base units received by `to` in the chosen output, an integer string. */
  amount?: string;
  confirmations?: number;
  payer?: string;
  /** Which output paid (Solana instruction, EVM log or value, Bitcoin vout), for the unique claim (chain, tx_ref, output). */
  output?: string;
  reason?: VerifyReason;
  /** Human-readable detail for operators; never secrets. */
  detail?: string;
}

export interface Balance {
  address: string;
  asset: Asset['id'];
  /** Base units, confirmed/finalized. */
  amount: string;
  /** Base units still unconfirmed, where the chain tells. */
  pending?: string;
}

export interface ChainAdapter {
  readonly family: Asset['family'];
  verifyTransfer(req: VerifyRequest): Promise<VerifyResult>;
  /** The balance of `address` in `asset`, where the chain answers it cheaply. */
  readBalance?(address: string, asset: Asset): Promise<Balance>;
}

/** One candidate transfer found in a transaction, before policy is applied. */
export interface Transfer {
  output: string;
  to: string;
  amount: bigint;
  payer?: string;
  /** Which asset moved: a contract/mint, or 'native'. */
  token: string;
  /** Solana: the token account credited, when `to` is that account's owner. */
  tokenAccount?: string;
}
