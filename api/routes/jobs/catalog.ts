// What an agent can buy (the exchange table): the services with their input schemas, and their prices.
import { z } from 'zod';
import { listServices } from '../../../shared/jobs/catalog';
import { assetAvailability } from '../../../shared/payments/availability';
import type { RouteTable } from '../../http/route';
import { serviceSchema, serviceViews, signingKeySchema, signingKeyView } from '../../views/exchange';
import { assetPricingSchema, pricingAssets, quotePolicy } from '../../views/payments';

export function catalogRoutes(table: RouteTable): RouteTable {
  const tags = ['Agent exchange'];
  return table
    .add({
      method: 'get',
      path: '/api/services',
      operationId: 'services',
      summary: 'The services an agent can buy, with input schemas, prices and expected durations',
      tags,
      responses: {
        200: {
          description: 'The catalogue',
          schema: z.object({ services: z.array(serviceSchema), signingKey: signingKeySchema }),
        },
      },
      handler: async () => ({
        status: 200,
        body: { services: serviceViews(), signingKey: signingKeyView() },
      }),
    })
    .add({
      method: 'get',
      path: '/api/pricing',
      operationId: 'pricing',
      summary: 'Prices per service in USD cents',
      tags,
      responses: {
        200: {
          description: 'Prices',
          schema: z.object({
            currency: z.literal('USD'),
            unit: z.literal('cents'),
            services: z.array(z.object({ id: z.string(), usdCents: z.number().int(), free: z.boolean() })),
            assets: z.array(assetPricingSchema),
            quotes: z.object({ ttlSeconds: z.number().int(), lateWindowSeconds: z.number().int() }),
          }),
        },
      },
      problems: { 503: ['asset_config_invalid'] },
      handler: async () => ({
        status: 200,
        body: {
          currency: 'USD' as const,
          unit: 'cents' as const,
          services: listServices().map((s) => ({
            id: s.id,
            usdCents: s.priceUsdCents,
            free: s.priceUsdCents === 0,
          })),
          assets: pricingAssets(await assetAvailability()),
          quotes: quotePolicy(),
        },
      }),
    });
}
