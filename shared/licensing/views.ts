// What the holder of a checkout's client secret sees of it (read by ./checkouts.ts): the checkout, its
// payment instructions, and the license with its key once issued.
import { paymentInstructions } from '../payments/instructions';
import { formatUnits } from '../payments/pricing';
import { lateWindowMs } from '../payments/verdict';
import { env } from '../platform/env';
import { serviceSigningKey } from '../platform/keys';
import type { IssuedLicense } from './licenses';
import { termsOf } from './rows';
import type { CheckoutRow } from './rows';

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);

/** The buyer's view of a license: the key is shown only to the holder of the checkout's secret. */
export function licenseView({ license: row, token }: IssuedLicense) {
  const key = serviceSigningKey();
  return {
    id: row.id,
    tier: row.tier,
    organization: row.organization,
    periodDays: row.period_days,
    issuedAt: iso(row.issued_at)!,
    expiresAt: iso(row.expires_at)!,
    revoked: !!row.revoked_at,
    token,
    keyId: row.key_id,
    verification: {
      publicKey: key.publicKey,
      format:
        'lk_ + base64url(canonical JSON payload) + "." + base64url(ed25519 signature over the payload segment)',
    },
  };
}

/**
 * The buyer's view of a checkout: never the email, never a Monero transaction key, never its secret;
 * the license (and its key) when the caller holds it.
 */
export function checkoutView(row: CheckoutRow, issued?: IssuedLicense) {
  const watchUntil = row.expires_at ? new Date(new Date(row.expires_at).getTime() + lateWindowMs(env)) : null;
  return {
    id: row.id,
    licenseType: row.license_type,
    organization: row.organization,
    status: row.status,
    settlement: row.settlement,
    reason: row.reason,
    detail: row.detail,
    usdCents: row.usd_cents,
    payment: row.asset
      ? {
          asset: row.asset,
          network: row.network!,
          amount: String(row.amount),
          amountDisplay: formatUnits(BigInt(row.amount!), row.decimals!),
          decimals: row.decimals!,
          ...(row.contract ? { contract: row.contract } : {}),
          payTo: row.pay_to!,
          reference: row.id,
          ...(row.rate ? { rate: row.rate } : {}),
          ...(row.binding ? { binding: row.binding } : {}),
          expiresAt: iso(row.expires_at)!,
          watchUntil: iso(watchUntil)!,
          paymentInstructions: paymentInstructions(termsOf(row), {
            reference: row.id,
            label: 'proof-exchange',
            message: `${row.license_type} license for ${row.organization}`,
          }),
        }
      : null,
    transaction: row.tx_ref
      ? {
          txRef: row.tx_ref,
          payer: row.payer,
          amountReceived: row.amount_received === null ? null : String(row.amount_received),
          confirmations: row.confirmations,
          blockTime: iso(row.block_time),
          submittedAt: iso(row.submitted_at),
          nextCheckAt: iso(row.next_check_at),
        }
      : null,
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
    settledAt: iso(row.settled_at),
    license: issued ? licenseView(issued) : null,
  };
}
