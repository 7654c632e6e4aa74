// Table C, the public site's API routes (proof workflows and status); product lines add theirs here.
import { RouteTable } from '../http/route';

export function siteRoutes(table = new RouteTable('site')): RouteTable {
  return table;
}
