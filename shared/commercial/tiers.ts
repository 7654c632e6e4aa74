// License tiers: the four license types, their prices (USD cents, overridable by
// LICENSE_PRICES_USD_CENTS) and periods, and the trial terms. Read by acquisition and by checkout.
import { env } from '../env';

export const licenseTypes = ['TRIAL', 'Starter', 'Business', 'Enterprise'] as const;
export type LicenseType = (typeof licenseTypes)[number];
export type PaidLicenseType = Exclude<LicenseType, 'TRIAL'>;

export const TRIAL_DAYS = 14;

export interface LicenseTier {
  type: LicenseType;
  /** USD cents per period; 0 for the trial. */
  priceUsdCents: number;
  period: 'trial' | 'month' | 'year';
  /** Length of one period in days (the trial's whole length). */
  periodDays: number;
  description: string;
}

const defaults: Record<PaidLicenseType, number> = { Starter: 4_900, Business: 19_900, Enterprise: 99_900 };

/** Parses "Starter=4900,Business=19900"; the format is checked by shared/env. */
export function parsePriceOverrides(text: string | undefined): Partial<Record<PaidLicenseType, number>> {
  if (!text) return {};
  return Object.fromEntries(
    text.split(',').map((pair) => {
      const [tier, cents] = pair.split('=');
      return [tier as PaidLicenseType, Number(cents)];
    }),
  );
}

export function licenseTiers(overrides: string | undefined = env.LICENSE_PRICES_USD_CENTS): LicenseTier[] {
  const prices = { ...defaults, ...parsePriceOverrides(overrides) };
  return [
    {
      type: 'TRIAL',
      priceUsdCents: 0,
      period: 'trial',
      periodDays: TRIAL_DAYS,
      description: `Every paid feature for ${TRIAL_DAYS} days, once per organization.`,
    },
    {
      type: 'Starter',
      priceUsdCents: prices.Starter,
      period: 'month',
      periodDays: 30,
      description: 'One organization, proof workflows and blind policy proofs at standard volume.',
    },
    {
      type: 'Business',
      priceUsdCents: prices.Business,
      period: 'month',
      periodDays: 30,
      description: 'Higher volume, governance, treasury coordination and sealed auctions.',
    },
    {
      type: 'Enterprise',
      priceUsdCents: prices.Enterprise,
      period: 'month',
      periodDays: 30,
      description: 'Unlimited volume, dedicated prover capacity and priority support.',
    },
  ];
}

export function findTier(type: string): LicenseTier | undefined {
  return licenseTiers().find((t) => t.type === type);
}

export const trialTerms = {
  days: TRIAL_DAYS,
  perOrganization: 1,
  detail: `One ${TRIAL_DAYS}-day trial per organization; it converts to nothing unless a paid tier is bought.`,
} as const;
