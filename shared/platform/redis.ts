// Redis connections: workers block and retry forever; the API fails fast so a down Redis never stalls a request.
// One node (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES); every process makes its clients here.
import { Cluster, Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { env } from './env';
import type { ClusterSeeds } from './env';

export type RedisRole = 'worker' | 'api';

/** A client of either deployment: BullMQ, rate-limiter-flexible and our own commands take both. */
export type RedisClient = Redis | Cluster;

/** Where Redis is: one node's URL, or the seed nodes of a cluster. */
export type RedisTarget = { url: string } | { cluster: ClusterSeeds };

export function redisUrl(): string {
  return env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

export function redisTarget(): RedisTarget {
  return env.REDIS_CLUSTER_NODES ? { cluster: env.REDIS_CLUSTER_NODES } : { url: redisUrl() };
}

const retryFast = (times: number) => Math.min(times * 200, 2000);

export function createRedis(
  role: RedisRole,
  target: RedisTarget | string = redisTarget(),
  extra: { enableAutoPipelining?: boolean; autoResubscribe?: boolean } = {},
): RedisClient {
  const { autoResubscribe, ...shared } = extra;
  const where = typeof target === 'string' ? { url: target } : target;
  const node: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 1, connectTimeout: 2000 };
  let client: RedisClient;
  if ('cluster' in where) {
    const { nodes, username, password, tls } = where.cluster;
    client = new Cluster(nodes, {
      redisOptions: { ...node, username, password, ...(tls ? { tls: {} } : {}) },
      // The cluster, not each node, holds commands while it (re)learns the slot map; the API refuses instead.
      enableOfflineQueue: role === 'worker',
      ...(role === 'api' ? { clusterRetryStrategy: retryFast } : {}),
      ...shared,
    });
  } else {
    client = new Redis(where.url, {
      ...node,
      ...(role === 'api' ? { enableOfflineQueue: false, retryStrategy: retryFast } : {}),
      lazyConnect: false,
      ...(autoResubscribe === undefined ? {} : { autoResubscribe }),
      ...shared,
    });
  }
  // Connection errors surface through command failures and readiness checks; without a listener
  // ioredis would print every reconnect attempt as an unhandled error.
  client.on('error', () => undefined);
  return client;
}

/**
 * The prefix without its hash tag braces, for keys that stand alone (rate-limit counters): on a
 * cluster they then spread over every master instead of piling into the queues' slot.
 */
export function untagged(prefix: string): string {
  return prefix.replace(/[{}]/g, '');
}

/** Resolves when the client is ready, or false after timeoutMs. */
export function waitReady(client: RedisClient, timeoutMs = 3000): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      resolve(false);
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    client.once('ready', onReady);
  });
}
