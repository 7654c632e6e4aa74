// A bounded pool of worker threads for checks that can cost more than a few ms of CPU, so a request that
// needs one waits its turn instead of freezing the event loop for everyone (piscina). Bounded three
// ways, each answered 503 `overloaded` with Retry-After at once rather than queued: the checks held at
// once (running and waiting), the checks one owner (a client network, a caller) holds at once, and the
// time one check may run. A task is a named pure function of a module the pool loads in each thread.
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { AppError } from './errors';
import { httpShed, offloadTasks } from './metrics';
import { projectPath } from './paths';

export interface OffloadLimits {
  /** Worker threads. */
  threads: number;
  /** Checks held at once, running and waiting. */
  queue: number;
  /** Checks one owner holds at once. */
  perOwner: number;
  /** A check running longer than this is stopped. */
  timeoutMs: number;
}

/** What a task module's default export is called with in the thread. */
export interface OffloadTask {
  task: string;
  input: unknown;
}

const shed = httpShed.labels({ reason: 'verify_pool' });

function overloaded(detail: string): AppError {
  shed.inc();
  return new AppError(503, 'overloaded', detail, { headers: { 'Retry-After': '1' } });
}

/** A module written in TypeScript runs in the thread through tsx, as the process itself does. */
const bootstrap = projectPath('shared/platform/offload-bootstrap.mjs');

export class OffloadPool {
  private readonly pool: Piscina;
  private held = 0;
  private readonly byOwner = new Map<string, number>();

  constructor(
    tasks: URL,
    private readonly limits: OffloadLimits,
  ) {
    const typescript = tasks.pathname.endsWith('.ts');
    this.pool = new Piscina({
      filename: typescript ? bootstrap : fileURLToPath(tasks),
      workerData: typescript ? { entry: tasks.href } : undefined,
      minThreads: 0,
      maxThreads: Math.max(1, Math.min(limits.threads, availableParallelism())),
      // Threads end when idle, so a process that verified once holds none for the rest of its life.
      idleTimeout: 30_000,
      // The pool's own queue never fills: `held` refuses before it would.
      maxQueue: Math.max(1, limits.queue),
    });
  }

  /** Checks held now (running and waiting). */
  get size(): number {
    return this.held;
  }

  /**
   * Runs `task` in a thread for `owner`. Refused with 503 `overloaded` (nothing run) when the pool holds
   * its limit, or the owner its share; a check past the time limit is stopped and answered the same way.
   */
  async run<T>(task: string, input: unknown, owner: string): Promise<T> {
    const mine = this.byOwner.get(owner) ?? 0;
    if (this.held >= this.limits.queue)
      throw overloaded('The service is running all the checks it can at once; retry after 1 s.');
    if (mine >= this.limits.perOwner)
      throw overloaded(
        `At most ${this.limits.perOwner} of your checks run at once; retry when one has finished.`,
      );
    this.held++;
    this.byOwner.set(owner, mine + 1);
    const signal = AbortSignal.timeout(this.limits.timeoutMs);
    try {
      const result = (await this.pool.run({ task, input } satisfies OffloadTask, { signal })) as T;
      offloadTasks.inc({ task, outcome: 'done' });
      return result;
    } catch (err) {
      if (signal.aborted) {
        offloadTasks.inc({ task, outcome: 'timed_out' });
        throw overloaded(`The check ran past ${this.limits.timeoutMs} ms and was stopped; retry later.`);
      }
      offloadTasks.inc({ task, outcome: 'failed' });
      throw err;
    } finally {
      this.held--;
      const left = (this.byOwner.get(owner) ?? 1) - 1;
      if (left > 0) this.byOwner.set(owner, left);
      else this.byOwner.delete(owner);
    }
  }

  /** Ends every thread (and the curve threads a check started in it). */
  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
