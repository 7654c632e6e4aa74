// The `release` process: migrations to latest, the service catalog synced, every value sealed under
// an earlier SEALING_KEY or BALLOT_KEY sealed again under the current one, and in production the circuit
// keys checked against their ceremony (recorded, so web and prover starts take the check). Run once per deploy, before
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
import { assertCircuitSetup, CircuitSetupRefused, circuitSetup } from '../shared/zk/setup';
import type { KeysCheck } from '../shared/zk/setup';

export interface ReleaseReport {
  applied: string[];
  /** In production: the circuit keys checked against their ceremony (or the earlier check taken). */
  keysChecked?: KeysCheck;
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
  // The circuit keys against their r1cs and powers of tau, once per deploy and recorded, so the web and
  // prover processes of the same files start without spending a minute each on the same check.
  // An insecure development setup is the web's and the prover's to refuse (or to run, when allowed):
  // there is no ceremony to check it against.
  let keysChecked: KeysCheck | undefined;
  if (isProduction(settings) && acceptedSetup()) {
    try {
      keysChecked = (await assertCircuitSetup({ db, process: 'release' })).keysChecked;
    } catch (err) {
      if (!(err instanceof CircuitSetupRefused)) throw err;
      problems.push(err.message.replace(/^Refusing to start( in production)?: /, ''));
    }
  }
  return { applied, sealed, problems, ...(keysChecked ? { keysChecked } : {}) };
}

/** Whether the circuit keys claim an accepted powers of tau (a manifest that cannot be read: no). */
function acceptedSetup(): boolean {
  try {
    return !circuitSetup().insecure;
  } catch {
    return false;
  }
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
  const k = report.keysChecked;
  if (k)
    lines.push(
      k.by === 'this process'
        ? `circuit keys checked against their r1cs and ${k.ptau.file} (${k.circuits.length} circuits, ${Math.round(k.ms / 1000)} s): recorded for the web and prover starts`
        : `circuit keys: these files were checked against their r1cs and ${k.ptau.file} at ${k.checkedAt} (by ${k.by})`,
    );
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
