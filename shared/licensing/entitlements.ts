// What a license lets its holder do: the product lines of its tier, a quota of units per line for the
// license's period, and prepaid credit for priced exchange jobs. Each spend is one conditional
// statement, so concurrent requests never overspend.
import type { Knex } from 'knex';
import type { Prepayment } from '../jobs/jobs';
import type { Db } from '../platform/db/knex';
import { AppError } from '../platform/errors';
import { logger } from '../platform/log';
import { productLines, quotaUnits, tierEntitlements } from './tiers';
import type { LicenseType, ProductLine } from './tiers';

export interface LicenseHolder {
  licenseId: string;
  tier: string;
}

const entitlementsOf = (tier: string) => tierEntitlements[tier as LicenseType];

/** Refuses a license whose tier does not include the product line (403). */
export function requireProductLine(license: LicenseHolder, line: ProductLine): void {
  if (!entitlementsOf(license.tier)?.productLines.includes(line)) {
    throw new AppError(
      403,
      'license_product_not_included',
      `A ${license.tier} license does not include ${line}; see GET /api/acquisition for what each tier grants.`,
    );
  }
}

/**
 * Spends one unit of the line's quota (after requireProductLine). Returns a refund for a request that
 * then created nothing; `403 license_quota_exhausted` when the period's units are spent.
 */
export async function spendQuota(
  db: Db,
  license: LicenseHolder,
  line: ProductLine,
): Promise<() => Promise<void>> {
  requireProductLine(license, line);
  const quota = entitlementsOf(license.tier)!.quotas[line] ?? null;
  const exhausted = () =>
    new AppError(
      403,
      'license_quota_exhausted',
      `This license has used its ${quota} units (${quotaUnits[line]}) for the period; a higher tier raises the quota.`,
    );
  if (quota !== null && quota < 1) throw exhausted();
  const { rows } = await db.raw(
    `insert into license_usage (license_id, product_line, used) values (?, ?, 1)
     on conflict (license_id, product_line) do update
       set used = license_usage.used + 1, updated_at = now()
       where ?::int is null or license_usage.used < ?::int
     returning used`,
    [license.licenseId, line, quota, quota],
  );
  if ((rows as unknown[]).length === 0) throw exhausted();
  return async () => {
    // A refund that fails leaves one unit spent: the caller's own error is what they need to see.
    await db('license_usage')
      .where({ license_id: license.licenseId, product_line: line })
      .andWhere('used', '>', 0)
      .decrement('used', 1)
      .catch((err: Error) => logger.warn({ err: err.message, line }, 'quota refund failed'));
  };
}

/** Units used and left per granted line, for the license's own view. */
export async function licenseUsage(db: Db, license: LicenseHolder) {
  const rows = (await db('license_usage').where({ license_id: license.licenseId })) as Array<{
    product_line: ProductLine;
    used: number;
  }>;
  const used = new Map(rows.map((r) => [r.product_line, r.used]));
  const ent = entitlementsOf(license.tier);
  return productLines
    .filter((l) => ent?.productLines.includes(l))
    .map((line) => {
      const quota = ent!.quotas[line] ?? null;
      const u = used.get(line) ?? 0;
      return {
        line,
        unit: quotaUnits[line],
        quota,
        used: u,
        left: quota === null ? null : Math.max(0, quota - u),
      };
    });
}

/** The license's own view: its tier and what it grants, the quota used per line and the credit left. */
export async function licenseEntitlements(db: Db, license: LicenseHolder) {
  const row = (await db('licenses').where({ id: license.licenseId }).first()) as {
    id: string;
    tier: LicenseType;
    organization: string;
    expires_at: Date;
    credit_usd_cents: number;
  };
  return {
    licenseId: row.id,
    tier: row.tier,
    organization: row.organization,
    expiresAt: new Date(row.expires_at).toISOString(),
    productLines: [...tierEntitlements[row.tier].productLines],
    usage: await licenseUsage(db, license),
    creditUsdCents: row.credit_usd_cents,
  };
}

/** The credit a newly issued license of this tier carries. */
export const initialCredit = (tier: string): number => entitlementsOf(tier)?.creditUsdCents ?? 0;

/**
 * Pays a priced job from the license's prepaid credit, inside the transaction that creates the job:
 * true when debited; false (nothing changed) when the license lacks the credit, is revoked or expired.
 * The caller records the debit against the job once the job row exists (`recordCreditDebit`).
 */
export async function debitCredit(
  trx: Knex.Transaction,
  licenseId: string,
  usdCents: number,
): Promise<boolean> {
  if (usdCents <= 0) return false;
  const debited = await trx('licenses')
    .where({ id: licenseId })
    .whereNull('revoked_at')
    .andWhere('expires_at', '>', trx.fn.now())
    .andWhere('credit_usd_cents', '>=', usdCents)
    .decrement('credit_usd_cents', usdCents);
  return debited > 0;
}

/** A license's prepaid credit as what pays a priced job as it is made (`createJob`'s prepayment). */
export const creditPrepayment = (licenseId: string): Prepayment => ({
  take: (trx, usdCents) => debitCredit(trx, licenseId, usdCents),
  record: (trx, jobId, usdCents) => recordCreditDebit(trx, { jobId, licenseId, usdCents }),
});

export async function recordCreditDebit(
  trx: Knex.Transaction,
  debit: { jobId: string; licenseId: string; usdCents: number },
): Promise<void> {
  await trx('license_credit_debits').insert({
    job_id: debit.jobId,
    license_id: debit.licenseId,
    usd_cents: debit.usdCents,
  });
}
