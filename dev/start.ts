// `npm start`: the whole service on one machine for a newcomer. Postgres and Redis are resolved (started
// when needed), migrations run, then web, worker and prover start as supervised processes. "running" is
// printed only once every process is ready; a process that cannot start ends everything with one line
// saying what failed and how to fix it. Ctrl-C stops everything gracefully; a second Ctrl-C forces.
//
// With no chain configured (and never in production) a local development chain joins as one more
// `ProcessSpec` group started before the process types, its endpoint, treasury and demo stablecoin
// passed to them in `childEnv`, so priced services can be paid for (`npm run demo:pay`).
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStandInProvider } from './stack/payments-standin';
import { createDb } from '../shared/platform/db/knex';
import { banner } from './stack/banner';
import { DEVNET_LABEL, devnetChildEnv, devnetDecision, readDevnetInfo } from './stack/devnet';
import type { DevnetInfo } from './stack/devnet';
import {
  StartupFailure,
  explainFileError,
  explainListenError,
  explainPostgresError,
  urlTarget,
} from '../shared/platform/failures';
import { resolvePostgres } from './stack/postgres';
import { resolveRedis } from './stack/redis';
import { Supervisor } from './stack/supervisor';
import type { Exit, ProcessSpec } from './stack/supervisor';
import { chainSettingIssues } from '../shared/chains/settings';
import {
  chainConfigured,
  childProcessEnv,
  env,
  isProduction,
  processVariables,
  refuseConfig,
  serviceUrl,
} from '../shared/platform/env';
import { removeLocalRun, writeLocalRun } from '../shared/platform/local-run';
import { developmentSwitchIssues, refuseStart } from '../shared/platform/startup-checks';
import { release } from '../workers/release';

const root = fileURLToPath(new URL('..', import.meta.url));
const say = (line: string) => process.stdout.write(`[start] ${line}\n`);
const refuse = (line: string) => process.stderr.write(`[start] ${line}\n`);

export const processTypes = {
  web: 'api/main.ts',
  worker: 'workers/main.ts',
  prover: 'workers/prover/main.ts',
} as const;

/** The slowest first start (prover: circuits and native keys loaded) on a small, busy machine. */
const READY_TIMEOUT_MS = 180_000;

/**
 * Said after a production start fails: npm start is the development launcher, and production runs the
 * Procfile's processes, each with its settings.
 */
const built = (source: string) => `dist/${source.replace(/\.ts$/, '.js')}`;
const PRODUCTION_HINT = `npm start is the development launcher (embedded Postgres and Redis, one of each process); a production deployment builds once (npm run build) and runs the Procfile's processes instead: release (${built('workers/release.ts')}, once per deploy), then web (${built(processTypes.web)}), worker (${built(processTypes.worker)}) and prover (${built(processTypes.prover)}), each as node --enable-source-maps <file> with the settings docs/operations.md lists.`;

/** TRIAL licenses a day for one address under npm start (when TRIAL_PER_ADDRESS_PER_DAY is left at its default). */
const DEV_TRIALS_PER_DAY = 25;

/** A development operator token, kept under DATA_DIR so it survives restarts. */
function operatorToken(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    mkdirSync(join(env.DATA_DIR, 'keys'), { recursive: true });
    const token = `op_${randomBytes(24).toString('base64url')}`;
    writeFileSync(file, token, { mode: 0o600 });
    return token;
  }
}

/** web is ready when /api/health answers on its port: the port it just reported listening on. */
async function healthAnswers(): Promise<void> {
  const host = ['0.0.0.0', '::', ''].includes(env.HOST)
    ? '127.0.0.1'
    : env.HOST.includes(':')
      ? `[${env.HOST}]`
      : env.HOST;
  const url = `http://${host}:${env.PORT}/api/health`;
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(2000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new StartupFailure(
    `web listens on port ${env.PORT} but ${url} does not answer`,
    'its log lines above say why',
  );
}

/**
 * A taken port found before Postgres and three processes are started for nothing. The processes still
 * report their own listen errors: a port can be taken in between.
 */
async function checkPortFree(port: number, variable: string, host = env.HOST): Promise<void> {
  const err = await new Promise<unknown>((resolve) => {
    const probe = createServer();
    probe.once('error', resolve);
    probe.listen(port, host, () => probe.close(() => resolve(undefined)));
  });
  if (err) throw explainListenError(err, { port, host, variable }) ?? err;
}

function asFailure(err: unknown, pgSource: string, pgUrl: string | undefined): StartupFailure {
  if (err instanceof StartupFailure) return err;
  const file = explainFileError(err);
  if (file) return file;
  const e = err as { code?: unknown; message?: string };
  // Errors of the pg driver: a network code or a five-character SQLSTATE.
  if (pgUrl && typeof e?.code === 'string' && /^(E[A-Z]+|[0-9A-Z]{5})$/.test(e.code)) {
    return explainPostgresError(err, pgSource, urlTarget(pgUrl));
  }
  return new StartupFailure(
    `unexpected error: ${e?.message ?? String(err)}`,
    'run again with LOG_LEVEL=debug to see where it came from',
  );
}

/** The development chain's process (dev/stack/devnet-main.ts), ready once provisioned. */
const devnetProcess = (): ProcessSpec => ({
  name: 'devnet',
  command: process.execPath,
  args: ['--import', 'tsx', join(root, 'dev/stack/devnet-main.ts')],
  cwd: root,
  env: childProcessEnv({}),
  ready: 'ipc',
  readyTimeoutMs: READY_TIMEOUT_MS,
});

const describe = (exit: Exit) => (exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`);

async function main() {
  const supervisor = new Supervisor();
  const run: { state: 'starting' | 'running' | 'stopping' } = { state: 'starting' };
  let closeStandIn: () => Promise<unknown> = async () => undefined;

  /** Everything down, processes first (latest group first), then what runs inside this process. */
  const stopAll = async () => {
    const limit = setTimeout(() => supervisor.kill(), env.SHUTDOWN_TIMEOUT_MS + 5000);
    await supervisor.stop();
    clearTimeout(limit);
    await closeStandIn().catch(() => undefined);
  };

  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) {
      supervisor.kill();
      refuse('forced stop: every process killed');
      process.exit(130);
    }
    run.state = 'stopping';
    removeLocalRun(env.DATA_DIR);
    say(`stopping (${sig}); press Ctrl-C again to force`);
    void stopAll().then(() => {
      say('stopped');
      process.exit(0);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);

  supervisor.onUnexpectedExit((name, exit) => {
    if (run.state === 'stopping') return;
    run.state = 'stopping';
    removeLocalRun(env.DATA_DIR);
    refuse(
      `${name} stopped unexpectedly (${describe(exit)}); its log lines above say why. Stopping everything.`,
    );
    void stopAll().then(() => process.exit(1));
  });

  let pgUrl: string | undefined;
  let pgSource = 'DATABASE_URL';
  const metricsPort = env.WORKER_METRICS_PORT ?? env.PORT + 1;
  const metricsVariable =
    env.WORKER_METRICS_PORT === undefined ? "PORT (the worker's metrics take PORT+1)" : 'WORKER_METRICS_PORT';
  const devnet = devnetDecision(env);
  let devnetStarting: Promise<void> | undefined;
  try {
    await checkPortFree(env.PORT, 'PORT');
    await checkPortFree(metricsPort, metricsVariable);
    if (devnet.start) {
      await checkPortFree(env.DEVNET_PORT, 'DEVNET_PORT', '127.0.0.1');
      // Started now, beside Postgres, Redis and the migrations; awaited before the process types.
      say(`starting the ${DEVNET_LABEL} (ganache; demo money, never used in production)`);
      devnetStarting = supervisor.start([devnetProcess()]);
      devnetStarting.catch(() => undefined); // its failure is thrown where it is awaited
    }
    const pgInfo = await resolvePostgres({ log: say, supervisor });
    pgUrl = pgInfo.url;
    pgSource = pgInfo.source === 'DATABASE_URL' ? 'DATABASE_URL' : 'the embedded Postgres';
    say(
      pgInfo.source === 'embedded'
        ? `postgres: embedded on 127.0.0.1:${env.EMBEDDED_PG_PORT} (data in ${pgInfo.dataDir}, log in ${pgInfo.logFile})`
        : `postgres: ${pgInfo.source}`,
    );
    const redisInfo = await resolveRedis({ supervisor });
    say(`redis: ${redisInfo.source}`);

    const db = createDb(pgInfo.url, { poolMax: 2 });
    try {
      const applied = await release(db);
      say(applied.length ? `migrations applied: ${applied.length}` : 'schema up to date');
    } finally {
      await db.destroy();
    }

    // Without a provider the hand-off can still be tried end to end, against a stand-in that says it is
    // one (demo balances, [MOCK] in the challenge title). Never in production.
    let standInUrl: string | undefined;
    // The stand-in authenticates its redemptions like a real provider: with a secret shared with web.
    const standInSecret = randomBytes(32).toString('base64url');
    if (!env.PAYMENTS_PROVIDER_URL && !isProduction(env)) {
      const standIn = await startStandInProvider({
        redeemUrl: `http://127.0.0.1:${env.PORT}/api/v1/${env.PAYMENTS_PROVIDER_SLUG}/challenge/redeem`,
        providerSecret: standInSecret,
        challengeTtlSeconds: env.LOGIN_CHALLENGE_TTL_SECONDS,
        timeoutMs: env.PROVIDER_TIMEOUT_MS,
      });
      closeStandIn = standIn.close;
      standInUrl = standIn.url;
      say(
        `payments provider: stand-in at ${standIn.url} (demo balances; set PAYMENTS_PROVIDER_URL for a real one)`,
      );
    }

    // The chain the priced services are paid on, when none is configured: demo money, labelled as such.
    let devnetInfo: DevnetInfo | undefined;
    if (devnetStarting) {
      await devnetStarting;
      devnetInfo = readDevnetInfo(env.DATA_DIR);
      if (!devnetInfo)
        throw new StartupFailure(`the ${DEVNET_LABEL} wrote no devnet.json`, 'its log lines above say why');
      say(
        `devnet: ${DEVNET_LABEL} at ${devnetInfo.rpcUrl} (chain id ${devnetInfo.chainId}); demo stablecoin ${devnetInfo.token.symbol} ${devnetInfo.token.address}, treasury ${devnetInfo.treasury}, demo payer ${devnetInfo.payer}`,
      );
    } else if (!devnet.start && devnet.reason === 'production' && !chainConfigured(env)) {
      say(
        'payments: no chain configured, so priced services answer 503 payments_unavailable; set a treasury and its chain endpoint (the local development chain never runs in production)',
      );
    }

    const tokenFile = join(env.DATA_DIR, 'keys', 'operator-token');
    const childEnv = childProcessEnv({
      DATABASE_URL: pgInfo.url,
      REDIS_URL: redisInfo.url,
      OPERATOR_TOKEN: env.OPERATOR_TOKEN ?? operatorToken(tokenFile),
      WORKER_METRICS_PORT: String(metricsPort),
      // Every docs walkthrough claims a TRIAL from this machine's one address: on one instance they
      // run one after another, in any order (production keeps its default of 3).
      TRIAL_PER_ADDRESS_PER_DAY: processVariables().TRIAL_PER_ADDRESS_PER_DAY ?? String(DEV_TRIALS_PER_DAY),
      ...(standInUrl
        ? {
            PAYMENTS_PROVIDER_URL: standInUrl,
            PAYMENTS_PROVIDER_MOCK: 'true',
            PAYMENTS_PROVIDER_SECRET: standInSecret,
          }
        : {}),
      ...(devnetInfo
        ? devnetChildEnv(devnetInfo, env.ASSETS_JSON, {
            facilitatorUrl: env.X402_FACILITATOR_URL,
            settlerKey: env.X402_EVM_SETTLER_KEY,
          })
        : {}),
    });
    const processType = (name: keyof typeof processTypes): ProcessSpec => ({
      name,
      command: process.execPath,
      args: ['--import', 'tsx', join(root, processTypes[name])],
      cwd: root,
      env: childEnv,
      ready: 'ipc',
      readyTimeoutMs: READY_TIMEOUT_MS,
      ...(name === 'web' ? { confirm: healthAnswers } : {}),
    });
    say('starting web, worker and prover');
    await supervisor.start([processType('web'), processType('worker'), processType('prover')]);

    run.state = 'running';
    // For this checkout's command-line tools (npm run keys, npm run admin): where this run answers.
    writeLocalRun(env.DATA_DIR, {
      pid: process.pid,
      databaseUrl: pgInfo.url,
      serviceUrl: serviceUrl({ ...env, PX_URL: undefined }),
      ...(env.OPERATOR_TOKEN ? {} : { operatorTokenFile: resolve(tokenFile) }),
    });
    const lines = banner({
      port: env.PORT,
      baseUrl: env.BASE_URL,
      apiUrl: env.API_URL,
      siteUrl: env.SITE_URL,
      tokenFile: env.OPERATOR_TOKEN ? undefined : tokenFile,
      ...(devnetInfo
        ? { devnet: { rpcUrl: devnetInfo.rpcUrl, payerKeyFile: join(env.DATA_DIR, 'devnet', 'payer.key') } }
        : {}),
    });
    for (const line of lines) say(line);
  } catch (err) {
    if (run.state === 'stopping') return; // a signal or a crash is already stopping everything
    run.state = 'stopping';
    const failure = asFailure(err, pgSource, pgUrl ?? env.DATABASE_URL);
    if (env.LOG_LEVEL === 'debug' || env.LOG_LEVEL === 'trace') console.error(err);
    await stopAll();
    refuse(
      `cannot start: ${failure.what}. Fix: ${failure.fix}.${isProduction(env) ? ` ${PRODUCTION_HINT}` : ''}`,
    );
    process.exit(1);
  }
}

refuseConfig(chainSettingIssues(env));
// In production, before anything starts: a development switch (DEVNET=on among them) is refused here
// as each process would refuse it.
refuseStart(developmentSwitchIssues(env));
await main();
