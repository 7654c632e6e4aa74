// The `release` process: migrations to latest and the service catalog synced. Run once per deploy.
import { createDb } from '../db/knex';
import { migrateLatest } from '../db/migrate';
import { syncServiceCatalog } from '../jobs/catalog';
import { sealLegacyRoomSalts } from '../governance/rooms';
import type { Db } from '../db/knex';

export async function release(db: Db): Promise<string[]> {
  const applied = await migrateLatest(db);
  await syncServiceCatalog(db);
  // Rooms made before salts were sealed: the migration cannot seal them (the key is the service's).
  await sealLegacyRoomSalts(db);
  return applied;
}

if (import.meta.url === `file://${process.argv[1]}`) {
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
