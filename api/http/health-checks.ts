// Dependency probes shared by health (liveness summary) and readiness (gatekeeping).
import type { AppDeps } from '../deps';
import { logger } from '../../shared/platform/log';
import { queueNames } from '../../shared/platform/queues';

export interface Check {
  ok: boolean;
  latencyMs?: number;
  detail?: string;
}

const TIMED_OUT = 'timed out';

/**
 * Runs a probe within `timeoutMs`. The answer is public: a failure says `timed out` or `unreachable`,
 * never the driver's message (`connect ECONNREFUSED 10.0.0.5:5432` names the store's address); that
 * goes to the log.
 */
async function timed(what: string, fn: () => Promise<unknown>, timeoutMs = 2000): Promise<Check> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(TIMED_OUT)), timeoutMs);
      }),
    ]);
    return { ok: true, latencyMs: Math.round((performance.now() - start) * 10) / 10 };
  } catch (err) {
    const message = (err as Error).message;
    logger.debug({ check: what, err: message }, 'dependency check failed');
    return { ok: false, detail: message === TIMED_OUT ? TIMED_OUT : 'unreachable' };
  } finally {
    clearTimeout(timer);
  }
}

export const checkDb = (deps: AppDeps) => timed('db', () => deps.db.raw('select 1'));
export const checkRedis = (deps: AppDeps) => timed('redis', () => deps.redis.ping());

export async function queueDepths(
  deps: AppDeps,
): Promise<Record<string, { waiting: number; active: number; delayed: number; failed: number }> | null> {
  try {
    const entries = await Promise.all(
      queueNames.map(async (name) => {
        const c = await deps.queues
          .get(name)
          .getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized');
        return [
          name,
          {
            waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
            active: c.active ?? 0,
            delayed: c.delayed ?? 0,
            failed: c.failed ?? 0,
          },
        ] as const;
      }),
    );
    return Object.fromEntries(entries);
  } catch {
    return null;
  }
}
