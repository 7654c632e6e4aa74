// The agent registry: registration (with an API key shown once), API key resolution, and full-text
// search over agents with keyset pagination.
import { randomBytes } from 'node:crypto';
import { canonicalJson } from '../platform/canonical';
import type { Db } from '../platform/db/knex';
import { sha256Hex } from '../platform/crypto';
import { checkUserTarget } from '../platform/egress';
import { AppError, notFound } from '../platform/errors';
import { newId } from '../platform/ids';
import { DEFAULT_LIST_LIMIT, decodeSearchCursor, orderBySearch, searchPage } from '../platform/paging';
import type { ListPage } from '../platform/paging';

export const API_KEY_PREFIX = 'ak_';
const API_KEY_PATTERN = /^ak_[A-Za-z0-9_-]{43}$/;

export interface AgentRow {
  id: string;
  name: string;
  description: string;
  capabilities: string[];
  tags: string[];
  endpoint_url: string | null;
  wallet_public_key: string;
  status: 'active' | 'suspended';
  created_at: Date;
  updated_at: Date;
}

export interface AgentView {
  id: string;
  name: string;
  description: string;
  capabilities: string[];
  tags: string[];
  endpointUrl: string | null;
  walletPublicKey: string;
  createdAt: string;
}

export function agentView(row: AgentRow): AgentView {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    capabilities: row.capabilities,
    tags: row.tags,
    endpointUrl: row.endpoint_url,
    walletPublicKey: row.wallet_public_key,
    createdAt: new Date(row.created_at).toISOString(),
  };
}

export interface RegisterAgentInput {
  name: string;
  description: string;
  capabilities: string[];
  tags: string[];
  endpointUrl?: string | undefined;
  walletPublicKey: string;
}

/** Lower-cased, trimmed, without duplicates: capability and tag filters match exactly. */
export const normalizeLabels = (labels: string[]): string[] => [
  ...new Set(labels.map((l) => l.trim().toLowerCase()).filter(Boolean)),
];

export const hashApiKey = (key: string): string => sha256Hex(key);

/** Stores the agent and its first API key in one transaction; the key is returned here and never again. */
export async function registerAgent(
  db: Db,
  input: RegisterAgentInput,
  /** The tag of the client network it is registered from (see client-network.ts). */
  network: string | null,
): Promise<{ agent: AgentRow; apiKey: string; keyId: string }> {
  if (input.endpointUrl) {
    // Hand-offs POST here later: an endpoint inside the exchange's network is refused at registration
    // (and again, pinned, at each hand-off).
    const problem = await checkUserTarget(input.endpointUrl);
    if (problem)
      throw new AppError(422, 'target_not_allowed', `The endpoint is refused: ${problem}.`, {
        errors: [{ path: 'body.endpointUrl', message: problem }],
      });
  }
  const apiKey = `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const keyId = newId('key');
  return db.transaction(async (trx) => {
    const [agent] = (await trx('agents')
      .insert({
        id: newId('agt'),
        name: input.name,
        description: input.description,
        capabilities: normalizeLabels(input.capabilities),
        tags: normalizeLabels(input.tags),
        endpoint_url: input.endpointUrl ?? null,
        wallet_public_key: input.walletPublicKey,
        registered_network: network,
      })
      .returning('*')) as AgentRow[];
    await trx('api_keys').insert({ id: keyId, agent_id: agent!.id, key_hash: hashApiKey(apiKey) });
    return { agent: agent!, apiKey, keyId };
  });
}

/**
 * The agent an API key belongs to, or null. The lookup is by the key's sha256, so the comparison
 * never touches the key's bytes in a data-dependent way.
 */
export async function resolveApiKey(
  db: Db,
  token: string,
): Promise<{ agentId: string; keyId: string; network: string | null } | null> {
  if (!API_KEY_PATTERN.test(token)) return null;
  const row = (await db('api_keys as k')
    .join('agents as a', 'a.id', 'k.agent_id')
    .where('k.key_hash', hashApiKey(token))
    .whereNull('k.revoked_at')
    .andWhere('a.status', 'active')
    .first('k.id as keyId', 'a.id as agentId', 'a.registered_network as network')) as
    { keyId: string; agentId: string; network: string | null } | undefined;
  if (!row) return null;
  // At most one write a minute per key: the timestamp is for operators, not for every request.
  void db('api_keys')
    .where('id', row.keyId)
    .andWhere((q) =>
      q.whereNull('last_used_at').orWhere('last_used_at', '<', db.raw("now() - interval '1 minute'")),
    )
    .update({ last_used_at: db.fn.now() })
    .catch(() => undefined);
  return row;
}

export async function getAgent(db: Db, id: string): Promise<AgentRow> {
  const row = (await db('agents').where({ id, status: 'active' }).first()) as AgentRow | undefined;
  if (!row) throw notFound(`Agent ${id}`);
  return row;
}

export async function findAgent(db: Db, id: string): Promise<AgentRow | undefined> {
  return (await db('agents').where({ id, status: 'active' }).first()) as AgentRow | undefined;
}

export interface AgentSearch {
  q?: string | undefined;
  capability?: string | undefined;
  tag?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

/** The filters a cursor is bound to. */
export const searchKey = (filters: Record<string, unknown>): string =>
  sha256Hex(canonicalJson(filters)).slice(0, 16);

/**
 * Full-text search (websearch syntax over name, description, capabilities and tags) ranked by
 * relevance, or the newest first without text; capability and tag match exactly.
 */
export async function searchAgents(db: Db, s: AgentSearch): Promise<ListPage<AgentView>> {
  const limit = s.limit ?? DEFAULT_LIST_LIMIT;
  const filters = {
    q: s.q ?? null,
    capability: s.capability?.toLowerCase() ?? null,
    tag: s.tag?.toLowerCase() ?? null,
  };
  const key = searchKey(filters);
  const cursor = decodeSearchCursor(s.cursor, key);
  const query = db('agents').where('status', 'active');
  if (filters.capability) query.whereRaw('capabilities @> array[?]::text[]', [filters.capability]);
  if (filters.tag) query.whereRaw('tags @> array[?]::text[]', [filters.tag]);
  orderBySearch(db, query, filters.q, cursor);
  const rows = (await query.limit(limit + 1)) as Array<AgentRow & { rank?: string }>;
  return searchPage(rows, limit, key, agentView);
}
