// The web process's verify pool: one per process, made on first use from configuration, closed at
// shutdown. Routes and pages hand it the checks that could hold the event loop for more than a few ms.
import type { Request } from 'express';
import { env } from '../../shared/platform/env';
import { OffloadPool } from '../../shared/platform/offload';
import { moduleFile } from '../../shared/platform/paths';
import type { Principal } from '../http/auth';
import { budgetKey } from '../http/ratelimit';
import type { OffloadTaskName, offloadTasks } from './tasks';

let pool: OffloadPool | undefined;

function verifyPool(): OffloadPool {
  pool ??= new OffloadPool(moduleFile('api/offload/tasks.ts'), {
    threads: env.VERIFY_POOL_THREADS,
    queue: env.VERIFY_POOL_QUEUE,
    perOwner: env.VERIFY_POOL_PER_NETWORK,
    timeoutMs: env.VERIFY_POOL_TIMEOUT_MS,
  });
  return pool;
}

type Input<N extends OffloadTaskName> = Parameters<(typeof offloadTasks)[N]>[0];
type Output<N extends OffloadTaskName> = Awaited<ReturnType<(typeof offloadTasks)[N]>>;

/**
 * Runs a check in the pool on behalf of the request's budget owner (its caller, or its client network:
 * the same owner its rate limits count), so one network holds at most its share of the pool.
 */
export function offload<N extends OffloadTaskName>(
  task: N,
  input: Input<N>,
  caller: { req: Request; auth?: Principal | null },
): Promise<Output<N>> {
  return verifyPool().run<Output<N>>(task, input, budgetKey(caller.auth ?? null, caller.req));
}

/** Ends the pool's threads, if it ever started. */
export async function closeVerifyPool(): Promise<void> {
  const p = pool;
  pool = undefined;
  await p?.close();
}
