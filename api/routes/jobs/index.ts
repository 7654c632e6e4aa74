// The exchange table's job routes, in the documents' order: the catalogue (services, pricing), then
// createJob, jobStatus and jobEvents. Health comes before them (../health.ts), the payment routes after.
import type { RouteTable } from '../../http/route';
import { catalogRoutes } from './catalog';
import { createJobRoutes } from './create';
import { jobEventsRoutes } from './events';
import { jobStatusRoutes } from './status';

export function jobRoutes(table: RouteTable): RouteTable {
  return jobEventsRoutes(jobStatusRoutes(createJobRoutes(catalogRoutes(table))));
}
