// Payment receipts: what was paid for which job, signed with the service key over canonical JSON, so
// anyone holding the public key from /api/health checks one offline. No configuration is loaded here.
import { canonicalJson } from '../canonical';
import { verifyEd25519 } from '../crypto';
import type { Signer } from '../crypto';

export const RECEIPT_TYPE = 'proof-exchange.receipt/v1';

export interface Receipt {
  type: typeof RECEIPT_TYPE;
  id: string;
  jobId: string;
  serviceId: string;
  paymentId: string;
  asset: string;
  /** CAIP-2 chain id. */
  network: string;
  decimals: number;
  /** Base units received, an integer string. */
  amount: string;
  /** Base units quoted. */
  quotedAmount: string;
  usdCents: string;
  payTo: string;
  payer: string | null;
  /** exact, overpaid or paid_late. */
  settlement: string;
  transaction: { txRef: string; output: string; confirmations: number | null };
  quote: { reference: string; createdAt: string; expiresAt: string };
  times: { submittedAt: string; confirmedAt: string; issuedAt: string };
  keyId: string;
  signature: string;
}

export type UnsignedReceipt = Omit<Receipt, 'signature'>;

/** The exact bytes the signature covers: canonical JSON of every field except the signature. */
export function receiptMessage(receipt: UnsignedReceipt | Receipt): string {
  const body: Record<string, unknown> = { ...receipt };
  delete body.signature;
  return canonicalJson(body);
}

export function signReceipt(body: Omit<UnsignedReceipt, 'keyId'>, signer: Signer): Receipt {
  const unsigned: UnsignedReceipt = { ...body, keyId: signer.keyId };
  return { ...unsigned, signature: signer.sign(receiptMessage(unsigned)) };
}

/** True when the receipt is unchanged since the holder of `publicKey` (base64url, raw ed25519) signed it. */
export function verifyReceipt(receipt: Receipt, publicKey: string): boolean {
  if (!receipt || receipt.type !== RECEIPT_TYPE || typeof receipt.signature !== 'string') return false;
  try {
    return verifyEd25519(publicKey, receiptMessage(receipt), receipt.signature);
  } catch {
    return false;
  }
}
