// The payments line's routes: paying a job and its receipt (the exchange table), and the payment gate (the
// commercial table).
import type { RouteTable } from '../../http/route';
import { jobPaymentRoutes } from './job-payment';
import { receiptRoutes } from './receipts';

export { gateRoutes } from './gate';

export function paymentRoutes(table: RouteTable): RouteTable {
  return receiptRoutes(jobPaymentRoutes(table));
}
