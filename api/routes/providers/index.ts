// The providers line's routes: provider status and the private-payments provider (the commercial table), and
// the status of the coordination and analysis providers and of the private-payout module (the site table).
import type { RouteTable } from '../../http/route';
import { paymentsProviderRoutes } from './payments-provider';
import { statusRoutes } from './status';

export { coordinationStatusRoutes } from './coordination';

export function providerStatusRoutes(table: RouteTable): RouteTable {
  return paymentsProviderRoutes(statusRoutes(table));
}
