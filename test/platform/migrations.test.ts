// Migrations are reversible: up, down to nothing, and up again on a fresh database.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createDb } from '../../shared/platform/db/knex';
import { migrateDown, migrateLatest, migrationsCurrent } from '../../shared/platform/db/migrate';

const base = new URL(process.env.DATABASE_URL!);
const name = `${base.pathname.slice(1)}_mig`;
const adminUrl = new URL(base);
adminUrl.pathname = '/postgres';

async function admin(sql: string) {
  const c = new pg.Client({ connectionString: adminUrl.toString() });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

afterAll(() => admin(`drop database if exists "${name}" with (force)`));

describe('migrations', () => {
  it('go up, down and up again', async () => {
    await admin(`create database "${name}"`);
    const url = new URL(base);
    url.pathname = `/${name}`;
    const db = createDb(url.toString(), { poolMax: 2 });
    try {
      const applied = await migrateLatest(db);
      expect(applied.length).toBeGreaterThan(0);
      expect((await migrationsCurrent(db)).current).toBe(true);
      const tables = async () =>
        (await db('pg_tables').where({ schemaname: 'public' }).pluck('tablename')).filter(
          (t: string) => !t.startsWith('knex_'),
        );
      expect(await tables()).toEqual(
        expect.arrayContaining(['jobs', 'job_events', 'services', 'idempotency_keys']),
      );
      await migrateDown(db);
      expect(await tables()).toEqual([]);
      expect((await migrationsCurrent(db)).current).toBe(false);
      expect(await migrateLatest(db)).toEqual(applied);
    } finally {
      await db.destroy();
    }
  });
});
