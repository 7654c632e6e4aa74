// Redis for a local run: REDIS_CLUSTER_NODES or REDIS_URL as configured (checked), else 127.0.0.1:6379
// if it answers, else a redis-server from the PATH started without persistence as a supervised process,
// else one line saying how to get Redis.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { env } from '../../shared/platform/env';
import { StartupFailure, urlTarget } from '../../shared/platform/failures';
import { Supervisor } from './supervisor';

export interface ResolvedRedis {
  /** Empty when a cluster is configured: processes then connect through REDIS_CLUSTER_NODES. */
  url: string;
  source: 'REDIS_CLUSTER_NODES' | 'REDIS_URL' | '127.0.0.1:6379' | 'redis-server (started)';
  stop(): Promise<void>;
}

async function ping(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** A TCP port nothing listens on at 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolvePort(port));
    });
    srv.on('error', reject);
  });
}

export async function resolveRedis(opts: { supervisor?: Supervisor } = {}): Promise<ResolvedRedis> {
  if (env.REDIS_CLUSTER_NODES) return { url: '', source: 'REDIS_CLUSTER_NODES', stop: async () => undefined };
  if (env.REDIS_URL) {
    if (!(await ping(env.REDIS_URL))) {
      throw new StartupFailure(
        `Redis at ${urlTarget(env.REDIS_URL)} (REDIS_URL) does not answer`,
        'start it there, or unset REDIS_URL so npm start finds or starts one',
      );
    }
    return { url: env.REDIS_URL, source: 'REDIS_URL', stop: async () => undefined };
  }
  const local = 'redis://127.0.0.1:6379';
  if (await ping(local)) return { url: local, source: '127.0.0.1:6379', stop: async () => undefined };

  const which = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const bin = which.stdout.trim();
  if (which.status !== 0 || !bin) {
    throw new StartupFailure(
      'Redis is needed: nothing answers at 127.0.0.1:6379 and no redis-server is on the PATH',
      'install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set REDIS_URL',
    );
  }
  const port = await freePort();
  const dir = resolve(join(env.DATA_DIR, 'redis'));
  mkdirSync(dir, { recursive: true });
  const url = `redis://127.0.0.1:${port}`;
  const supervisor = opts.supervisor ?? new Supervisor();
  await supervisor.start([
    {
      name: 'redis',
      command: bin,
      args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      logFile: join(dir, 'redis.log'),
      ready: () => ping(url),
      readyTimeoutMs: 10_000,
      explainEarlyExit: () =>
        new StartupFailure(
          `redis-server (${bin}) stopped while starting`,
          `its log is ${join(dir, 'redis.log')}; or set REDIS_URL to a Redis of your own`,
        ),
    },
  ]);
  return {
    url,
    source: 'redis-server (started)',
    stop: () => (opts.supervisor ? Promise.resolve() : supervisor.stop()),
  };
}
