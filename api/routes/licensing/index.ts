// The licensing line's routes (the commercial table), in the documents' order: reading and preparing a
// checkout, the license's entitlements, the TRIAL's challenge, paying a checkout; then the organization's own
// API keys and the operator's administration of licenses and keys.
import type { RouteTable } from '../../http/route';
import { adminRoutes } from './admin';
import { checkoutPaymentRoutes, checkoutRoutes } from './checkout';
import { organizationKeyRoutes } from './keys';
import { licenseRoutes } from './license';
import { trialRoutes } from './trial';

export function licensingRoutes(table: RouteTable): RouteTable {
  return adminRoutes(
    organizationKeyRoutes(checkoutPaymentRoutes(trialRoutes(licenseRoutes(checkoutRoutes(table))))),
  );
}
