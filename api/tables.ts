// The three route tables of the API and the modules that fill them.
import { RouteTable } from './http/route';
import { agentExchangeRoutes } from './routes/agent-exchange';
import { auctionRoutes } from './routes/auctions';
import { blindPolicyRoutes } from './routes/blind-policy';
import { checkoutRoutes } from './routes/checkout';
import { commercialRoutes } from './routes/commercial';
import { exchangeRoutes } from './routes/exchange';
import { governanceRoutes } from './routes/governance';
import { paymentRoutes } from './routes/payments';
import { siteRoutes } from './routes/site';
import { statusV1Routes } from './routes/status-v1';
import { treasuryCoordinationRoutes } from './routes/treasury-coordination';
import { workflowRoutes } from './routes/workflows';

export interface RouteTables {
  exchange: RouteTable;
  commercial: RouteTable;
  site: RouteTable;
}

export function buildTables(): RouteTables {
  return {
    exchange: agentExchangeRoutes(paymentRoutes(exchangeRoutes(new RouteTable('exchange')))),
    commercial: statusV1Routes(checkoutRoutes(commercialRoutes(new RouteTable('commercial')))),
    site: auctionRoutes(
      treasuryCoordinationRoutes(
        governanceRoutes(blindPolicyRoutes(workflowRoutes(siteRoutes(new RouteTable('site'))))),
      ),
    ),
  };
}
