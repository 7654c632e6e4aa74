// The rest of the exchange table, in the spec's order: registry, discovery and acquisition, referrals,
// marketplace, logistics, agreements, revenue and treasury.
import type { RouteTable } from '../../http/route';
import { agreementRoutes } from './agreements';
import { discoveryRoutes } from './discovery';
import { logisticsRoutes } from './logistics';
import { marketplaceRoutes } from './marketplace';
import { referralRoutes } from './referrals';
import { registryRoutes } from './registry';
import { revenueRoutes } from './revenue';

export function agentExchangeRoutes(table: RouteTable): RouteTable {
  return revenueRoutes(
    agreementRoutes(
      logisticsRoutes(marketplaceRoutes(referralRoutes(discoveryRoutes(registryRoutes(table))))),
    ),
  );
}
