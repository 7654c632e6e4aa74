// The three route tables of the API and the modules that fill them.
import { RouteTable } from './http/route';
import { commercialRoutes } from './routes/commercial';
import { exchangeRoutes } from './routes/exchange';
import { siteRoutes } from './routes/site';

export interface RouteTables {
  exchange: RouteTable;
  commercial: RouteTable;
  site: RouteTable;
}

export function buildTables(): RouteTables {
  return {
    exchange: exchangeRoutes(new RouteTable('exchange')),
    commercial: commercialRoutes(new RouteTable('commercial')),
    site: siteRoutes(new RouteTable('site')),
  };
}
