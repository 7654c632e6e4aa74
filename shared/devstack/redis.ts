// Redis for a local run: REDIS_URL, else 127.0.0.1:6379 if it answers, else a redis-server from the PATH
// started without persistence, else one clear line saying how to get Redis.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { env } from '../env';

export interface ResolvedRedis {
  url: string;
  source: 'REDIS_URL' | '127.0.0.1:6379' | 'redis-server (started)';
  stop(): Promise<void>;
}

export class RedisUnavailableError extends Error {}

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

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolvePort(port));
    });
    srv.on('error', reject);
  });
}

export async function resolveRedis(): Promise<ResolvedRedis> {
  if (env.REDIS_URL) return { url: env.REDIS_URL, source: 'REDIS_URL', stop: async () => undefined };
  const local = 'redis://127.0.0.1:6379';
  if (await ping(local)) return { url: local, source: '127.0.0.1:6379', stop: async () => undefined };

  const which = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const bin = which.stdout.trim();
  if (which.status !== 0 || !bin) {
    throw new RedisUnavailableError(
      'Redis is needed: nothing answers at 127.0.0.1:6379 and no redis-server is on the PATH. Install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set REDIS_URL.',
    );
  }
  const port = await freePort();
  const dir = resolve(join(env.DATA_DIR, 'redis'));
  mkdirSync(dir, { recursive: true });
  const child = spawn(
    bin,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    {
      stdio: 'ignore',
    },
  );
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 50; i++) {
    if (await ping(url)) {
      return {
        url,
        source: 'redis-server (started)',
        stop: async () => {
          child.kill('SIGTERM');
        },
      };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new RedisUnavailableError(`redis-server (${bin}) did not answer on port ${port}.`);
}
