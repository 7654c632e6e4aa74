// Payment receipts: what was paid for which job, signed with the service key over canonical JSON, so
// anyone holding the trust root (or the public key from /api/health) checks one offline. No configuration
// is loaded here.
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import type { Signer } from '../platform/crypto';
import { entryFor, leafKey } from '../platform/translog/entry';
import { asTrust, verifySignedBy } from '../platform/trust';
import type { SignatureVerdict, Trust } from '../platform/trust';

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

/**
 * Checks a receipt under the key a trust root lists for it (role `receipt`, valid at its issuedAt), or
 * under a bare public key (base64url, raw ed25519). `loggedAt`, when known, holds it against a key
 * revoked since. Never throws.
 */
export function checkReceipt(receipt: Receipt, trust: Trust, loggedAt?: string): SignatureVerdict {
  if (!receipt || receipt.type !== RECEIPT_TYPE || typeof receipt.signature !== 'string')
    return { ok: false, reason: 'bad_signature', detail: 'Not a receipt.' };
  try {
    return verifySignedBy(
      asTrust(trust),
      { keyId: receipt.keyId, role: 'receipt', signedAt: receipt.times?.issuedAt, loggedAt },
      receiptMessage(receipt),
      receipt.signature,
    );
  } catch {
    return { ok: false, reason: 'bad_signature', detail: 'Not a receipt.' };
  }
}

/** True when the receipt is unchanged since a key the trust root (or the bare key) vouches for signed it. */
export const verifyReceipt = (receipt: Receipt, trust: Trust, loggedAt?: string): boolean =>
  checkReceipt(receipt, trust, loggedAt).ok;
/**
 * The name a receipt has in the public log: the sha256 of its id, never the id itself, which opens the
 * receipt (getReceipt) and is unguessable only while it is not published. Whoever holds the receipt
 * computes it.
 */
export const receiptLogId = (receiptId: string): string => sha256Hex(receiptId);

/**
 * The log entry of an issued receipt (kind receipt, named by receiptLogId, the sha256 of the signed
 * receipt's canonical JSON) and the key it is queued and logged under.
 */
export function receiptEntry(receipt: Receipt): { key: string; entry: Buffer } {
  const id = receiptLogId(receipt.id);
  return { key: leafKey('receipt', id), entry: entryFor('receipt', id, receipt) };
}
