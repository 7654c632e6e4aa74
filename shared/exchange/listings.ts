// Marketplace listings: what registered agents offer, searchable by text (Postgres full-text search),
// tag, price range, asset and seller, with keyset pagination.
import type { Db } from '../platform/db/knex';
import { newId } from '../platform/ids';
import type { AssetId } from '../chains/assets';
import { normalizeLabels, searchKey } from './agents';
import { DEFAULT_LIST_LIMIT, decodeSearchCursor, orderBySearch, searchPage } from '../platform/paging';
import type { ListPage } from '../platform/paging';

export interface ListingRow {
  id: string;
  seller_agent_id: string;
  title: string;
  description: string;
  tags: string[];
  price_usd_cents: number;
  asset: AssetId;
  service_endpoint: string;
  status: 'active' | 'withdrawn';
  created_at: Date;
  updated_at: Date;
}

export function listingView(row: ListingRow) {
  return {
    id: row.id,
    sellerAgentId: row.seller_agent_id,
    title: row.title,
    description: row.description,
    tags: row.tags,
    price: { usdCents: row.price_usd_cents, asset: row.asset },
    serviceEndpoint: row.service_endpoint,
    status: row.status,
    createdAt: new Date(row.created_at).toISOString(),
  };
}
export type ListingView = ReturnType<typeof listingView>;

export interface PublishListingInput {
  title: string;
  description: string;
  tags: string[];
  priceUsdCents: number;
  asset: AssetId;
  serviceEndpoint: string;
}

export async function publishListing(
  db: Db,
  sellerAgentId: string,
  input: PublishListingInput,
): Promise<ListingRow> {
  const [row] = (await db('listings')
    .insert({
      id: newId('lst'),
      seller_agent_id: sellerAgentId,
      title: input.title,
      description: input.description,
      tags: normalizeLabels(input.tags),
      price_usd_cents: input.priceUsdCents,
      asset: input.asset,
      service_endpoint: input.serviceEndpoint,
    })
    .returning('*')) as ListingRow[];
  return row!;
}

export interface ListingSearch {
  q?: string | undefined;
  tag?: string | undefined;
  minPriceUsdCents?: number | undefined;
  maxPriceUsdCents?: number | undefined;
  asset?: string | undefined;
  seller?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

/** Active listings: by relevance when there is text, else the newest first. */
export async function searchListings(db: Db, s: ListingSearch): Promise<ListPage<ListingView>> {
  const limit = s.limit ?? DEFAULT_LIST_LIMIT;
  const filters = {
    q: s.q ?? null,
    tag: s.tag?.toLowerCase() ?? null,
    min: s.minPriceUsdCents ?? null,
    max: s.maxPriceUsdCents ?? null,
    asset: s.asset ?? null,
    seller: s.seller ?? null,
  };
  const key = searchKey(filters);
  const cursor = decodeSearchCursor(s.cursor, key);
  const query = db('listings').where('status', 'active');
  if (filters.tag) query.whereRaw('tags @> array[?]::text[]', [filters.tag]);
  if (filters.min !== null) query.where('price_usd_cents', '>=', filters.min);
  if (filters.max !== null) query.where('price_usd_cents', '<=', filters.max);
  if (filters.asset) query.where('asset', filters.asset);
  if (filters.seller) query.where('seller_agent_id', filters.seller);
  orderBySearch(db, query, filters.q, cursor);
  const rows = (await query.limit(limit + 1)) as Array<ListingRow & { rank?: string }>;
  return searchPage(rows, limit, key, listingView);
}
