// Decoding a payment header: an x402 v2 payload of the `exact` scheme with an EIP-3009 authorization,
// every field bounded before anything is looked up, written or sent.
import { decodePaymentSignatureHeader } from '@x402/core/http';
import { isPaymentPayloadV2, parsePaymentPayload } from '@x402/core/schemas';
import type { PaymentPayload } from '@x402/core/types';
import { z } from 'zod';
import { badRequest } from '../../platform/errors';

/** The request headers that carry a payment: v2's, and v1's name, which some clients still send. */
export const PAYMENT_SIGNATURE_HEADER = 'payment-signature';
export const LEGACY_PAYMENT_HEADER = 'x-payment';

/**
 * A header longer than this is no payment of ours (a real one is about 1.5 KB). Node refuses headers
 * over 16 KB in all anyway; this names the refusal.
 */
export const PAYMENT_HEADER_MAX_CHARS = 12_288;
const UINT256_MAX = (1n << 256n) - 1n;
/**
 * The latest second an authorization may name (9999-12-31T23:59:59Z): a date JavaScript and Postgres
 * both hold. EIP-3009 allows any uint256; a later one could never be stored as a date.
 */
export const LATEST_AUTHORIZATION_SECOND = 253_402_300_799n;

const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'a 0x-prefixed 20-byte hex address');
/** A canonical decimal integer (no sign, no fraction, no leading zero) of at most `max`. */
const canonicalDecimal = /^(0|[1-9][0-9]{0,77})$/;
const decimal = (max: bigint) =>
  z
    .string()
    .regex(canonicalDecimal, 'a decimal integer without sign, fraction or leading zero')
    .refine((v) => !canonicalDecimal.test(v) || BigInt(v) <= max, `at most ${max}`);
const eip3009Payload = z.object({
  // 65 bytes from an account; longer for a smart wallet (EIP-1271, ERC-6492), within the header's bound.
  signature: z.string().regex(/^0x[0-9a-fA-F]{2,8192}$/, 'a 0x-prefixed hex signature'),
  authorization: z
    .object({
      from: evmAddress,
      to: evmAddress,
      value: decimal(UINT256_MAX),
      validAfter: decimal(LATEST_AUTHORIZATION_SECOND),
      validBefore: decimal(LATEST_AUTHORIZATION_SECOND),
      nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'a 0x-prefixed 32-byte hex nonce'),
    })
    .refine((a) => BigInt(a.validAfter) < BigInt(a.validBefore), {
      // Only once both are decimals (refinements of the object may run after a field failed).
      when: (p) => p.issues.length === 0,
      message: 'validAfter must be before validBefore',
      path: ['validAfter'],
    }),
});
export type Eip3009Payload = z.infer<typeof eip3009Payload>;

/** Every field of the accepted requirement, bounded (the @x402 schema only asks for non-empty strings). */
const acceptedTerms = z.object({
  scheme: z.literal('exact'),
  network: z.string().regex(/^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/, 'a CAIP-2 chain id'),
  amount: decimal(UINT256_MAX),
  asset: evmAddress,
  payTo: evmAddress,
  maxTimeoutSeconds: z.number().int().positive().max(2_147_483_647),
  extra: z.looseObject({
    name: z.string().max(100).optional(),
    version: z.string().max(32).optional(),
    reference: z.string().max(64).optional(),
  }),
});

/** The first issue of a refused payload, as `where: message`. */
const firstIssue = (where: string, error: z.ZodError) => {
  const issue = error.issues[0]!;
  return { path: [where, ...issue.path.map(String)].join('.'), message: issue.message };
};

/** Decodes and checks the header: an x402 v2 payload of the `exact` scheme with an EIP-3009 authorization. */
export function decodePaymentHeader(header: string): { payload: PaymentPayload; exact: Eip3009Payload } {
  if (header.length > PAYMENT_HEADER_MAX_CHARS) {
    throw badRequest(
      'payment_signature_invalid',
      `PAYMENT-SIGNATURE is longer than ${PAYMENT_HEADER_MAX_CHARS} characters.`,
    );
  }
  let decoded: unknown;
  try {
    decoded = decodePaymentSignatureHeader(header.trim());
  } catch {
    throw badRequest('payment_signature_invalid', 'PAYMENT-SIGNATURE is not base64-encoded JSON.');
  }
  const parsed = parsePaymentPayload(decoded);
  if (!parsed.success) {
    throw badRequest('payment_signature_invalid', 'PAYMENT-SIGNATURE is not an x402 payment payload.');
  }
  if (!isPaymentPayloadV2(parsed.data)) {
    throw badRequest(
      'x402_version_unsupported',
      'This service speaks x402 version 2: send PAYMENT-SIGNATURE with a v2 payload for one of the requirements in PAYMENT-REQUIRED.',
    );
  }
  const exact = eip3009Payload.safeParse(parsed.data.payload);
  if (parsed.data.accepted.scheme !== 'exact' || !exact.success) {
    throw badRequest(
      'payment_signature_invalid',
      'Only the `exact` scheme with an EIP-3009 authorization is taken here.',
      exact.success ? undefined : [firstIssue('payload', exact.error)],
    );
  }
  // Bounded here, before anything is looked up, written or sent: a field no chain or database could
  // hold (a validBefore of 2^200, an amount past uint256) is a malformed payment, not a server error.
  const terms = acceptedTerms.safeParse(parsed.data.accepted);
  if (!terms.success) {
    throw badRequest(
      'payment_signature_invalid',
      'The accepted requirement is not one this service could have stated.',
      [firstIssue('accepted', terms.error)],
    );
  }
  return { payload: parsed.data as PaymentPayload, exact: exact.data };
}
