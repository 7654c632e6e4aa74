// The licensing line's routes (table B), in the documents' order: reading and preparing a checkout,
// the license's entitlements, the TRIAL's challenge, paying a checkout.
import type { RouteTable } from '../../http/route';
import { checkoutPaymentRoutes, checkoutRoutes } from './checkout';
import { licenseRoutes } from './license';
import { trialRoutes } from './trial';

export function licensingRoutes(table: RouteTable): RouteTable {
  return checkoutPaymentRoutes(trialRoutes(licenseRoutes(checkoutRoutes(table))));
}
