// The `release` process: migrations to latest, the service catalog synced, and every value sealed under
// an earlier SEALING_KEY or BALLOT_KEY sealed again under the current one. Run once per deploy, before
// the new web and worker processes start. In production it refuses (exit 78, one line each) a database
// holding values no configured key opens, or demo money from npm start.
import { createDb } from '../shared/platform/db/knex';
import { migrateLatest } from '../shared/platform/db/migrate';
import { syncServiceCatalog } from '../shared/jobs/catalog';
import { sealLegacyRoomSalts } from '../shared/governance/rooms';
import { developmentSettlementIssues } from '../shared/payments/development';
import type { Db } from '../shared/platform/db/knex';
import { env, isProduction } from '../shared/platform/env';
import type { Env, ProductionSettings } from '../shared/platform/env';
import { scanSealedColumns, unopenableLines } from '../shared/platform/sealed-columns';
import type { ColumnReport } from '../shared/platform/sealed-columns';
import { refuseStartup } from '../shared/platform/startup-checks';
import { chainSettingIssues } from '../shared/chains/settings';
import { sealedColumns } from './startup';

export interface ReleaseReport {
  applied: string[];
  /** Each sealed column: rows, rows moved to the current key by this run, rows no key opens. */
  sealed: ColumnReport[];
  /** What refuses the release in production (one line each, naming the fix); reported elsewhere. */
  problems: string[];
}

export async function releaseReport(
  db: Db,
  settings: Pick<Env, 'ALLOW_DEVELOPMENT_SETTLEMENTS'> & ProductionSettings = env,
): Promise<ReleaseReport> {
  const applied = await migrateLatest(db);
  await syncServiceCatalog(db);
  // Rooms made before salts were sealed: the migration cannot seal them (the key is the service's).
  await sealLegacyRoomSalts(db);
  // Batched and conditional: running it again, or beside processes that write, moves each row once.
  const sealed = await scanSealedColumns(db, sealedColumns, { reseal: true });
  // Demo money is at home in development; only production refuses it.
  const demo = isProduction(settings) ? await developmentSettlementIssues(db, settings) : [];
  const problems = [...unopenableLines(sealed), ...demo];
  return { applied, sealed, problems };
}

export async function release(db: Db): Promise<string[]> {
  return (await releaseReport(db)).applied;
}

/** The report as the operator reads it: one line each. */
export function releaseLines(report: ReleaseReport): string[] {
  const lines = [
    report.applied.length
      ? `applied ${report.applied.length} migration(s): ${report.applied.join(', ')}`
      : 'schema is up to date',
  ];
  for (const r of report.sealed) {
    if (r.resealed > 0)
      lines.push(`sealed ${r.resealed} row(s) of ${r.table}.${r.column} again under the current ${r.ring}`);
  }
  return lines;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  refuseStartup(env, 'release', chainSettingIssues(env));
  const db = createDb();
  let report: ReleaseReport;
  try {
    report = await releaseReport(db);
  } finally {
    await db.destroy();
  }
  process.stdout.write(
    releaseLines(report)
      .map((l) => `${l}\n`)
      .join(''),
  );
  if (report.problems.length > 0) {
    if (isProduction(env)) {
      process.stderr.write(report.problems.map((p) => `Refusing to release in production: ${p}\n`).join(''));
      process.exit(78);
    }
    process.stderr.write(report.problems.map((p) => `warning: ${p}\n`).join(''));
  }
}
