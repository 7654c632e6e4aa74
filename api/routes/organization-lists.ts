// The site table, an organization's own lists: its workflows, rooms, proposals, treasury requests and
// auctions, newest first with an opaque cursor. Each lists only what the caller's license owns (the operator
// its own); one item by id stays its line's route, which answers 404 to any other organization.
import { z } from 'zod';
import { listOwnedAuctions } from '../../shared/auctions/owned';
import { listOwnedProposals, listOwnedRooms } from '../../shared/governance/owned';
import type { ProductLine } from '../../shared/licensing/tiers';
import type { Db } from '../../shared/platform/db/knex';
import { listQueryShape } from '../../shared/platform/paging';
import type { ListPage } from '../../shared/platform/paging';
import { listOwnedTreasuryRequests } from '../../shared/treasury/owned';
import { listOwnedWorkflows } from '../../shared/workflows/owned';
import { ownerOf } from '../http/callers';
import type { RouteTable } from '../http/route';

type Lister = (
  db: Db,
  owner: string,
  opts: { limit: number; cursor?: string | undefined },
) => Promise<ListPage<unknown>>;

function listRoute(
  table: RouteTable,
  spec: {
    path: string;
    operationId: string;
    what: string;
    tag: string;
    product: ProductLine;
    item: z.ZodType;
    list: Lister;
  },
): RouteTable {
  return table.add({
    method: 'get',
    path: spec.path,
    operationId: spec.operationId,
    summary: `The organization’s own ${spec.what}, newest first (cursor pagination)`,
    description: `Only what the calling license (any of its keys with \`read\`, \`${spec.product}\` or \`admin\`) made; the operator token lists the operator’s own. \`limit\` 1–100 (20 by default); \`cursor\` is the \`nextCursor\` of the page before.`,
    tags: [spec.tag],
    auth: 'operator-or-license',
    product: spec.product,
    query: z.strictObject(listQueryShape),
    responses: {
      200: {
        description: `A page of ${spec.what}`,
        schema: z.object({ items: z.array(spec.item), nextCursor: z.string().nullable() }),
      },
    },
    problems: { 400: ['invalid_cursor'] },
    handler: async ({ query, auth, deps }) => ({
      status: 200,
      headers: { 'Cache-Control': 'no-store' },
      body: await spec.list(deps.db, ownerOf(auth), query),
    }),
  });
}

export function organizationListRoutes(table: RouteTable): RouteTable {
  listRoute(table, {
    path: '/api/proof-workflows',
    operationId: 'listProofWorkflows',
    what: 'proof workflows',
    tag: 'Proof workflows',
    product: 'workflows',
    item: z
      .object({
        workflowId: z.string().describe('The private handle events are posted with'),
        proofId: z.string(),
        template: z.string(),
        templateVersion: z.number().int(),
        status: z.enum(['active', 'completed', 'rejected']),
        createdAt: z.string(),
        updatedAt: z.string(),
      })
      .meta({ id: 'OwnedWorkflow' }),
    list: listOwnedWorkflows,
  });
  listRoute(table, {
    path: '/api/governance/rooms',
    operationId: 'listGovernanceRooms',
    what: 'governance rooms',
    tag: 'Governance',
    product: 'governance',
    item: z.object({ roomId: z.string(), name: z.string(), createdAt: z.string() }).meta({ id: 'OwnedRoom' }),
    list: listOwnedRooms,
  });
  listRoute(table, {
    path: '/api/governance/proposals',
    operationId: 'listGovernanceProposals',
    what: 'governance proposals',
    tag: 'Governance',
    product: 'governance',
    item: z
      .object({
        proposalId: z.string(),
        roomId: z.string(),
        title: z.string(),
        status: z.string(),
        createdAt: z.string(),
      })
      .meta({ id: 'OwnedProposal' }),
    list: listOwnedProposals,
  });
  listRoute(table, {
    path: '/api/treasury/requests',
    operationId: 'listTreasuryRequests',
    what: 'treasury requests',
    tag: 'Treasury coordination',
    product: 'treasury',
    item: z
      .object({
        requestId: z.string(),
        roomId: z.string(),
        committee: z.string(),
        operation: z.string(),
        asset: z.string(),
        amount: z.string().describe('Base units, decimal'),
        status: z.string(),
        createdAt: z.string(),
      })
      .meta({ id: 'OwnedTreasuryRequest' }),
    list: listOwnedTreasuryRequests,
  });
  return listRoute(table, {
    path: '/api/auctions',
    operationId: 'listAuctions',
    what: 'sealed auctions',
    tag: 'Sealed auctions',
    product: 'auctions',
    item: z
      .object({
        auctionId: z.string(),
        roomId: z.string().nullable(),
        title: z.string(),
        pricing: z.string(),
        asset: z.string(),
        status: z.string(),
        biddingEndsAt: z.string(),
        revealEndsAt: z.string(),
        createdAt: z.string(),
      })
      .meta({ id: 'OwnedAuction' }),
    list: listOwnedAuctions,
  });
}
