// The `release` process: migrations to latest and the service catalog synced. Run once per deploy.
import { createDb } from '../shared/platform/db/knex';
import { migrateLatest } from '../shared/platform/db/migrate';
import { syncServiceCatalog } from '../shared/jobs/catalog';
import { sealLegacyRoomSalts } from '../shared/governance/rooms';
import type { Db } from '../shared/platform/db/knex';
import { env, refuseConfig } from '../shared/platform/env';
import { chainSettingIssues } from '../shared/chains/settings';

export async function release(db: Db): Promise<string[]> {
  const applied = await migrateLatest(db);
  await syncServiceCatalog(db);
  // Rooms made before salts were sealed: the migration cannot seal them (the key is the service's).
  await sealLegacyRoomSalts(db);
  return applied;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  refuseConfig(chainSettingIssues(env));
  const db = createDb();
  try {
    const applied = await release(db);
    process.stdout.write(
      applied.length
        ? `applied ${applied.length} migration(s): ${applied.join(', ')}\n`
        : 'schema is up to date\n',
    );
  } finally {
    await db.destroy();
  }
}
