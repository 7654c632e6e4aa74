// The site table's status routes: the coordination providers (governance, treasury, auctions) and the
// transparency log they publish to, the analysis providers, and the private-payout module.
import { z } from 'zod';
import { cachedStatus } from '../../../shared/providers/probes';
import {
  coordinationProviders,
  intelligenceProviders,
  privatePayoutStatus,
} from '../../../shared/providers/coordination';
import type { RouteTable } from '../../http/route';

export function coordinationStatusRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'get',
      path: '/api/coordination/providers/status',
      operationId: 'coordinationProvidersStatus',
      summary: 'The coordination providers (governance, treasury, auctions) with health',
      tags: ['Status'],
      responses: {
        200: {
          description: 'Providers and the transparency log they publish to',
          schema: z.object({
            providers: z.array(z.record(z.string(), z.unknown())),
            transparencyLog: z.object({ healthy: z.boolean(), treeSize: z.number().int().nullable() }),
            checkedAt: z.string(),
          }),
        },
      },
      handler: async ({ deps }) => ({ status: 200, body: await coordinationProviders(deps.db) }),
    })
    .add({
      method: 'get',
      path: '/api/intelligence/providers/status',
      operationId: 'intelligenceProvidersStatus',
      summary: 'The configured analysis providers with health (the local AI runtime, when set)',
      tags: ['Status'],
      responses: {
        200: {
          description: 'Providers, probed',
          schema: z.object({ providers: z.array(z.record(z.string(), z.unknown())), checkedAt: z.string() }),
        },
      },
      handler: async () => ({
        status: 200,
        body: await cachedStatus('intelligence-providers', () => intelligenceProviders()),
      }),
    })
    .add({
      method: 'get',
      path: '/api/private-payout/status',
      operationId: 'privatePayoutStatus',
      summary: 'The payroll/payout advanced module: disabled by default; the service pays nothing',
      tags: ['Status'],
      responses: {
        200: {
          description: 'What is enabled',
          schema: z.object({
            module: z.literal('private-payout'),
            enabled: z.boolean(),
            active: z.boolean(),
            paysFunds: z.literal(false),
            modules: z.array(z.object({ name: z.string(), available: z.boolean(), enabled: z.boolean() })),
            detail: z.string(),
          }),
        },
      },
      handler: async () => ({ status: 200, body: privatePayoutStatus() }),
    });
}
