// Table A, the agent registry: registerAgent (an API key shown once) and searchAgents; registers the
// resolver through which the platform's auth accepts agent keys (ak_…).
import { z } from 'zod';
import { registerAgent, resolveApiKey, searchAgents, agentView } from '../../shared/exchange/agents';
import { MAX_PAGE } from '../../shared/exchange/pagination';
import { walletPublicKeySchema } from '../../shared/exchange/wallet';
import { registerKeyResolver } from '../http/auth';
import type { Principal } from '../http/auth';
import { unauthorized } from '../../shared/errors';
import type { RouteTable } from '../http/route';

const label = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]*$/, 'letters, digits and . _ : / -');

export const httpUrl = z.url({ protocol: /^https?$/ }).max(2048);

export const agentSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    capabilities: z.array(z.string()),
    tags: z.array(z.string()),
    endpointUrl: z.string().nullable(),
    walletPublicKey: z.string().describe('ed25519 public key, base58'),
    createdAt: z.string(),
  })
  .meta({ id: 'Agent' });

const registerBody = z
  .strictObject({
    name: z.string().trim().min(1).max(100),
    description: z.string().trim().max(2000).default(''),
    capabilities: z
      .array(label)
      .max(50)
      .default([])
      .describe('What the agent can do, e.g. "attest.timestamp"'),
    tags: z.array(label).max(20).default([]),
    endpointUrl: httpUrl.optional().describe('Where the agent takes hand-offs'),
    walletPublicKey: walletPublicKeySchema,
  })
  .meta({ id: 'RegisterAgentRequest' });

export const pageQuery = {
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE)
    .optional()
    .describe(`Page size, at most ${MAX_PAGE} (default 20)`),
  cursor: z.string().min(1).max(512).optional().describe('nextCursor of the previous page'),
};

/** The calling agent of an `auth: 'agent'` route (the platform already refused anyone else). */
export function agentIdOf(auth: Principal): string {
  if (auth.kind !== 'agent') throw unauthorized('This route needs an agent API key.');
  return auth.agentId;
}

let resolverRegistered = false;

export function registryRoutes(table: RouteTable): RouteTable {
  if (!resolverRegistered) {
    registerKeyResolver('ak_', async (token, deps) => {
      const found = await resolveApiKey(deps.db, token);
      return found ? { kind: 'agent', agentId: found.agentId, keyId: found.keyId } : null;
    });
    resolverRegistered = true;
  }
  const tags = ['Agent registry'];
  return table
    .add({
      method: 'post',
      path: '/api/registry/register',
      operationId: 'registerAgent',
      summary: 'Register an agent; the answer carries its API key, shown this once',
      description:
        'Only the sha256 of the key is stored: keep it, it cannot be shown again. Send it as `Authorization: Bearer ak_…`.',
      tags,
      body: registerBody,
      responses: {
        201: {
          description: 'Registered',
          schema: z.object({
            agent: agentSchema,
            apiKey: z.string().describe('The API key (ak_…); shown once'),
            keyId: z.string(),
          }),
        },
      },
      problems: { 422: ['target_not_allowed'] },
      handler: async ({ body, deps }) => {
        const { agent, apiKey, keyId } = await registerAgent(deps.db, body);
        return {
          status: 201,
          headers: { 'Cache-Control': 'no-store' },
          body: { agent: agentView(agent), apiKey, keyId },
        };
      },
    })
    .add({
      method: 'get',
      path: '/api/registry/search',
      operationId: 'searchAgents',
      summary: 'Search registered agents by text, capability and tag',
      description:
        'Text uses Postgres full-text search (web search syntax: words, "phrases", -exclusions) over name, description, capabilities and tags, ranked by relevance; without text the newest come first.',
      tags,
      query: z.strictObject({
        q: z.string().trim().min(1).max(200).optional(),
        capability: label.optional(),
        tag: label.optional(),
        ...pageQuery,
      }),
      responses: {
        200: {
          description: 'A page of agents',
          schema: z.object({ agents: z.array(agentSchema), nextCursor: z.string().nullable() }),
        },
      },
      problems: { 400: ['invalid_cursor'] },
      handler: async ({ query, deps }) => {
        const page = await searchAgents(deps.db, query);
        return { status: 200, body: { agents: page.items, nextCursor: page.nextCursor } };
      },
    });
}
