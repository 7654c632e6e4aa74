// What the payer is told: the instructions and wallet URI (Solana Pay, EIP-681, BIP21, Monero) built
// from a payable row's stored terms.
import { formatUnits } from './pricing';
import { assetSnapshot, bindingOf } from './terms';
import type { TermsRow } from './terms';

export interface PaymentInstructions {
  /** The request format: Solana Pay transfer request, EIP-681, BIP21, or the Monero URI scheme. */
  scheme: 'solana-pay' | 'eip-681' | 'bip-21' | 'monero';
  /** Open in a wallet (or show as a QR code): it carries the recipient, amount and identifying fields. */
  uri: string;
  payTo: string;
  asset: string;
  network: string;
  contract?: string;
  /** Base units to send. */
  amount: string;
  amountDisplay: string;
  /** True where the amount itself identifies the quote: send exactly this, no more, no less. */
  exactAmount: boolean;
  /** Solana Pay: the public key the transaction must include as a read-only account. */
  reference?: string;
  /** Submit the transaction id (and for Monero its tx key) to this quote's payment route after sending. */
  notes: string[];
}

const sameTime = 'Send it only after this quote was made: a transfer older than the quote pays nothing.';

/** Builds the payer's instructions and wallet URI from the stored row. */
export function paymentInstructions(
  row: TermsRow,
  meta: { reference: string; label: string; message: string },
): PaymentInstructions {
  const asset = assetSnapshot(row);
  const amount = String(row.amount);
  const display = formatUnits(BigInt(amount), row.decimals);
  const binding = bindingOf(row);
  const common = {
    payTo: row.pay_to,
    asset: String(row.asset),
    network: row.network,
    ...(row.contract ? { contract: row.contract } : {}),
    amount,
    amountDisplay: display,
    exactAmount: binding?.kind === 'amount',
  };
  switch (asset.family) {
    case 'solana': {
      // The Solana Pay transfer request (solana:<recipient>?amount&spl-token&reference&label&message&memo).
      const params = new URLSearchParams({ amount: display });
      if (row.contract) params.set('spl-token', row.contract);
      if (row.reference_key) params.set('reference', row.reference_key);
      params.set('label', meta.label);
      params.set('message', meta.message);
      params.set('memo', meta.reference);
      return {
        scheme: 'solana-pay',
        uri: `solana:${row.pay_to}?${params.toString()}`,
        ...common,
        ...(row.reference_key ? { reference: row.reference_key } : {}),
        notes: [
          `Include ${row.reference_key} as a read-only, non-signer account of the transfer instruction (Solana Pay wallets do this from the URI): a transaction without it pays nothing.`,
          sameTime,
        ],
      };
    }
    case 'evm': {
      // EIP-681: native value to the address, or the token contract's transfer(address, uint256).
      const chainId = row.network.split(':')[1];
      const uri = row.contract
        ? `ethereum:${row.contract}@${chainId}/transfer?address=${row.pay_to}&uint256=${amount}`
        : `ethereum:${row.pay_to}@${chainId}?value=${amount}`;
      return {
        scheme: 'eip-681',
        uri,
        ...common,
        notes: [
          `Send exactly ${amount} base units (${display} ${asset.symbol}): the amount tells this quote from every other open one, so any other amount pays nothing here.`,
          sameTime,
        ],
      };
    }
    case 'bitcoin': {
      const params = new URLSearchParams({ amount: display, label: meta.label, message: meta.message });
      return {
        scheme: 'bip-21',
        uri: `bitcoin:${row.pay_to}?${params.toString()}`,
        ...common,
        notes: [
          binding?.kind === 'amount'
            ? `Send exactly ${amount} sat: the amount tells this quote from every other open one.`
            : 'The address belongs to this quote alone; a payment to another quote’s address does not pay this one.',
          sameTime,
        ],
      };
    }
    case 'monero': {
      const params = new URLSearchParams({ tx_amount: display, tx_description: meta.message });
      return {
        scheme: 'monero',
        uri: `monero:${row.pay_to}?${params.toString()}`,
        ...common,
        notes: [
          'The subaddress belongs to this quote alone. Submit the transaction id with its tx key (get_tx_key); an output locked until a later time or height pays nothing.',
          sameTime,
        ],
      };
    }
  }
}
