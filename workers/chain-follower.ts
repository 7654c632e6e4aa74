// The chain follower: polls each configured chain for new blocks (EVM) or signatures (Solana), records
// transfers to the treasury as events and keeps its statistics in Postgres for the web process. One
// follower per network across the deployment holds a lease row; the others wait.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { endpointName, jsonRpc, publicFailure } from '../shared/chains/http';
import type { RpcOptions } from '../shared/chains/http';
import type { Db } from '../shared/platform/db/knex';
import { env } from '../shared/platform/env';
import { logger, roundLog } from '../shared/platform/log';
import { listAssets } from '../shared/chains/assets';
import { followedFamilies, followerEnabled } from '../shared/providers/rpc-stream';
import type { FollowerSettings } from '../shared/providers/rpc-stream';

interface StreamEvent {
  block: bigint | null;
  txRef: string;
  output: string;
  token: string;
  to: string;
  amount: bigint | null;
}

interface Progress {
  head: bigint;
  last: bigint;
  lastBlockTime?: Date;
  cursor?: string | null;
  blocks: number;
  events: StreamEvent[];
}

interface StatsRow {
  network: string;
  last_block: string | null;
  cursor: string | null;
  healthy: boolean;
}

/** One chain: asks for what happened since `row`, returns the progress to record. */
interface Source {
  family: 'evm' | 'solana';
  network: string;
  endpoint: string;
  address: string;
  step(row: StatsRow): Promise<Progress>;
}

// ERC-20 transfer(address,uint256)
const TRANSFER_SELECTOR = '0xa9059cbb';

function evmSource(settings: FollowerSettings): Source {
  const url = settings.EVM_RPC_URL!;
  const treasury = settings.TREASURY_EVM!.toLowerCase();
  const assets = listAssets(settings).filter((a) => a.family === 'evm');
  const network = assets.find((a) => !a.contract)?.network ?? assets[0]!.network;
  const tokens = new Set(assets.filter((a) => a.contract).map((a) => a.contract!.toLowerCase()));
  const opts: RpcOptions = { timeoutMs: settings.CHAIN_RPC_TIMEOUT_MS, retries: 0 };
  interface Tx {
    hash: string;
    to: string | null;
    value: string;
    input: string;
  }
  return {
    family: 'evm',
    network,
    endpoint: endpointName(url),
    address: treasury,
    async step(row) {
      const head = BigInt(await jsonRpc<string>(url, 'eth_blockNumber', [], opts));
      // A new follower starts at the head: the stream is what happens from now, not history.
      const last = row.last_block === null ? head - 1n : BigInt(row.last_block);
      const to =
        head < last + BigInt(settings.CHAIN_FOLLOWER_MAX_BLOCKS)
          ? head
          : last + BigInt(settings.CHAIN_FOLLOWER_MAX_BLOCKS);
      const events: StreamEvent[] = [];
      let lastBlockTime: Date | undefined;
      let blocks = 0;
      for (let n = last + 1n; n <= to; n++) {
        const block = await jsonRpc<{ timestamp: string; transactions: Tx[] } | null>(
          url,
          'eth_getBlockByNumber',
          [`0x${n.toString(16)}`, true],
          opts,
        );
        if (!block) break;
        blocks++;
        lastBlockTime = new Date(Number(BigInt(block.timestamp)) * 1000);
        for (const tx of block.transactions) {
          const dest = tx.to?.toLowerCase();
          if (!dest) continue;
          if (dest === treasury && BigInt(tx.value) > 0n) {
            events.push({
              block: n,
              txRef: tx.hash.toLowerCase(),
              output: 'value',
              token: 'native',
              to: treasury,
              amount: BigInt(tx.value),
            });
          }
          if (tokens.has(dest) && tx.input.startsWith(TRANSFER_SELECTOR) && tx.input.length >= 138) {
            const recipient = `0x${tx.input.slice(34, 74)}`.toLowerCase();
            if (recipient === treasury) {
              events.push({
                block: n,
                txRef: tx.hash.toLowerCase(),
                output: 'call',
                token: dest,
                to: treasury,
                amount: BigInt(`0x${tx.input.slice(74, 138)}`),
              });
            }
          }
        }
      }
      return {
        head,
        last: last + BigInt(blocks),
        ...(lastBlockTime ? { lastBlockTime } : {}),
        blocks,
        events,
      };
    },
  };
}

function solanaSource(settings: FollowerSettings): Source {
  const url = settings.SOLANA_RPC_URL!;
  const treasury = settings.TREASURY_SOLANA!;
  const network = listAssets(settings).find((a) => a.family === 'solana' && !a.contract)!.network;
  const opts: RpcOptions = { timeoutMs: settings.CHAIN_RPC_TIMEOUT_MS, retries: 0 };
  return {
    family: 'solana',
    network,
    endpoint: endpointName(url),
    address: treasury,
    async step(row) {
      const head = BigInt(await jsonRpc<number>(url, 'getSlot', [{ commitment: 'finalized' }], opts));
      const limit = row.cursor ? 100 : 1;
      const sigs = await jsonRpc<
        Array<{ signature: string; slot: number; blockTime: number | null; err: unknown }>
      >(
        url,
        'getSignaturesForAddress',
        [treasury, { limit, commitment: 'finalized', ...(row.cursor ? { until: row.cursor } : {}) }],
        opts,
      );
      const newest = sigs[0];
      const events: StreamEvent[] = row.cursor
        ? sigs
            .filter((s) => !s.err)
            .map((s) => ({
              block: BigInt(s.slot),
              txRef: s.signature,
              output: 'sig',
              token: 'solana',
              to: treasury,
              amount: null,
            }))
        : [];
      const last = row.last_block === null ? head : BigInt(row.last_block);
      return {
        head,
        last: head > last ? head : last,
        ...(newest?.blockTime ? { lastBlockTime: new Date(newest.blockTime * 1000) } : {}),
        cursor: newest?.signature ?? row.cursor,
        blocks: Number(head > last ? head - last : 0n),
        events,
      };
    },
  };
}

export interface ChainFollower {
  /** One pass over every followed chain (exposed for tests). */
  tick(): Promise<void>;
  stop(): Promise<void>;
}

const EVENTS_KEPT = 10_000;

export function createChainFollower(db: Db, settings: FollowerSettings = env): ChainFollower {
  const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const sources = followedFamilies(settings).map((f) =>
    f === 'evm' ? evmSource(settings) : solanaSource(settings),
  );
  const leaseMs = Math.max(5_000, settings.CHAIN_FOLLOWER_INTERVAL_MS * 3);

  async function lease(source: Source): Promise<StatsRow | undefined> {
    const { rows } = await db.raw(
      `insert into chain_stream_stats (network, family, endpoint, address, owner, lease_until, started_at, updated_at)
       values (?, ?, ?, ?, ?, now() + make_interval(secs => ?), now(), now())
       on conflict (network) do update set owner = excluded.owner, lease_until = excluded.lease_until,
         endpoint = excluded.endpoint, address = excluded.address,
         started_at = case when chain_stream_stats.owner = excluded.owner then chain_stream_stats.started_at else now() end,
         last_block = case when chain_stream_stats.address = excluded.address then chain_stream_stats.last_block end,
         cursor = case when chain_stream_stats.address = excluded.address then chain_stream_stats.cursor end
       where chain_stream_stats.owner = excluded.owner or chain_stream_stats.owner is null
         or chain_stream_stats.lease_until < now()
       returning network, last_block, cursor, healthy`,
      [source.network, source.family, source.endpoint, source.address, owner, leaseMs / 1000],
    );
    return rows[0] as StatsRow | undefined;
  }

  async function follow(source: Source): Promise<void> {
    const row = await lease(source);
    if (!row) return; // another worker follows this chain
    try {
      const progress = await source.step(row);
      await db.transaction(async (trx) => {
        let inserted = 0;
        if (progress.events.length) {
          const rows = await trx('chain_stream_events')
            .insert(
              progress.events.map((e) => ({
                network: source.network,
                block: e.block?.toString() ?? null,
                tx_ref: e.txRef,
                output: e.output,
                token: e.token,
                to_address: e.to,
                amount: e.amount?.toString() ?? null,
              })),
            )
            .onConflict(['network', 'tx_ref', 'output'])
            .ignore()
            .returning('id');
          inserted = rows.length;
        }
        await trx('chain_stream_stats')
          .where({ network: source.network, owner })
          .update({
            last_block: progress.last.toString(),
            head_block: progress.head.toString(),
            ...(progress.lastBlockTime ? { last_block_time: progress.lastBlockTime } : {}),
            ...(progress.cursor !== undefined ? { cursor: progress.cursor } : {}),
            events_seen: trx.raw('events_seen + ?', [inserted]),
            blocks_seen: trx.raw('blocks_seen + ?', [progress.blocks]),
            // Back after a failure: the stream reconnected.
            reconnects: row.healthy ? trx.raw('reconnects') : trx.raw('reconnects + 1'),
            healthy: true,
            ...(inserted ? { last_event_at: trx.fn.now() } : {}),
            updated_at: trx.fn.now(),
          });
        if (inserted) {
          await trx.raw(
            `delete from chain_stream_events where network = ? and id < (select max(id) from chain_stream_events where network = ?) - ?`,
            [source.network, source.network, EVENTS_KEPT],
          );
        }
      });
    } catch (err) {
      // The stats are public: the row keeps a failure code, the log the message (which names the
      // endpoint's origin, never a key in a URL: shared/chains/http).
      await db('chain_stream_stats')
        .where({ network: source.network, owner })
        .update({
          errors: db.raw('errors + 1'),
          healthy: false,
          last_error: publicFailure(err),
          updated_at: db.fn.now(),
        });
      logger.warn({ network: source.network, err: (err as Error).message }, 'chain follower step failed');
    }
  }

  async function tick(): Promise<void> {
    await Promise.all(sources.map((s) => follow(s)));
  }

  async function release(): Promise<void> {
    await db('chain_stream_stats')
      .where({ owner })
      .update({ lease_until: db.fn.now(), updated_at: db.fn.now() })
      .catch(() => undefined);
  }

  return { tick, stop: release };
}

/** Runs the follower every CHAIN_FOLLOWER_INTERVAL_MS until stopped; undefined when it is off. */
export function startChainFollower(
  db: Db,
  settings: FollowerSettings = env,
): { stop(): Promise<void> } | undefined {
  if (!followerEnabled(settings)) return undefined;
  const follower = createChainFollower(db, settings);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const rounds = roundLog('chain follower tick');
  const loop = async () => {
    running = follower.tick().then(
      () => rounds.succeeded(),
      (err: Error) => rounds.failed(err),
    );
    await running;
    if (!stopped) timer = setTimeout(loop, settings.CHAIN_FOLLOWER_INTERVAL_MS);
  };
  timer = setTimeout(loop, 0);
  logger.info({ families: followedFamilies(settings) }, 'chain follower started');
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await follower.stop();
    },
  };
}
