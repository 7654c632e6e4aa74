// Readiness: the platform's own checks, and the report the readiness route answers with. A product
// line's checks (circuit artifacts, chain adapters) are listed beside them in api/wiring.ts.
import { migrationsCurrent } from '../../shared/platform/db/migrate';
import { logger } from '../../shared/platform/log';
import { keyRefusal, logSigningKey, serviceSigningKey } from '../../shared/platform/keys';
import type { AppDeps } from '../deps';
import type { Check } from './health-checks';
import { checkDb, checkQueues, checkRedis } from './health-checks';

export type ReadinessCheck = (deps: AppDeps) => Promise<Check>;

/** Named checks, in the order the report lists them. */
export type ReadinessChecks = ReadonlyArray<readonly [name: string, check: ReadinessCheck]>;

/** What every web process needs whatever the product lines: its stores, its schema, its signing key. */
export const platformReadinessChecks: ReadinessChecks = [
  ['db', checkDb],
  ['redis', checkRedis],
  [
    'migrations',
    async (deps) => {
      try {
        const { current, pending } = await migrationsCurrent(deps.db);
        return current ? { ok: true } : { ok: false, detail: `pending: ${pending.join(', ')}` };
      } catch (err) {
        // The driver's message may name the database's address: the answer is public.
        logger.debug({ check: 'migrations', err: (err as Error).message }, 'readiness check failed');
        return { ok: false, detail: 'the migrations table could not be read' };
      }
    },
  ],
  ['queues', checkQueues],
  [
    'receiptKey',
    async () => {
      try {
        const { keyId } = serviceSigningKey();
        // A process whose key the history retired or revoked signs nothing: it is not ready for traffic.
        const why = keyRefusal(keyId);
        if (why)
          return { ok: false, detail: `ed25519 key ${keyId} ${why}: set SERVICE_SIGNING_KEY to the new key` };
        return { ok: true, detail: `ed25519 key ${keyId}` };
      } catch (err) {
        return { ok: false, detail: (err as Error).message };
      }
    },
  ],
  [
    // The transparency log signs its checkpoints with a key of its own (LOG_SIGNING_KEY).
    'logKey',
    async () => {
      try {
        return { ok: true, detail: `ed25519 key ${logSigningKey().keyId}` };
      } catch (err) {
        return { ok: false, detail: (err as Error).message };
      }
    },
  ],
];

/** Runs every check at once; one that throws counts as failed, and its message stays in the log. */
export async function readinessReport(
  checks: ReadinessChecks,
  deps: AppDeps,
): Promise<{ ready: boolean; checks: Record<string, Check> }> {
  const entries = await Promise.all(
    checks.map(
      async ([name, check]) =>
        [
          name,
          await check(deps).catch((e: Error) => {
            logger.debug({ check: name, err: e.message }, 'readiness check failed');
            return { ok: false, detail: 'the check failed' };
          }),
        ] as const,
    ),
  );
  return { ready: entries.every(([, c]) => c.ok), checks: Object.fromEntries(entries) };
}
