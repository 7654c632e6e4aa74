// The payments line's routes: paying a job and its receipt (table A), and the payment gate (table B).
import type { RouteTable } from '../../http/route';
import { jobPaymentRoutes } from './job-payment';
import { receiptRoutes } from './receipts';

export { gateRoutes } from './gate';

export function paymentRoutes(table: RouteTable): RouteTable {
  return receiptRoutes(jobPaymentRoutes(table));
}
