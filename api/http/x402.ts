// x402 over HTTP: the PAYMENT-REQUIRED header an unpaid job's reply carries, the payment a createJob
// retry sends (v2's header or the legacy one), and the settlement header answered to it.
import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import type { Request } from 'express';
import type { JobPaymentView } from '../../shared/payments/views';
import type { X402Paid } from '../../shared/payments/x402/pay';
import { LEGACY_PAYMENT_HEADER, PAYMENT_SIGNATURE_HEADER } from '../../shared/payments/x402/header';

/** The x402 PAYMENT-REQUIRED header value (base64 JSON, v2) for an unpaid job. */
export function paymentRequiredHeader(payment: JobPaymentView | undefined): Record<string, string> {
  if (!payment?.x402) return {};
  return { 'PAYMENT-REQUIRED': encodePaymentRequiredHeader(payment.x402) };
}

/** The payment header of a createJob retry, v2's or the legacy one, if the request carries one. */
export function paymentSignatureOf(req: Request): { value: string; legacy: boolean } | undefined {
  const v2 = req.header(PAYMENT_SIGNATURE_HEADER);
  if (v2 !== undefined) return { value: v2, legacy: false };
  const legacy = req.header(LEGACY_PAYMENT_HEADER);
  return legacy !== undefined ? { value: legacy, legacy: true } : undefined;
}

/** The settlement, answered in the header named as the payment was sent (v2's or the legacy one). */
export function paymentResponseHeader(
  settlement: X402Paid['settlement'],
  legacy: boolean,
): Record<string, string> {
  return { [legacy ? 'X-PAYMENT-RESPONSE' : 'PAYMENT-RESPONSE']: encodePaymentResponseHeader(settlement) };
}
