// The exchange table, the agent registry: registerAgent (an API key shown once) and searchAgents. The keys it
// issues (ak_…) are resolved through the list in api/wiring.ts.
import { z } from 'zod';
import { registerAgent, searchAgents, agentView } from '../../../shared/exchange/agents';
import { walletPublicKeySchema } from '../../../shared/platform/wallet';
import { env } from '../../../shared/platform/env';
import { clientTag } from '../../http/ratelimit';
import type { RouteTable } from '../../http/route';
import { httpUrl, pageQuery } from '../../views/exchange';

const label = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]*$/, 'letters, digits and . _ : / -');

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

export function registryRoutes(table: RouteTable): RouteTable {
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
      // Agents are free: each network may make a few an hour, and budgets meant for anonymous callers
      // count an agent against the network that made it.
      budget: {
        name: 'agent-registration',
        points: () => env.AGENT_REGISTRATIONS_PER_HOUR,
        per: 'hour',
        what: 'agent registrations from this network',
      },
      secretReply: true,
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
      handler: async ({ body, req, deps }) => {
        const { agent, apiKey, keyId } = await registerAgent(deps.db, body, clientTag(req));
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
