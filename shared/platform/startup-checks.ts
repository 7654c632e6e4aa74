// What a production process checks before it serves: every key and setting its type needs, no
// development or mock switch (the one list, developmentSwitches), and what the database must not hold
// (values sealed under a key it lacks, demo money). A problem stops the start with one line each,
// saying what to set; nothing starts half-configured and answers 500 later.
import type { Knex } from 'knex';
import type { Env, ProductionSettings } from './env';
import { env, isProduction, refuseConfig, underTestRunner } from './env';
import { StartupRefused } from './failures';
import { logger } from './log';
import { isSeed } from './keys';
import { metricsAccess } from './metrics';
import { scanSealedColumns, unopenableLines } from './sealed-columns';
import type { SealedColumn } from './sealed-columns';
import { sealingKeyIssues } from './sealing';

/** The Procfile's process types. */
export type ProcessKind = 'web' | 'worker' | 'prover' | 'release';

const PREFIX = 'Refusing to start in production: ';
const SEED = 'a 32-byte ed25519 seed as 64 hex characters or base64 (openssl rand -hex 32)';

/**
 * A development or mock switch of the settings. `refused`: no production process starts with it set.
 * `override`: a documented way past a production rule, for a deployment that means it; production
 * takes it, and web, worker and prover say so at start (a warning naming it).
 */
export interface DevelopmentSwitch {
  /** The setting as it is set, e.g. `PAYMENTS_PROVIDER_MOCK=true`. */
  setting: string;
  set: (e: Env) => boolean;
  production: 'refused' | 'override';
  /** What it does, and for a refused switch what to do instead. */
  why: string;
}

/** Every development or mock switch of shared/platform/env.ts, listed once (docs/operations.md lists them too). */
export const developmentSwitches: readonly DevelopmentSwitch[] = [
  {
    setting: 'PAYMENTS_PROVIDER_MOCK=true',
    set: (e) => e.PAYMENTS_PROVIDER_MOCK,
    production: 'refused',
    why: "the payments provider is npm start's local stand-in and its login challenges say [MOCK]; unset it and point PAYMENTS_PROVIDER_URL at the real provider",
  },
  {
    setting: 'EVM_DEVNET=true',
    set: (e) => e.EVM_DEVNET,
    production: 'refused',
    why: "the EVM endpoint is npm start's local development chain, whose coins anyone mints; unset it and configure a real EVM_RPC_URL",
  },
  {
    setting: 'DEVNET=on',
    set: (e) => e.DEVNET === 'on',
    production: 'refused',
    why: 'the local development chain never runs in production; unset DEVNET',
  },
  {
    setting: 'RATE_LIMIT_ENABLED=false',
    set: (e) => !e.RATE_LIMIT_ENABLED,
    production: 'refused',
    why: 'every request budget would be off, the failed-credential budget among them (the operator token could be guessed as fast as the network carries guesses); unset it, or raise RATE_LIMIT_IP_PER_MINUTE and RATE_LIMIT_KEY_PER_MINUTE',
  },
  {
    setting: 'ALLOW_INSECURE_CIRCUITS=true',
    set: (e) => e.ALLOW_INSECURE_CIRCUITS,
    production: 'override',
    why: 'circuit keys from the insecure development setup, or from powers of tau neither published nor pinned, are taken: their policy proofs are forgeable (docs/zk.md)',
  },
  {
    setting: 'ALLOW_DEVELOPMENT_SETTLEMENTS=true',
    set: (e) => e.ALLOW_DEVELOPMENT_SETTLEMENTS,
    production: 'override',
    why: 'the database may hold payments settled on the local development chain (demo money, never counted as revenue)',
  },
  {
    setting: 'LOGISTICS_ALLOW_PRIVATE_TARGETS=true',
    set: (e) => e.LOGISTICS_ALLOW_PRIVATE_TARGETS,
    production: 'override',
    why: 'webhooks, agent endpoints and deliveries may target loopback, private and internal addresses over plain http: for a closed network, where every caller is trusted with them',
  },
  {
    setting: 'METRICS_PUBLIC=true',
    set: (e) => e.METRICS_PUBLIC,
    production: 'override',
    why: 'metrics answer without METRICS_TOKEN: for a network only the scraper reaches',
  },
];

/** The refused switches a production process was given, one line each naming it and its fix; none elsewhere. */
export function developmentSwitchIssues(e: Env): string[] {
  if (!isProduction(e)) return [];
  return developmentSwitches
    .filter((s) => s.production === 'refused' && s.set(e))
    .map((s) => `${s.setting} is a development switch: ${s.why}`);
}

/** The overrides a production process runs with (its start says so); none elsewhere. */
export const productionOverrides = (e: Env): DevelopmentSwitch[] =>
  isProduction(e) ? developmentSwitches.filter((s) => s.production === 'override' && s.set(e)) : [];

/** Each problem of a process type's settings in production, in words naming the fix; none elsewhere. */
export function productionSettingIssues(e: Env, kind: ProcessKind): string[] {
  if (!isProduction(e)) return [];
  const issues: string[] = [];
  // Links, receipts and cached documents name the service's own address: in production it is never
  // taken from a request's Host header.
  if (!e.BASE_URL)
    issues.push(
      "BASE_URL is not set; set it to the service's public https:// address (links and documents name it, never a request's Host)",
    );
  if (!e.DATABASE_URL)
    issues.push(
      `DATABASE_URL is not set; point it at the deployment's Postgres (postgres://user:password@host/db)`,
    );
  if (kind !== 'release' && !e.REDIS_URL && !e.REDIS_CLUSTER_NODES)
    issues.push(
      "REDIS_URL is not set; point it at the deployment's Redis (redis:// or rediss://), or set REDIS_CLUSTER_NODES",
    );
  // Every process signs (receipts, packages, licenses) or derives its sealing keys from the signing key.
  if (!e.SERVICE_SIGNING_KEY)
    issues.push(`SERVICE_SIGNING_KEY is not set; set it to ${SEED}, the same in every process`);
  else if (!isSeed(e.SERVICE_SIGNING_KEY)) issues.push(`SERVICE_SIGNING_KEY is malformed; set it to ${SEED}`);
  // The web publishes the log's checkpoints, the worker signs them: both need the log's own key.
  if (e.LOG_SIGNING_KEY && !isSeed(e.LOG_SIGNING_KEY))
    issues.push(`LOG_SIGNING_KEY is malformed; set it to ${SEED}, not the signing key's`);
  else if (!e.LOG_SIGNING_KEY && (kind === 'web' || kind === 'worker'))
    issues.push(
      `LOG_SIGNING_KEY is not set; set it to ${SEED} of its own (the transparency log signs with it)`,
    );
  if (kind === 'web' && !e.OPERATOR_TOKEN)
    issues.push(
      'OPERATOR_TOKEN is not set; operator routes (Bull Board, revenue, administration) would answer 503 operator_disabled: set it to a random string of 16 or more characters (openssl rand -hex 32)',
    );
  // A worker's or prover's own metrics listener would answer anyone who reaches its port.
  const metricsPort =
    kind === 'worker' && e.WORKER_METRICS_PORT !== undefined
      ? 'WORKER_METRICS_PORT'
      : kind === 'prover' && e.PROVER_METRICS_PORT !== undefined
        ? 'PROVER_METRICS_PORT'
        : undefined;
  if (metricsPort && 'refused' in metricsAccess(e))
    issues.push(
      `METRICS_TOKEN is not set while ${metricsPort} is; set it to a random string of 16 or more characters (scrapers send it as a Bearer token), or METRICS_PUBLIC=true when only the scraper can reach the port`,
    );
  issues.push(...sealingKeyIssues(e));
  issues.push(...developmentSwitchIssues(e));
  return issues;
}

/**
 * Stops a process whose settings are wrong: one line per problem on stderr, exit 78 (EX_CONFIG), as
 * for any setting. Under the test runner it throws instead.
 */
export function refuseStart(issues: readonly string[]): void {
  if (issues.length === 0) return;
  const lines = issues.map((i) => `${PREFIX}${i}`);
  if (!underTestRunner()) {
    process.stderr.write(lines.map((l) => `${l}\n`).join(''));
    process.exit(78);
  }
  throw new StartupRefused(lines);
}

/**
 * The settings check every process's main runs first: in production, each problem of its type's
 * settings and those a product line found in its own (`more`, e.g. a malformed treasury key) in one
 * refusal, so a deploy sees them all at once; elsewhere `more` alone stops it, as any setting does.
 */
export function refuseStartup(e: Env, kind: ProcessKind, more: readonly string[] = []): void {
  if (!isProduction(e)) return refuseConfig(more);
  refuseStart([...productionSettingIssues(e, kind), ...more]);
  // The processes that run say so in their log; release prints only what it did.
  if (kind === 'release') return;
  for (const o of productionOverrides(e))
    logger.warn({ setting: o.setting, process: kind }, `running in production with ${o.setting}: ${o.why}`);
}

/** A check of what the database holds; each line says what is wrong and what fixes it. */
export type DatabaseCheck = (db: Knex) => Promise<string[]>;

/** How many rows of each sealed column a starting process opens: enough to tell a wrong key, and quick. */
const SAMPLE = 50;

/** Sealed columns whose sampled rows open under no configured key (a wrong key, or one left out of its history). */
export const sealedKeyCheck =
  (columns: readonly SealedColumn[]): DatabaseCheck =>
  async (db) =>
    unopenableLines(await scanSealedColumns(db, columns, { reseal: false, limit: SAMPLE }));

/** Runs the checks in production; a problem refuses the start (thrown, so the process closes what it opened). */
export async function assertDatabaseStart(
  db: Knex,
  checks: readonly DatabaseCheck[],
  settings: ProductionSettings = env,
): Promise<void> {
  if (!isProduction(settings)) return;
  const issues = (await Promise.all(checks.map((c) => c(db)))).flat();
  if (issues.length > 0) throw new StartupRefused(issues.map((i) => `${PREFIX}${i}`));
}
