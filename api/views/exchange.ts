// What the agent exchange says of itself (name, version, its service catalogue, the key that signs its
// receipts), and the request parts its routes share.
import { z } from 'zod';
import { MAX_LIST_LIMIT } from '../../shared/platform/paging';
import { listServices } from '../../shared/jobs/catalog';
import { serviceSigningKey } from '../../shared/platform/keys';

export const SERVICE_NAME = 'proof-exchange';
export const SERVICE_DESCRIPTION =
  'Privacy and proof infrastructure as an agent exchange: buy proof workflow, blind policy and attestation jobs, pay in crypto, get signed receipts, and trade with other agents.';

/** The version of the agent exchange's document (/openapi.json), its discovery card and agent card. */
export const AGENT_EXCHANGE_VERSION = '1.3.0';

export const signingKeySchema = z
  .object({
    algorithm: z.literal('ed25519'),
    keyId: z.string(),
    publicKey: z.string(),
    publicKeyPem: z.string(),
  })
  .meta({
    id: 'SigningKey',
    description: 'The service key that signs attestations, receipts and proof packages.',
  });

export function signingKeyView() {
  const k = serviceSigningKey();
  return {
    algorithm: 'ed25519' as const,
    keyId: k.keyId,
    publicKey: k.publicKey,
    publicKeyPem: k.publicKeyPem,
  };
}

export const serviceSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    price: z.object({ usdCents: z.number().int(), free: z.boolean() }),
    inputSchema: z.record(z.string(), z.unknown()),
    expectedDurationMs: z.number().int(),
  })
  .meta({ id: 'Service' });

export function serviceViews() {
  return listServices().map((s) => ({
    id: s.id,
    name: s.name,
    description: s.description,
    price: { usdCents: s.priceUsdCents, free: s.priceUsdCents === 0 },
    inputSchema: z.toJSONSchema(s.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
    expectedDurationMs: s.expectedDurationMs,
  }));
}

/** An address a caller gives for the service to show or call (an endpoint, a listing, a delivery). */
export const httpUrl = z.url({ protocol: /^https?$/ }).max(2048);

/** The query of a paged search: a page size and the cursor of the page before. */
export const pageQuery = {
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_LIST_LIMIT)
    .optional()
    .describe(`Page size, at most ${MAX_LIST_LIMIT} (default 20)`),
  cursor: z.string().min(1).max(512).optional().describe('nextCursor of the previous page'),
};
