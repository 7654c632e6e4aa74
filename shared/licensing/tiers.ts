// License tiers: the four license types, their prices (USD cents, overridable by
// LICENSE_PRICES_USD_CENTS) and periods, what each grants (product lines, quotas per period, prepaid
// exchange credit), and the trial terms. Read by acquisition, checkout and the entitlement checks.
import { env } from '../platform/env';

export const licenseTypes = ['TRIAL', 'Starter', 'Business', 'Enterprise'] as const;
export type LicenseType = (typeof licenseTypes)[number];
export type PaidLicenseType = Exclude<LicenseType, 'TRIAL'>;

export const TRIAL_DAYS = 14;

/** The product lines a license can grant; the agent exchange's priced jobs are paid per job. */
export const productLines = ['workflows', 'governance', 'treasury', 'auctions'] as const;
export type ProductLine = (typeof productLines)[number];

/** What one quota unit of a product line is. */
export const quotaUnits: Record<ProductLine, string> = {
  workflows: 'proof workflow started',
  governance: 'governance proposal created',
  treasury: 'treasury request created',
  auctions: 'auction created',
};

export interface Entitlements {
  productLines: readonly ProductLine[];
  /** Units per license period for each granted line; null is unlimited. */
  quotas: Partial<Record<ProductLine, number | null>>;
  /**
   * Prepaid credit for priced exchange jobs, USD cents per license period; a job it pays is debited
   * in the transaction that creates the job. Zero: every priced job is quoted and paid on chain.
   */
  creditUsdCents: number;
}

/** The entitlements of each tier (docs/licensing.md states the same table). */
export const tierEntitlements: Record<LicenseType, Entitlements> = {
  TRIAL: {
    productLines: productLines,
    quotas: { workflows: 25, governance: 5, treasury: 10, auctions: 2 },
    creditUsdCents: 0,
  },
  Starter: {
    productLines: ['workflows'],
    quotas: { workflows: 500 },
    creditUsdCents: 0,
  },
  Business: {
    productLines: productLines,
    quotas: { workflows: 5_000, governance: 200, treasury: 1_000, auctions: 50 },
    creditUsdCents: 5_000,
  },
  Enterprise: {
    productLines: productLines,
    quotas: { workflows: null, governance: null, treasury: null, auctions: null },
    creditUsdCents: 50_000,
  },
};

export interface LicenseTier {
  type: LicenseType;
  /** USD cents per period; 0 for the trial. */
  priceUsdCents: number;
  period: 'trial' | 'month' | 'year';
  /** Length of one period in days (the trial's whole length). */
  periodDays: number;
  description: string;
  entitlements: Entitlements;
}

const defaults: Record<PaidLicenseType, number> = { Starter: 4_900, Business: 19_900, Enterprise: 99_900 };

/** Parses "Starter=4900,Business=19900"; the format is checked by shared/platform/env. */
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
      description: `Every product line at small quotas for ${TRIAL_DAYS} days, once per wallet and per organization; priced exchange jobs are paid per job.`,
      entitlements: tierEntitlements.TRIAL,
    },
    {
      type: 'Starter',
      priceUsdCents: prices.Starter,
      period: 'month',
      periodDays: 30,
      description: 'One organization, proof workflows at standard volume.',
      entitlements: tierEntitlements.Starter,
    },
    {
      type: 'Business',
      priceUsdCents: prices.Business,
      period: 'month',
      periodDays: 30,
      description:
        'Higher volume, governance, treasury coordination and sealed auctions, and prepaid credit for exchange jobs.',
      entitlements: tierEntitlements.Business,
    },
    {
      type: 'Enterprise',
      priceUsdCents: prices.Enterprise,
      period: 'month',
      periodDays: 30,
      description:
        'Unlimited volume, more prepaid exchange credit, dedicated prover capacity and priority support.',
      entitlements: tierEntitlements.Enterprise,
    },
  ];
}

export function findTier(type: string): LicenseTier | undefined {
  return licenseTiers().find((t) => t.type === type);
}

export const trialTerms = {
  days: TRIAL_DAYS,
  perOrganization: 1,
  perWallet: 1,
  detail: `One ${TRIAL_DAYS}-day trial per wallet and per organization, claimed with a wallet signature over a challenge from POST /api/v1/commercial/trial/challenge; it carries no exchange credit and converts to nothing unless a paid tier is bought.`,
} as const;
