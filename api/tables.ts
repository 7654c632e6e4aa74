// The three route tables of the API and the modules that fill them.
import { RouteTable } from './http/route';
import { agentExchangeRoutes } from './routes/exchange/index';
import { auctionRoutes } from './routes/auctions';
import { blindPolicyRoutes } from './routes/zk';
import { licensingRoutes } from './routes/licensing/index';
import { governanceRoutes } from './routes/governance/index';
import { healthRoutes, readinessRoutes } from './routes/health';
import { organizationListRoutes } from './routes/organization-lists';
import { jobRoutes } from './routes/jobs/index';
import { gateRoutes, paymentRoutes } from './routes/payments/index';
import { siteRoutes } from './routes/site';
import { coordinationStatusRoutes, providerStatusRoutes } from './routes/providers/index';
import { treasuryCoordinationRoutes } from './routes/treasury';
import { workflowRoutes } from './routes/workflows/index';
import { readinessChecks } from './wiring';

export interface RouteTables {
  exchange: RouteTable;
  commercial: RouteTable;
  site: RouteTable;
}

export function buildTables(): RouteTables {
  return {
    exchange: agentExchangeRoutes(paymentRoutes(jobRoutes(healthRoutes(new RouteTable('exchange'))))),
    commercial: providerStatusRoutes(
      gateRoutes(licensingRoutes(readinessRoutes(new RouteTable('commercial'), readinessChecks))),
    ),
    site: organizationListRoutes(
      auctionRoutes(
        treasuryCoordinationRoutes(
          coordinationStatusRoutes(
            governanceRoutes(blindPolicyRoutes(workflowRoutes(siteRoutes(new RouteTable('site'))))),
          ),
        ),
      ),
    ),
  };
}
