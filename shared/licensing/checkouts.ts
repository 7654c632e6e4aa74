// Reading a checkout for the holder of its client secret, with its license and license key once
// issued; ./views.ts shapes what they see of it.
import type { Db } from '../platform/db/knex';
import { openLicenseToken } from './licenses';
import type { IssuedLicense } from './licenses';
import type { CheckoutRow, LicenseRow } from './rows';
import { checkoutOpenedBy, expireCheckouts } from './verify';

/** One checkout for the holder of its client secret, with its license and license key once issued. */
export async function getCheckout(
  db: Db,
  checkoutId: string,
  clientSecret: string | undefined,
): Promise<{ checkout: CheckoutRow; issued: IssuedLicense | undefined }> {
  await checkoutOpenedBy(db, checkoutId, clientSecret);
  await expireCheckouts(db, checkoutId);
  const checkout = (await db('checkouts').where({ id: checkoutId }).first()) as CheckoutRow;
  const license = (await db('licenses').where({ checkout_id: checkoutId }).first()) as LicenseRow | undefined;
  const token = license && openLicenseToken(checkout, license, clientSecret!);
  return { checkout, issued: license && token ? { license, token } : undefined };
}
