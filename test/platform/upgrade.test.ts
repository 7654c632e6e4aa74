// An upgrade deploys `release` first: a web of the new version on a schema that lacks one of its
// migrations is not ready (readiness `migrations` names what is pending), so it takes no traffic until
// the release has run; the release applies it, and a second release changes nothing.
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateBack, migrationsDirectory } from '../../shared/platform/db/migrate';
import { releaseLines, releaseReport } from '../../workers/release';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  await app.close();
});

const newest = readdirSync(migrationsDirectory)
  .filter((f) => /\.(ts|js)$/.test(f))
  .sort()
  .at(-1)!;

describe('upgrades: release before web', () => {
  it('a web ahead of its schema is not ready until release applies what is pending', async () => {
    // The database as the previous version left it: the newest migration not yet applied.
    await migrateBack(app.deps.db);
    const before = await app.request.get('/api/v1/readiness').expect(503);
    expect(before.body.ready).toBe(false);
    expect(before.body.checks.migrations).toEqual({ ok: false, detail: `pending: ${newest}` });

    const report = await releaseReport(app.deps.db);
    expect(report.problems).toEqual([]);
    expect(releaseLines(report)).toEqual([`applied 1 migration(s): ${newest}`]);
    const after = await app.request.get('/api/v1/readiness');
    expect(after.body.checks.migrations).toEqual({ ok: true });

    // Run again, as a retried deploy would: nothing to apply, nothing re-sealed.
    expect(releaseLines(await releaseReport(app.deps.db))).toEqual(['schema is up to date']);
  });
});
