// Redis connections: workers block and retry forever; the API fails fast so a down Redis never stalls a request.
import { Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { env } from './env';

export type RedisRole = 'worker' | 'api';

export function redisUrl(): string {
  return env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

export function createRedis(role: RedisRole, url = redisUrl(), extra: RedisOptions = {}): Redis {
  const options: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : {
          maxRetriesPerRequest: 1,
          enableOfflineQueue: false,
          connectTimeout: 2000,
          retryStrategy: (times) => Math.min(times * 200, 2000),
        };
  const client = new Redis(url, { ...options, lazyConnect: false, ...extra });
  // Connection errors surface through command failures and readiness checks; without a listener
  // ioredis would print every reconnect attempt as an unhandled error.
  client.on('error', () => undefined);
  return client;
}

/** Resolves when the client is ready, or false after timeoutMs. */
export function waitReady(client: Redis, timeoutMs = 3000): Promise<boolean> {
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
