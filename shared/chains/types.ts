// The contract every chain adapter meets: verify that one transaction paid one quote — the asset, the
// address, the amount, made for that quote (its binding) and after it.
import type { Asset } from './assets';

/**
 * How a transfer shows it was made for one quote, per chain family:
 * - reference: Solana Pay — the quote's reference public key is among the transaction's account keys;
 * - amount:    the quote's amount is unique among open quotes of the asset and address, so the
 *              transfer must carry exactly that amount (EVM; Bitcoin with a single address);
 * - address:   the quote has an address of its own (a BIP84 address, a Monero subaddress), so a
 *              transfer to that address is for that quote.
 */
export type TransferBinding =
  { kind: 'reference'; reference: string } | { kind: 'amount' } | { kind: 'address'; index: number };

export interface VerifyRequest {
  /** The asset as the quote recorded it (network, contract, decimals), not as configured today. */
  asset: Asset;
  /** Transaction id: Solana signature, EVM tx hash, Bitcoin/Monero txid. */
  txRef: string;
  /** The receiving address: the treasury's, or the quote's own. */
  to: string;
  /** Base units that must arrive for the payment to count. */
  minAmount: bigint | string;
  /** What ties the transfer to the quote; absent only for quotes made before bindings existed. */
  binding?: TransferBinding;
  /** When the quote was made: a transfer whose block time is earlier (less the clock skew) pays nothing. */
  quotedAt?: Date;
  /** Monero: the transaction secret key the payer supplies (`get_tx_key`). */
  txKey?: string;
  /** Outputs of this transaction already claimed by other payments, to be passed over. */
  skipOutputs?: readonly string[];
}

/**
 * - confirmed: a transfer of the asset to `to`, made for the quote and after it, final by the family's
 *              policy, of at least minAmount;
 * - pending:   not final yet (too few confirmations, in the mempool) or the chain could not be asked
 *              (or the endpoint serves another network); ask again later. Never mismatch for those;
 * - not_found: the chain does not know the transaction;
 * - mismatch:  the transaction exists but does not pay this quote, and waiting will not change that
 *              (underpaid, wrong recipient, wrong asset, reverted, made before the quote, not bound ...).
 */
export type VerifyStatus = 'confirmed' | 'pending' | 'not_found' | 'mismatch';

export type VerifyReason =
  | 'rpc_unreachable'
  | 'rpc_error'
  | 'rpc_wrong_chain'
  | 'in_mempool'
  | 'not_finalized'
  | 'too_few_confirmations'
  | 'block_time_unknown'
  | 'underpaid'
  | 'wrong_recipient'
  | 'wrong_asset'
  | 'not_a_transfer'
  | 'reverted'
  | 'unsupported_asset'
  | 'tx_key_required'
  | 'invalid_tx_key'
  | 'invalid_tx_ref'
  | 'already_claimed'
  | 'transfer_before_quote'
  | 'reference_missing'
  | 'amount_mismatch'
  | 'output_locked';

export interface VerifyResult {
  status: VerifyStatus;
  /** Base units received by `to` in the chosen output, an integer string. */
  amount?: string;
  confirmations?: number;
  payer?: string;
  /** Which output paid (Solana receiving account, EVM log or value, Bitcoin vout), for the unique claim (chain, tx_ref, output). */
  output?: string;
  /** When the block holding the transaction was made (ISO 8601), once it is in one. */
  blockTime?: string;
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
  /**
   * Many checks at once, one result per request in order, where the family's endpoint can answer them
   * together (EVM: JSON-RPC batches). Without it, callers check one by one.
   */
  verifyTransfers?(reqs: readonly VerifyRequest[]): Promise<VerifyResult[]>;
  /**
   * The CAIP-2 id of the network the endpoint serves, asked at first use and again after the endpoint
   * was unreachable (a reconnect may land on another node). Throws when the endpoint cannot be asked.
   */
  network(): Promise<string>;
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
