// The chain event stream's statistics as the worker's follower writes them to Postgres, read back for
// the (public) stream stats route without the endpoints they were read from, and the follower's own
// settings.
import { PUBLIC_FAILURE } from '../chains/http';
import type { Db } from '../platform/db/knex';
import type { Env } from '../platform/env';
import { env } from '../platform/env';

export type FollowerSettings = Pick<
  Env,
  | 'CHAIN_FOLLOWER_ENABLED'
  | 'CHAIN_FOLLOWER_INTERVAL_MS'
  | 'CHAIN_FOLLOWER_MAX_BLOCKS'
  | 'EVM_RPC_URL'
  | 'TREASURY_EVM'
  | 'SOLANA_RPC_URL'
  | 'TREASURY_SOLANA'
  | 'ASSETS_JSON'
  | 'CHAIN_RPC_TIMEOUT_MS'
>;

/** Which families have both an endpoint and a treasury to watch. */
export function followedFamilies(settings: FollowerSettings = env): Array<'evm' | 'solana'> {
  const families: Array<'evm' | 'solana'> = [];
  if (settings.EVM_RPC_URL && settings.TREASURY_EVM) families.push('evm');
  if (settings.SOLANA_RPC_URL && settings.TREASURY_SOLANA) families.push('solana');
  return families;
}

/** On unless turned off, whenever some chain can be followed. */
export function followerEnabled(settings: FollowerSettings = env): boolean {
  return (settings.CHAIN_FOLLOWER_ENABLED ?? true) && followedFamilies(settings).length > 0;
}

interface StatsRow {
  network: string;
  family: string;
  endpoint: string;
  address: string | null;
  lease_until: Date | null;
  last_block: string | null;
  head_block: string | null;
  last_block_time: Date | null;
  events_seen: string;
  blocks_seen: string;
  reconnects: number;
  errors: number;
  healthy: boolean;
  last_error: string | null;
  last_event_at: Date | null;
  started_at: Date;
  updated_at: Date;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
const num = (v: string | null) => (v === null ? null : Number(v));

export async function streamStats(db: Db, settings: FollowerSettings = env, now = new Date()) {
  const rows = (await db('chain_stream_stats').orderBy('network')) as StatsRow[];
  const recent = (await db('chain_stream_events')
    .select('network', 'block', 'tx_ref', 'output', 'token', 'amount', 'seen_at')
    .orderBy('id', 'desc')
    .limit(10)) as Array<{
    network: string;
    block: string | null;
    tx_ref: string;
    output: string;
    token: string;
    amount: string | null;
    seen_at: Date;
  }>;
  const enabled = followerEnabled(settings);
  return {
    enabled,
    ...(enabled
      ? {}
      : {
          detail:
            settings.CHAIN_FOLLOWER_ENABLED === false
              ? 'CHAIN_FOLLOWER_ENABLED is false.'
              : 'No chain has both an RPC endpoint and a treasury address to follow.',
        }),
    intervalMs: settings.CHAIN_FOLLOWER_INTERVAL_MS,
    followers: rows.map((r) => {
      const last = num(r.last_block);
      const head = num(r.head_block);
      return {
        network: r.network,
        family: r.family,
        /** Live while a follower holds the lease; a stopped worker lets it lapse. */
        live: !!r.lease_until && new Date(r.lease_until).getTime() > now.getTime(),
        healthy: r.healthy,
        lastBlock: last,
        headBlock: head,
        lagBlocks: last !== null && head !== null ? Math.max(0, head - last) : null,
        lastBlockTime: iso(r.last_block_time),
        lagSeconds: r.last_block_time
          ? Math.max(0, Math.round((now.getTime() - new Date(r.last_block_time).getTime()) / 1000))
          : null,
        eventsSeen: Number(r.events_seen),
        blocksSeen: Number(r.blocks_seen),
        reconnects: r.reconnects,
        errors: r.errors,
        // A failure code only: the endpoint the follower reads stays the operator's (and the log's).
        lastError: r.last_error === null ? null : PUBLIC_FAILURE.test(r.last_error) ? r.last_error : 'failed',
        lastEventAt: iso(r.last_event_at),
        startedAt: iso(r.started_at),
        updatedAt: iso(r.updated_at),
      };
    }),
    recentEvents: recent.map((e) => ({
      network: e.network,
      block: num(e.block),
      txRef: e.tx_ref,
      output: e.output,
      token: e.token,
      amount: e.amount === null ? null : String(e.amount),
      seenAt: iso(e.seen_at),
    })),
  };
}
