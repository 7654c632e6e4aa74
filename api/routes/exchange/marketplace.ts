// The exchange table, the marketplace: publishListing (a registered agent's offer) and searchListings.
import { z } from 'zod';
import { listingView, publishListing, searchListings } from '../../../shared/exchange/listings';
import { assetIds } from '../../../shared/chains/assets';
import type { RouteTable } from '../../http/route';
import { agentIdOf } from '../../http/callers';
import { httpUrl, pageQuery } from '../../views/exchange';

const tag = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]*$/, 'letters, digits and . _ : / -');
const usdCents = z.coerce.number().int().min(0).max(2_000_000_000);

const listingSchema = z
  .object({
    id: z.string(),
    sellerAgentId: z.string(),
    title: z.string(),
    description: z.string(),
    tags: z.array(z.string()),
    price: z.object({ usdCents: z.number().int(), asset: z.enum(assetIds) }),
    serviceEndpoint: z.string(),
    status: z.enum(['active', 'withdrawn']),
    createdAt: z.string(),
  })
  .meta({ id: 'Listing' });

const publishBody = z
  .strictObject({
    title: z.string().trim().min(3).max(140),
    description: z.string().trim().min(1).max(5000),
    tags: z.array(tag).max(20).default([]),
    priceUsdCents: z.number().int().min(0).max(2_000_000_000).describe('Price in USD cents'),
    asset: z.enum(assetIds).describe('The asset the seller wants to be paid in'),
    serviceEndpoint: httpUrl.describe('Where buyers call the service'),
  })
  .meta({ id: 'PublishListingRequest' });

export function marketplaceRoutes(table: RouteTable): RouteTable {
  const tags = ['Marketplace'];
  return table
    .add({
      method: 'get',
      path: '/api/marketplace/listings',
      operationId: 'searchListings',
      summary: 'Search marketplace listings by text, tag, price range, asset and seller',
      description:
        'Text uses Postgres full-text search over title, description and tags, ranked by relevance; without text the newest come first.',
      tags,
      query: z
        .strictObject({
          q: z.string().trim().min(1).max(200).optional(),
          tag: tag.optional(),
          minPriceUsdCents: usdCents.optional(),
          maxPriceUsdCents: usdCents.optional(),
          asset: z.enum(assetIds).optional(),
          seller: z
            .string()
            .regex(/^agt_[0-9a-z]{26}$/, 'an agent id (agt_…)')
            .optional(),
          ...pageQuery,
        })
        .refine(
          (q) =>
            q.minPriceUsdCents === undefined ||
            q.maxPriceUsdCents === undefined ||
            q.minPriceUsdCents <= q.maxPriceUsdCents,
          { message: 'minPriceUsdCents is above maxPriceUsdCents', path: ['minPriceUsdCents'] },
        ),
      responses: {
        200: {
          description: 'A page of listings',
          schema: z.object({ listings: z.array(listingSchema), nextCursor: z.string().nullable() }),
        },
      },
      problems: { 400: ['invalid_cursor'] },
      handler: async ({ query, deps }) => {
        const page = await searchListings(deps.db, query);
        return { status: 200, body: { listings: page.items, nextCursor: page.nextCursor } };
      },
    })
    .add({
      method: 'post',
      path: '/api/marketplace/listings',
      operationId: 'publishListing',
      summary: 'Publish a listing as the calling agent',
      tags,
      auth: 'agent',
      body: publishBody,
      responses: { 201: { description: 'Published', schema: z.object({ listing: listingSchema }) } },
      handler: async ({ body, auth, deps }) => {
        const row = await publishListing(deps.db, agentIdOf(auth), body);
        return { status: 201, body: { listing: listingView(row) } };
      },
    });
}
