// Schema migrations: append-only knex migrations in migrations/, run by the release process.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { moduleFile, projectPath, runsBuilt } from '../paths';
import type { Knex } from 'knex';
import type { Db } from './knex';

export const migrationsDirectory = projectPath('migrations');

/**
 * Loads migration modules through our own import(), so the same TypeScript files load under the
 * runtime loader and under the test runner alike.
 */
class FileMigrationSource implements Knex.MigrationSource<string> {
  async getMigrations(): Promise<string[]> {
    return readdirSync(migrationsDirectory)
      .filter((f) => /^\d{14}_[\w-]+\.ts$/.test(f))
      .sort();
  }
  getMigrationName(migration: string): string {
    return migration;
  }
  async getMigration(migration: string): Promise<Knex.Migration> {
    // A built process (dist/) loads each migration's build, under the same name.
    const file = runsBuilt
      ? moduleFile(`migrations/${migration}`)
      : pathToFileURL(join(migrationsDirectory, migration));
    return (await import(file.href)) as Knex.Migration;
  }
}

const config: Knex.MigratorConfig = {
  migrationSource: new FileMigrationSource(),
  tableName: 'knex_migrations',
};

export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest(config)) as [number, string[]];
  return applied;
}

export async function migrateDown(db: Db): Promise<void> {
  await db.migrate.rollback(config, true);
}

/** True when every migration file has been applied. */
export async function migrationsCurrent(db: Db): Promise<{ current: boolean; pending: string[] }> {
  const [, pending] = (await db.migrate.list(config)) as [unknown[], Array<{ file: string } | string>];
  return { current: pending.length === 0, pending: pending.map((p) => (typeof p === 'string' ? p : p.file)) };
}

/** Applies pending migrations one at a time while the next one sorts before `name` (tests of one migration). */
export async function migrateUpTo(db: Db, name: string): Promise<void> {
  for (;;) {
    const { pending } = await migrationsCurrent(db);
    if (!pending[0] || pending[0] >= name) return;
    await db.migrate.up(config);
  }
}

/** Applies the next pending migration only. */
export async function migrateNext(db: Db): Promise<void> {
  await db.migrate.up(config);
}

/** Reverts the last applied migration only. */
export async function migrateBack(db: Db): Promise<void> {
  await db.migrate.down(config);
}
