// The operator's administration of agents' API keys: list, revoke, rotate. A revoked key is refused from
// the next request on (resolveApiKey reads the row each time); a rotation revokes the old key and
// returns a new one for the same agent, once. Every action is recorded in the audit.
import { randomBytes } from 'node:crypto';
import type { Db } from '../platform/db/knex';
import { conflict, notFound } from '../platform/errors';
import { idPattern, newId } from '../platform/ids';
import { decodeListCursor, listPage } from '../platform/paging';
import type { ListPage } from '../platform/paging';
import { recordAction } from '../licensing/audit';
import { API_KEY_PREFIX, hashApiKey } from './agents';

interface ApiKeyRow {
  id: string;
  agent_id: string;
  agent_name: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

export interface AgentKeyView {
  keyId: string;
  agentId: string;
  agentName: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

const view = (r: ApiKeyRow): AgentKeyView => ({
  keyId: r.id,
  agentId: r.agent_id,
  agentName: r.agent_name,
  createdAt: new Date(r.created_at).toISOString(),
  lastUsedAt: iso(r.last_used_at),
  revokedAt: iso(r.revoked_at),
});

const keys = (db: Db) =>
  db('api_keys as k')
    .join('agents as a', 'a.id', 'k.agent_id')
    .select('k.id', 'k.agent_id', 'a.name as agent_name', 'k.created_at', 'k.last_used_at', 'k.revoked_at');

/** Agents' keys newest first, of one agent when asked. Never a key, nor its hash. */
export async function listAgentKeys(
  db: Db,
  opts: { limit: number; cursor?: string | undefined; agentId?: string | undefined },
): Promise<ListPage<AgentKeyView>> {
  const after = decodeListCursor(opts.cursor, 'akeys');
  const q = keys(db)
    .orderBy('k.id', 'desc')
    .limit(opts.limit + 1);
  if (after) q.where('k.id', '<', after);
  if (opts.agentId) q.where('k.agent_id', opts.agentId);
  return listPage((await q) as ApiKeyRow[], opts.limit, 'akeys', view);
}

async function lockKey(trx: Db, keyId: string): Promise<ApiKeyRow> {
  if (!idPattern('key').test(keyId)) throw notFound(`Agent key ${keyId}`);
  const row = (await keys(trx).where('k.id', keyId).forUpdate('k').first()) as ApiKeyRow | undefined;
  if (!row) throw notFound(`Agent key ${keyId}`);
  return row;
}

/** Revokes an agent's key; revoking a revoked key changes nothing. */
export async function revokeAgentKey(db: Db, keyId: string, actor = 'operator'): Promise<AgentKeyView> {
  return db.transaction(async (trx) => {
    const row = await lockKey(trx, keyId);
    if (row.revoked_at) return view(row);
    const revokedAt = new Date();
    await trx('api_keys').where({ id: keyId }).update({ revoked_at: revokedAt });
    await recordAction(trx, {
      actor,
      action: 'agent_key.revoke',
      target: keyId,
      detail: { agentId: row.agent_id },
    });
    return view({ ...row, revoked_at: revokedAt });
  });
}

/** Revokes an agent's key and issues the agent a new one, returned once. */
export async function rotateAgentKey(
  db: Db,
  keyId: string,
  actor = 'operator',
): Promise<{ key: AgentKeyView; apiKey: string }> {
  return db.transaction(async (trx) => {
    const row = await lockKey(trx, keyId);
    if (row.revoked_at)
      throw conflict('key_already_revoked', `Agent key ${keyId} is revoked; rotate a key in use.`);
    const now = new Date();
    await trx('api_keys').where({ id: keyId }).update({ revoked_at: now });
    const apiKey = `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
    const newKeyId = newId('key');
    await trx('api_keys').insert({ id: newKeyId, agent_id: row.agent_id, key_hash: hashApiKey(apiKey) });
    await recordAction(trx, {
      actor,
      action: 'agent_key.rotate',
      target: keyId,
      detail: { agentId: row.agent_id, newKeyId },
    });
    return {
      key: view({ ...row, id: newKeyId, created_at: now, last_used_at: null, revoked_at: null }),
      apiKey,
    };
  });
}
