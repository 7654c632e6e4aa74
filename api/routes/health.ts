// Dependency probes shared by health (liveness summary) and readiness (gatekeeping).
import type { AppDeps } from '../deps';
import { queueNames } from '../../shared/queues';

export interface Check {
  ok: boolean;
  latencyMs?: number;
  detail?: string;
}

async function timed(fn: () => Promise<unknown>, timeoutMs = 2000): Promise<Check> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), timeoutMs);
      }),
    ]);
    return { ok: true, latencyMs: Math.round((performance.now() - start) * 10) / 10 };
  } catch (err) {
    return { ok: false, detail: (err as Error).message || 'unreachable' };
  } finally {
    clearTimeout(timer);
  }
}

export const checkDb = (deps: AppDeps) => timed(() => deps.db.raw('select 1'));
export const checkRedis = (deps: AppDeps) => timed(() => deps.redis.ping());

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
