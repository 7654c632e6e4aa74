// The rows of job payments: quotes and payments as stored, their states, and the settings they read.
import type { AssetId } from '../chains/assets';
import type { env } from '../platform/env';
import type { BindingKind } from './binding-kinds';
import type { Quote } from './pricing';

export const paymentStatuses = [
  'pending',
  'verifying',
  'confirmed',
  'rejected',
  'underpaid',
  'expired',
] as const;
export type PaymentStatus = (typeof paymentStatuses)[number];
export const settlements = ['exact', 'overpaid', 'paid_late'] as const;
export type Settlement = (typeof settlements)[number];

export interface QuoteRow {
  id: string;
  job_id: string;
  asset: AssetId;
  network: string;
  amount: string;
  decimals: number;
  contract: string | null;
  token_program: string | null;
  /** The treasury's address, or the quote's own (a BIP84 address, a Monero subaddress). */
  pay_to: string;
  usd_cents: number;
  rate: Quote['rate'] | null;
  /** reference | amount | address; null for quotes made before bindings. */
  binding: BindingKind | null;
  reference_key: string | null;
  address_index: number | null;
  /** The price before the unique offset. */
  base_amount: string | null;
  created_at: Date;
  expires_at: Date;
}

export interface PaymentRow {
  id: string;
  job_id: string;
  quote_id: string;
  asset: AssetId;
  chain: string;
  tx_ref: string;
  payer: string | null;
  tx_key: string | null;
  status: PaymentStatus;
  settlement: Settlement | null;
  reason: string | null;
  detail: string | null;
  amount_received: string | null;
  output: string | null;
  confirmations: number | null;
  checks: number;
  /** When the chain says the transfer was made. */
  block_time: Date | null;
  created_at: Date;
  updated_at: Date;
  next_check_at: Date | null;
  settled_at: Date | null;
  /** Settled on a development chain (npm start's): demo money, never revenue. */
  development: boolean;
}

export type PaymentSettings = Pick<
  typeof env,
  'QUOTE_LATE_WINDOW_SECONDS' | 'QUOTE_TTL_SECONDS' | 'PAYMENT_RECHECK_MS' | 'PAYMENT_RECHECK_MAX_MS'
>;
