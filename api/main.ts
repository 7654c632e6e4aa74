// The `web` process: the Express app on PORT, with the stores it needs and a clean shutdown.
import type { Server } from 'node:http';
import { createDb } from '../shared/db/knex';
import { env } from '../shared/env';
import { syncServiceCatalog } from '../shared/jobs/catalog';
import { JobNotifier, closeJobEvents } from '../shared/jobs/notify';
import { logger } from '../shared/log';
import { Queues } from '../shared/queues';
import { createRedis, waitReady } from '../shared/redis';
import { Shutdown } from '../shared/shutdown';
import { createApp } from './app';
import type { AppDeps } from './deps';

export function depsFromEnv(): AppDeps {
  const db = createDb();
  const redis = createRedis('api');
  return {
    db,
    redis,
    queues: new Queues(redis),
    notifier: new JobNotifier(),
    urls: { base: env.BASE_URL, api: env.API_URL, site: env.SITE_URL },
    operatorToken: env.OPERATOR_TOKEN,
    rateLimit: {
      enabled: env.RATE_LIMIT_ENABLED,
      ipPerMinute: env.RATE_LIMIT_IP_PER_MINUTE,
      keyPerMinute: env.RATE_LIMIT_KEY_PER_MINUTE,
    },
    bodyLimitBytes: env.BODY_LIMIT_BYTES,
  };
}

export async function closeDeps(deps: AppDeps): Promise<void> {
  await deps.notifier.close();
  await closeJobEvents();
  await deps.queues.close();
  deps.redis.disconnect();
  await deps.db.destroy();
}

export async function startWeb(): Promise<{ server: Server; shutdown: Shutdown }> {
  const shutdown = new Shutdown();
  const deps = depsFromEnv();
  shutdown.register('deps', () => closeDeps(deps));
  if (!(await waitReady(deps.redis, 5000)))
    logger.warn('Redis is not answering yet; jobs are kept in Postgres until it does');
  await syncServiceCatalog(deps.db).catch((err: Error) =>
    logger.warn({ err: err.message }, 'service catalog not synced'),
  );
  const app = createApp(deps, { trustProxy: env.TRUST_PROXY });
  const server = app.listen(env.PORT, env.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 45_000; // long polls wait up to 30 s
  shutdown.register('http', async () => {
    await new Promise((resolve) => {
      server.close(resolve);
      server.closeIdleConnections();
    });
  });
  logger.info({ port: env.PORT, host: env.HOST }, 'web listening');
  return { server, shutdown };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { shutdown } = await startWeb();
  shutdown.installSignalHandlers();
}
