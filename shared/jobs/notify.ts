// Job change hints: after a job's row changes, its id is published on Redis, and long polls and event
// streams in any web process wake up and re-read Postgres. Postgres stays the truth: a lost hint only
// delays a waiter until its next re-read (at most HINT_REREAD_MS), it never loses a state.
import { env } from '../platform/env';
import { logger } from '../platform/log';
import { createRedis, redisTarget } from '../platform/redis';
import type { RedisClient, RedisTarget } from '../platform/redis';

/** A waiter re-reads Postgres at least this often, hint or no hint. */
export const HINT_REREAD_MS = 2000;

export const jobEventsChannel = (prefix = env.QUEUE_PREFIX) => `${prefix}:job-events`;

let publisher: RedisClient | undefined;
/** Hints made before the publisher's first connection, sent once it is up; bounded, for a Redis that never comes. */
let beforeReady: Set<string> | undefined;
const MAX_BEFORE_READY = 10_000;

function publish(client: RedisClient, jobId: string): void {
  client.publish(jobEventsChannel(), jobId).catch((err: Error) => {
    logger.debug({ jobId, err: err.message }, 'job hint not published; waiters re-read on their own');
  });
}

/** Publishes that a job changed; fire and forget (the change is already committed). */
export function jobChanged(jobId: string): void {
  if (!publisher) {
    // Hints published in the same tick go out as one pipeline. Like every API-side client it fails
    // fast while Redis is away, but the first hints of a fresh process wait for its first connection.
    const client = createRedis('api', redisTarget(), { enableAutoPipelining: true });
    const waiting = new Set<string>();
    client.once('ready', () => {
      if (beforeReady === waiting) beforeReady = undefined;
      for (const id of waiting) publish(client, id);
    });
    publisher = client;
    beforeReady = waiting;
  }
  if (beforeReady) {
    if (beforeReady.size < MAX_BEFORE_READY) beforeReady.add(jobId);
    return;
  }
  publish(publisher, jobId);
}

export async function closeJobEvents(): Promise<void> {
  publisher?.disconnect();
  publisher = undefined;
  beforeReady = undefined;
}

type Waiter = () => void;

export class JobNotifier {
  private subscriber: RedisClient | undefined;
  private readonly waiters = new Map<string, Set<Waiter>>();

  constructor(
    private readonly target: RedisTarget = redisTarget(),
    private readonly channel = jobEventsChannel(),
  ) {}

  private subscribe(): void {
    if (this.subscriber) return;
    const sub = createRedis('worker', this.target);
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
