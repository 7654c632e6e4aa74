// The `web` process: the Express app on PORT, with the stores it needs and a clean shutdown.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock } from '../shared/platform/clock';
import { createDb } from '../shared/platform/db/knex';
import { explainListenError } from '../shared/platform/failures';
import { closeEgress } from '../shared/platform/egress';
import { env } from '../shared/platform/env';
import { chainSettingIssues } from '../shared/chains/settings';
import { syncServiceCatalog } from '../shared/jobs/catalog';
import { JobNotifier, closeJobEvents } from '../shared/jobs/notify';
import { watchSigningKeys } from '../shared/platform/key-history';
import { runProcess } from '../shared/platform/lifecycle';
import { logger } from '../shared/platform/log';
import { metricsAccess } from '../shared/platform/metrics';
import { startTracing, stopTracing } from '../shared/platform/tracing';
import { Queues } from '../shared/platform/queues';
import { createRedis, waitReady } from '../shared/platform/redis';
import { Shutdown } from '../shared/platform/shutdown';
import { tableBases } from '../shared/platform/urls';
import { assertCircuitSetup } from '../shared/zk/setup';
import { logCeremonyTranscripts } from '../shared/zk/ceremony-log';
import { assertDatabaseStart, refuseStartup } from '../shared/platform/startup-checks';
import { createApp } from './app';
import { createWebServer } from './http/server';
import { closeVerifyPool } from './offload/pool';
import type { AppDeps } from './deps';
import { databaseChecks } from './wiring';

export function depsFromEnv(): AppDeps {
  const db = createDb();
  const redis = createRedis('api');
  const metrics = metricsAccess(env);
  return {
    db,
    redis,
    queues: new Queues(redis),
    notifier: new JobNotifier(),
    urls: tableBases(env),
    operatorToken: env.OPERATOR_TOKEN,
    metricsToken: 'token' in metrics ? metrics.token : undefined,
    metricsRefused: 'refused' in metrics ? metrics.refused : undefined,
    rateLimit: {
      enabled: env.RATE_LIMIT_ENABLED,
      ipPerMinute: env.RATE_LIMIT_IP_PER_MINUTE,
      keyPerMinute: env.RATE_LIMIT_KEY_PER_MINUTE,
      proveAnonPerMinute: env.PROVE_ANON_PER_MINUTE,
      verifyPerMinute: env.VERIFY_PER_MINUTE,
      proveMaxInFlight: env.PROVE_MAX_IN_FLIGHT,
      authFailuresPerMinute: env.AUTH_FAILURES_PER_MINUTE,
    },
    bodyLimitBytes: env.BODY_LIMIT_BYTES,
    clock: systemClock,
    overload: {
      maxInFlight: env.OVERLOAD_MAX_IN_FLIGHT,
      maxEventLoopDelayMs: env.OVERLOAD_MAX_EVENT_LOOP_DELAY_MS,
      targetMs: env.OVERLOAD_TARGET_MS,
      maxBodies: env.OVERLOAD_MAX_BODIES,
      bodyMinRate: env.HTTP_BODY_MIN_RATE,
      bodyGraceMs: env.HTTP_BODY_GRACE_MS,
    },
  };
}

export async function closeDeps(deps: AppDeps): Promise<void> {
  await deps.notifier.close();
  await closeJobEvents();
  await deps.queues.close();
  deps.redis.disconnect();
  await deps.db.destroy();
  await closeEgress();
  await closeVerifyPool();
}

export async function startWeb(): Promise<{ server: Server; shutdown: Shutdown }> {
  const shutdown = new Shutdown();
  // Before any store is opened, so its queues and pool are traced; closed last, flushing the spans.
  const tracing = startTracing('web');
  const deps = depsFromEnv();
  // The web process verifies policy proofs: it starts only with artifacts it may trust (or is told to);
  // in production their keys were checked against the ceremony, by the release or by this process. A
  // refusal closes what was opened quietly: its one line says everything.
  const setup = await assertCircuitSetup({ db: deps.db, process: 'web' }).catch(async (err: unknown) => {
    await closeDeps(deps);
    if (tracing) await stopTracing();
    throw err;
  });
  if (tracing) shutdown.register('tracing', stopTracing);
  shutdown.register('deps', () => closeDeps(deps));
  // Its keys go into the key history first; a retired or revoked one stops the start here, as does a
  // database it would answer 500s from (sealed under a key it lacks) or that holds demo money.
  const keys = await assertDatabaseStart(deps.db, databaseChecks)
    .then(() => watchSigningKeys(deps.db))
    .catch(async (err: unknown) => {
      await shutdown.run('start failed');
      throw err;
    });
  shutdown.register('signing keys', () => keys.stop());
  if (!(await waitReady(deps.redis, 5000)))
    logger.warn('Redis is not answering yet; jobs are kept in Postgres until it does');
  await syncServiceCatalog(deps.db).catch((err: Error) =>
    logger.warn({ err: err.message }, 'service catalog not synced'),
  );
  // The circuits' ceremony transcripts go into the transparency log once (a logged key is not appended again).
  await logCeremonyTranscripts(deps.db)
    .then((logged) => {
      if (logged.length > 0) logger.info({ transcripts: logged }, 'ceremony transcripts logged');
    })
    .catch((err: Error) => logger.warn({ err: err.message }, 'ceremony transcripts not logged'));
  const app = createApp(deps, { trustProxy: env.TRUST_PROXY });
  const server = createWebServer(app, {
    headersTimeoutMs: env.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
    maxConnections: env.HTTP_MAX_CONNECTIONS,
  });
  server.listen(env.PORT, env.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', (err) => {
      reject(explainListenError(err, { port: env.PORT, host: env.HOST, variable: 'PORT' }) ?? err);
    });
  }).catch(async (err: unknown) => {
    await shutdown.run('start failed');
    throw err;
  });
  shutdown.register('http', async () => {
    await new Promise((resolve) => {
      server.close(resolve);
      server.closeIdleConnections();
    });
  });
  if (setup.insecure) {
    logger.warn(
      { ptau: setup.ptau.file, allowInsecureCircuits: setup.allowInsecureCircuits },
      'circuit keys come from the insecure development setup: policy proofs are forgeable',
    );
  }
  if (deps.metricsRefused) logger.error(deps.metricsRefused);
  const { port } = server.address() as AddressInfo;
  logger.info({ port, host: env.HOST, insecureSetup: setup.insecure }, 'web listening');
  return { server, shutdown };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  refuseStartup(env, 'web', chainSettingIssues(env));
  await runProcess('web', startWeb);
}
