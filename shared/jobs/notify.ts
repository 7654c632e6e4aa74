// Job change hints: after a job's row changes, its id is published on Redis, and long polls and event
// streams in any web process wake up and re-read Postgres. Postgres stays the truth: a lost hint only
// delays a waiter until its next re-read (at most HINT_REREAD_MS), it never loses a state.
import type { Redis } from 'ioredis';
import { env } from '../env';
import { logger } from '../log';
import { createRedis, redisUrl } from '../redis';

/** A waiter re-reads Postgres at least this often, hint or no hint. */
export const HINT_REREAD_MS = 2000;

export const jobEventsChannel = (prefix = env.QUEUE_PREFIX) => `${prefix}:job-events`;

let publisher: Redis | undefined;

/** Publishes that a job changed; fire and forget (the change is already committed). */
export function jobChanged(jobId: string): void {
  // Hints published in the same tick go out as one pipeline.
  publisher ??= createRedis('api', redisUrl(), { enableAutoPipelining: true });
  publisher.publish(jobEventsChannel(), jobId).catch((err: Error) => {
    logger.debug({ jobId, err: err.message }, 'job hint not published; waiters re-read on their own');
  });
}

export async function closeJobEvents(): Promise<void> {
  publisher?.disconnect();
  publisher = undefined;
}

type Waiter = () => void;

export class JobNotifier {
  private subscriber: Redis | undefined;
  private readonly waiters = new Map<string, Set<Waiter>>();

  constructor(
    private readonly url = redisUrl(),
    private readonly channel = jobEventsChannel(),
  ) {}

  private subscribe(): void {
    if (this.subscriber) return;
    const sub = createRedis('worker', this.url);
    sub.on('message', (_channel: string, jobId: string) => this.wake(jobId));
    // After a reconnect anything could have changed: wake every waiter to re-read.
    sub.on('ready', () => {
      for (const id of [...this.waiters.keys()]) this.wake(id);
    });
    sub.subscribe(this.channel).catch(() => undefined);
    this.subscriber = sub;
  }

  private wake(jobId: string) {
    const set = this.waiters.get(jobId);
    if (!set) return;
    this.waiters.delete(jobId);
    for (const w of set) w();
  }

  /**
   * Resolves on the next hint for the job ('changed'), or with 'timeout' after timeoutMs, after
   * HINT_REREAD_MS at the latest, or when the signal aborts. Callers re-read the row either way.
   */
  async next(jobId: string, timeoutMs: number, signal?: AbortSignal): Promise<'changed' | 'timeout'> {
    this.subscribe();
    return new Promise((resolve) => {
      let set = this.waiters.get(jobId);
      if (!set) this.waiters.set(jobId, (set = new Set()));
      const done = (how: 'changed' | 'timeout') => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        set!.delete(waiter);
        if (set!.size === 0 && this.waiters.get(jobId) === set) this.waiters.delete(jobId);
        resolve(how);
      };
      const waiter = () => done('changed');
      const onAbort = () => done('timeout');
      const timer = setTimeout(() => done('timeout'), Math.max(0, Math.min(timeoutMs, HINT_REREAD_MS)));
      signal?.addEventListener('abort', onAbort, { once: true });
      set.add(waiter);
    });
  }

  async close(): Promise<void> {
    for (const id of [...this.waiters.keys()]) this.wake(id);
    this.subscriber?.disconnect();
    this.subscriber = undefined;
  }
}
