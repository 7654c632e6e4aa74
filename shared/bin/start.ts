// `npm start`: the whole service on one machine for a newcomer — Postgres and Redis resolved (embedded
// when unset), migrations, then web + worker (+ prover) as supervised child processes.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStandInProvider } from '../commercial/standin-provider';
import { createDb } from '../db/knex';
import { resolvePostgres } from '../devstack/postgres';
import { RedisUnavailableError, resolveRedis } from '../devstack/redis';
import { childProcessEnv, env } from '../env';
import { release } from './release';

const root = fileURLToPath(new URL('../..', import.meta.url));
const say = (line: string) => process.stdout.write(`[start] ${line}\n`);

/** A development operator token, kept under DATA_DIR so it survives restarts. */
function operatorToken(): string {
  if (env.OPERATOR_TOKEN) return env.OPERATOR_TOKEN;
  const file = join(env.DATA_DIR, 'keys', 'operator-token');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    mkdirSync(join(env.DATA_DIR, 'keys'), { recursive: true });
    const token = `op_${randomBytes(24).toString('base64url')}`;
    writeFileSync(file, token, { mode: 0o600 });
    return token;
  }
}

export const processTypes: Record<string, string> = {
  web: 'api/main.ts',
  worker: 'workers/main.ts',
  prover: 'workers/prover/main.ts',
};

async function main() {
  let pgStop = async () => undefined as unknown;
  let redisStop = async () => undefined as unknown;
  let standInStop = async () => undefined as unknown;
  try {
    const pgInfo = await resolvePostgres(say);
    pgStop = pgInfo.stop;
    say(`postgres: ${pgInfo.source}`);
    const redisInfo = await resolveRedis();
    redisStop = redisInfo.stop;
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
    if (!env.PAYMENTS_PROVIDER_URL && env.NODE_ENV !== 'production') {
      const standIn = await startStandInProvider({
        redeemUrl: `http://127.0.0.1:${env.PORT}/api/v1/${env.PAYMENTS_PROVIDER_SLUG}/challenge/redeem`,
        challengeTtlSeconds: env.LOGIN_CHALLENGE_TTL_SECONDS,
        timeoutMs: env.PROVIDER_TIMEOUT_MS,
      });
      standInStop = standIn.close;
      standInUrl = standIn.url;
      say(
        `payments provider: stand-in at ${standIn.url} (demo balances; set PAYMENTS_PROVIDER_URL for a real one)`,
      );
    }

    const token = operatorToken();
    const childEnv = childProcessEnv({
      DATABASE_URL: pgInfo.url,
      REDIS_URL: redisInfo.url,
      OPERATOR_TOKEN: token,
      WORKER_METRICS_PORT: String(env.WORKER_METRICS_PORT ?? env.PORT + 1),
      ...(standInUrl ? { PAYMENTS_PROVIDER_URL: standInUrl, PAYMENTS_PROVIDER_MOCK: 'true' } : {}),
    });
    const children = new Map<string, ChildProcess>();
    let stopping = false;
    const launch = (name: string, restarts = 0) => {
      const child = spawn(process.execPath, ['--import', 'tsx', join(root, processTypes[name]!)], {
        cwd: root,
        env: childEnv,
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      children.set(name, child);
      child.on('exit', (code, signal) => {
        if (stopping) return;
        const delay = Math.min(30_000, 500 * 2 ** restarts);
        say(`${name} exited (${signal ?? code}); restarting in ${delay} ms`);
        setTimeout(() => launch(name, restarts + 1), delay);
      });
    };
    for (const name of Object.keys(processTypes)) launch(name);

    const base = env.BASE_URL ?? `http://localhost:${env.PORT}`;
    for (let i = 0; i < 120; i++) {
      const ok = await fetch(`http://127.0.0.1:${env.PORT}/api/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    say('proof-exchange is running');
    say(`  API docs          ${base}/docs`);
    say(`  health            ${base}/api/health`);
    say(`  readiness         ${base}/api/v1/readiness`);
    say(`  Bull Board        ${base}/admin/queues   (user: anything, password: the operator token)`);
    say(`  verify a proof    ${base}/proof-workflows/verify/`);
    say(
      `  operator token    ${env.OPERATOR_TOKEN ? '(from OPERATOR_TOKEN)' : `${token}   (kept in ${join(env.DATA_DIR, 'keys', 'operator-token')})`}`,
    );
    say('Ctrl-C stops everything.');

    const stopAll = async (sig: NodeJS.Signals) => {
      if (stopping) process.exit(1);
      stopping = true;
      say(`stopping (${sig})`);
      await Promise.all(
        [...children.values()].map(
          (c) =>
            new Promise<void>((r) => {
              if (c.exitCode !== null || c.signalCode) return r();
              c.once('exit', () => r());
              c.kill('SIGTERM');
            }),
        ),
      );
      await standInStop();
      await redisStop();
      await pgStop();
      process.exit(0);
    };
    process.on('SIGINT', stopAll);
    process.on('SIGTERM', stopAll);
  } catch (err) {
    await standInStop();
    await redisStop();
    await pgStop();
    if (err instanceof RedisUnavailableError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

await main();
