// Once per test run: resolve Postgres and Redis the way `npm start` does, migrate a template database
// that every test file clones, and tear it all down at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
    redisUrl: string;
    dataDir: string;
  }
}

export default async function setup(project: TestProject) {
  // Vite sets BASE_URL to '/' for its own use; ours is an absolute address or unset.
  if (process.env.BASE_URL === '/') delete process.env.BASE_URL;
  const dataDir = mkdtempSync(join(tmpdir(), 'px-test-'));
  process.env.DATA_DIR ??= join(process.cwd(), '.data');
  process.env.LOG_LEVEL = 'silent';
  const { resolvePostgres } = await import('../../dev/stack/postgres');
  const { resolveRedis } = await import('../../dev/stack/redis');
  // The production build the Procfile runs (test/platform/startup.test.ts starts it), as a deploy makes it.
  const { buildDist } = await import('../../scripts/build');
  await buildDist({ quiet: true });
  const pgInfo = await resolvePostgres();
  const redisInfo = await resolveRedis();

  const template = `px_tmpl_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: pgInfo.url });
  await admin.connect();
  await admin.query(`create database "${template}"`);
  const templateUrl = withDatabase(pgInfo.url, template);
  const { createDb } = await import('../../shared/platform/db/knex');
  const { release } = await import('../../workers/release');
  const db = createDb(templateUrl, { poolMax: 2 });
  try {
    await release(db);
  } finally {
    await db.destroy();
  }

  project.provide('pgAdminUrl', pgInfo.url);
  project.provide('pgTemplate', template);
  project.provide('redisUrl', redisInfo.url);
  project.provide('dataDir', dataDir);

  return async () => {
    const { rows } = await admin.query(
      `select datname from pg_database where datname = $1 or datname like $2`,
      [template, `px_t_${process.pid}_%`],
    );
    for (const { datname } of rows as Array<{ datname: string }>) {
      await admin.query(`drop database if exists "${datname}" with (force)`).catch(() => undefined);
    }
    await admin.end();
    await redisInfo.stop();
    await pgInfo.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
