// The rows of license checkouts and licenses, their states, and a checkout's payable terms.
import type { AssetId } from '../chains/assets';
import type { BindingKind } from '../payments/binding-kinds';
import type { TermsRow } from '../payments/terms';
import type { LicenseType } from './tiers';

export const checkoutStatuses = [
  'awaiting_payment',
  'pending',
  'verifying',
  'confirmed',
  'rejected',
  'underpaid',
  'expired',
] as const;
export type CheckoutStatus = (typeof checkoutStatuses)[number];
export const checkoutSettlements = ['exact', 'overpaid', 'paid_late', 'trial', 'manual'] as const;
export type CheckoutSettlement = (typeof checkoutSettlements)[number];

export interface CheckoutRow {
  id: string;
  license_type: LicenseType;
  organization: string;
  organization_key: string;
  email: string;
  asset: AssetId | null;
  network: string | null;
  amount: string | null;
  decimals: number | null;
  contract: string | null;
  token_program: string | null;
  pay_to: string | null;
  base_amount: string | null;
  binding: BindingKind | null;
  reference_key: string | null;
  address_index: number | null;
  usd_cents: number;
  rate: { usd: string; asOf: string; source: string } | null;
  status: CheckoutStatus;
  settlement: CheckoutSettlement | null;
  reason: string | null;
  detail: string | null;
  tx_ref: string | null;
  tx_key: string | null;
  payer: string | null;
  amount_received: string | null;
  output: string | null;
  confirmations: number | null;
  checks: number;
  block_time: Date | null;
  submitted_at: Date | null;
  created_at: Date;
  updated_at: Date;
  expires_at: Date | null;
  next_check_at: Date | null;
  settled_at: Date | null;
  /** sha256 of the client secret; null for checkouts made before there were client secrets. */
  client_secret_hash: string | null;
  /** Raw X25519 public key derived from the client secret: the license key is sealed to it. */
  license_seal_key: Buffer | null;
  /** The license key, sealed to `license_seal_key` (once issued). */
  license_box: Buffer | null;
}

export interface LicenseRow {
  id: string;
  checkout_id: string;
  tier: LicenseType;
  organization: string;
  organization_key: string;
  period_days: number;
  /** sha256 of the license token: the token itself is never stored. */
  token_hash: string;
  key_id: string;
  issued_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  /** A suspended license is refused until it is resumed. */
  suspended_at: Date | null;
  /** The operator's note on a license issued by hand. */
  note: string | null;
  rotated_at: Date | null;
  /** The license key's generation: one at issue, one more at each rotation. */
  key_generation: number;
  credit_usd_cents: number;
}

/** A checkout's payable terms, as the row recorded them (set for every checkout but a trial). */
export function termsOf(row: CheckoutRow): TermsRow {
  return {
    asset: row.asset!,
    network: row.network!,
    decimals: row.decimals!,
    contract: row.contract,
    token_program: row.token_program,
    pay_to: row.pay_to!,
    amount: String(row.amount),
    binding: row.binding,
    reference_key: row.reference_key,
    address_index: row.address_index,
    created_at: row.created_at,
    expires_at: row.expires_at!,
  };
}
