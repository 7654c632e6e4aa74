// Dependency probes shared by health (liveness summary) and readiness (gatekeeping), and the cache that
// makes any rate of either cost a bounded number of probes.
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

/** Whether every queue answers, without its counts: those say how much work is waiting (/metrics). */
export const checkQueues = async (deps: AppDeps): Promise<Check> =>
  (await queueDepths(deps)) ? { ok: true } : { ok: false, detail: 'unreachable' };

/**
 * `run`'s answer for an app, shared by every caller while it runs and for `ttlMs` after it settled:
 * health and readiness are unauthenticated and pass the rate limiter by (a monitor behind a busy
 * address must see the truth), so what bounds what they cost is that any number of callers within
 * that time share one run of the probes (READINESS_CACHE_MS).
 */
export function sharedRun<T>(
  ttlMs: number,
  run: (deps: AppDeps) => Promise<T>,
): (deps: AppDeps) => Promise<T> {
  const runs = new WeakMap<AppDeps, { answer: Promise<T>; until: number }>();
  return (deps) => {
    const now = performance.now();
    const last = runs.get(deps);
    if (last && last.until > now) return last.answer;
    const entry = { answer: run(deps), until: Infinity };
    runs.set(deps, entry);
    const settled = () => {
      entry.until = performance.now() + ttlMs;
    };
    entry.answer.then(settled, settled);
    return entry.answer;
  };
}
