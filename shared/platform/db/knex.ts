// Postgres access: one knex pool per process, short timeouts so an unreachable database answers 503 fast.
import knexFactory from 'knex';
import type { Knex } from 'knex';
import pg from 'pg';
import { env } from '../env';
import { logger } from '../log';
import { traceQueries } from '../tracing';

// int8 (bigint, counts) as JS strings would leak into responses; parse counts explicitly where needed.
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => v);

export type Db = Knex;

export function createDb(url = env.DATABASE_URL, options: { poolMax?: number } = {}): Db {
  if (!url)
    throw new Error('DATABASE_URL is not set (npm start resolves an embedded Postgres when it is unset)');
  const db = knexFactory({
    client: 'pg',
    connection: { connectionString: url, connectionTimeoutMillis: 3000, application_name: 'proof-exchange' },
    pool: {
      min: 0,
      max: options.poolMax ?? env.DB_POOL_MAX,
      acquireTimeoutMillis: 4000,
      idleTimeoutMillis: 30_000,
    },
    acquireConnectionTimeout: 4000,
    // Connection failures reach callers as errors (503); knex's own console lines would only repeat them.
    log: {
      warn: (m: unknown) => logger.debug({ knex: String(m) }, 'knex warning'),
      error: (m: unknown) => logger.debug({ knex: String(m) }, 'knex error'),
      deprecate: () => undefined,
      debug: () => undefined,
    },
  });
  traceQueries(db);
  return db;
}

/** Runs fn in a transaction; the common shape of every state change. */
export function tx<T>(db: Db, fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return db.transaction(fn);
}
