// The proof workflows line's routes (the site table): workflows from templates, their anonymous approvals,
// then the transparency log their packages (and everything else published) land in: its description and JSON
// proofs, its C2SP checkpoint and tiles, offline bundles, and the trust root that says which keys signed
// them.
import type { RouteTable } from '../../http/route';
import { approvalRoutes } from './approvals';
import { issuerRoutes } from './issuers';
import { bundleRoutes } from './bundle';
import { logRoutes } from './log';
import { tileRoutes } from './tiles';
import { trustRoutes } from './trust';
import { proofWorkflowRoutes } from './workflows';

export function workflowRoutes(table: RouteTable): RouteTable {
  return tileRoutes(
    trustRoutes(bundleRoutes(logRoutes(issuerRoutes(approvalRoutes(proofWorkflowRoutes(table)))))),
  );
}
