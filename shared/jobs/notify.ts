// Job change hints: after a job's row changes, its id is published on Redis, and long polls and event
// streams in any web process wake up and re-read Postgres. Postgres stays the truth; the hints decide
// only when a waiter reads it. A waiter re-reads when a hint for its job arrives, when hints may have
// been missed (the subscription was (re)established: every waiter re-reads once), or when the safety
// check (one query every SAFETY_REREAD_MS for all of a process's waiters) finds its job changed, so an
// idle stream costs no query of its own. A subscription that stays down longer than
// SUBSCRIPTION_LOST_MS is said to its waiters ('lost'): a stream then ends with an error event rather
// than going quiet, and a long poll falls back to re-reading every FALLBACK_REREAD_MS.
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { logger } from '../platform/log';
import { createRedis, redisTarget } from '../platform/redis';
import type { RedisClient, RedisTarget } from '../platform/redis';

/**
 * How often a notifier checks, in one query for all its waiters, whether a job changed without a hint
 * reaching it, and wakes the waiters of those that did. What no resubscription reveals: a writer that
 * died between its commit and its publish, or a cluster's subscriber node switching unseen.
 */
export const SAFETY_REREAD_MS = 60_000;
/** How long a subscription may be down before its waiters are told it is lost. */
export const SUBSCRIPTION_LOST_MS = 5_000;
/** How often a waiter that cannot be woken (subscription lost) re-reads instead, where it goes on. */
export const FALLBACK_REREAD_MS = 2_000;

export const jobEventsChannel = (prefix = env.QUEUE_PREFIX) => `${prefix}:job-events`;

let publisher: RedisClient | undefined;
/**
 * Hints not yet sent: made before the publisher's first connection, or refused while Redis was away;
 * sent once it is (back) up, so a waiter whose web process never lost Redis still hears of them.
 * Bounded, for a Redis that never comes.
 */
let unsent = new Set<string>();
const MAX_UNSENT = 10_000;

function keep(jobId: string): void {
  if (unsent.size < MAX_UNSENT) unsent.add(jobId);
}

function flush(client: RedisClient): void {
  if (client !== publisher || client.status !== 'ready' || unsent.size === 0) return;
  const ids = unsent;
  unsent = new Set();
  for (const id of ids) publish(client, id);
}

function publish(client: RedisClient, jobId: string): void {
  client.publish(jobEventsChannel(), jobId).catch((err: Error) => {
    logger.debug({ jobId, err: err.message }, 'job hint not published; sent again once Redis is back');
    if (client !== publisher) return;
    keep(jobId);
    // Refused in a blip that is already over (no 'ready' to come): send it now.
    if (client.status === 'ready') setImmediate(() => flush(client));
  });
}

/**
 * Publishes that a job changed; fire and forget (the change is already committed). A proof's end is
 * published the same way, by its id: ids of every kind are distinct, so one channel serves both.
 */
export function jobChanged(jobId: string): void {
  if (!publisher) {
    // Hints published in the same tick go out as one pipeline. Like every API-side client it fails
    // fast while Redis is away; what it could not send goes out at its next connection.
    const client = createRedis('api', redisTarget(), { enableAutoPipelining: true });
    client.on('ready', () => flush(client));
    publisher = client;
  }
  if (publisher.status !== 'ready') {
    keep(jobId);
    return;
  }
  publish(publisher, jobId);
}

export async function closeJobEvents(): Promise<void> {
  publisher?.disconnect();
  publisher = undefined;
  unsent = new Set();
}

/** Why a wait ended: a hint (or a resubscription), the timeout, or a subscription that is gone. */
export type Wake = 'changed' | 'timeout' | 'lost';
type Waiter = (how: Wake) => void;

/** The row a waiter last read: the safety check wakes it when the job's row is newer. */
export interface Seen {
  db: Db;
  updatedAt: Date;
}

export class JobNotifier {
  private subscriber: RedisClient | undefined;
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** Subscribed and connected: every hint published from now on reaches this process. */
  private listening = false;
  /** Since when the subscription has been down (or not yet up). */
  private downSince = Date.now();
  private lostTimer: NodeJS.Timeout | undefined;
  /** What each waiter that said so last read, for the safety check. */
  private readonly seen = new Map<Waiter, { jobId: string } & Seen>();
  private safetyTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly target: RedisTarget = redisTarget(),
    private readonly channel = jobEventsChannel(),
    private readonly safetyMs = SAFETY_REREAD_MS,
  ) {}

  /** Subscribed and connected now: every hint published from now on reaches this process. */
  get healthy(): boolean {
    return this.listening;
  }

  private subscribe(): void {
    if (this.subscriber) return;
    this.downSince = Date.now();
    this.armLost();
    if ('cluster' in this.target) {
      // A cluster's subscriber node is ioredis's own (it resubscribes on another node when one goes):
      // the cluster's ready is when this process listens, and a switch of nodes is not surfaced, which
      // SAFETY_REREAD_MS covers.
      const sub = createRedis('worker', this.target);
      sub.on('message', (_channel: string, jobId: string) => this.wake(jobId, 'changed'));
      sub.on('ready', () => this.listen(sub));
      this.subscriber = sub;
      return;
    }
    // One node: subscribed by hand at every connection, and waiters woken only once Redis confirmed
    // it, so a change is either before their re-read or its hint reaches them.
    const sub = createRedis('worker', this.target, { autoResubscribe: false });
    sub.on('message', (_channel: string, jobId: string) => this.wake(jobId, 'changed'));
    sub.on('ready', () => this.listen(sub));
    sub.on('close', () => {
      if (!this.listening || sub !== this.subscriber) return;
      this.listening = false;
      this.downSince = Date.now();
      this.armLost();
    });
    this.subscriber = sub;
  }

  private listen(sub: RedisClient): void {
    sub.subscribe(this.channel).then(
      () => {
        if (sub !== this.subscriber) return;
        this.listening = true;
        clearTimeout(this.lostTimer);
        this.lostTimer = undefined;
        // Hints published while this process did not listen are gone: every waiter re-reads once.
        for (const id of [...this.waiters.keys()]) this.wake(id, 'changed');
      },
      () => undefined, // the connection went again; its next ready subscribes again
    );
  }

  /** Tells every waiter the subscription is lost once it has been down SUBSCRIPTION_LOST_MS. */
  private armLost(): void {
    if (this.lostTimer) return;
    this.lostTimer = setTimeout(
      () => {
        this.lostTimer = undefined;
        if (this.listening || !this.subscriber) return;
        logger.warn('job hints are not heard (Redis subscription down); streams end, long polls re-read');
        for (const id of [...this.waiters.keys()]) this.wake(id, 'lost');
      },
      Math.max(0, this.downSince + SUBSCRIPTION_LOST_MS - Date.now()),
    );
    this.lostTimer.unref();
  }

  /** One query for every waiter's job: wakes the waiters whose job changed since they read it. */
  private async safetyCheck(): Promise<void> {
    if (this.seen.size === 0) return;
    const entries = [...this.seen];
    const db = entries.at(-1)![1].db;
    const ids = [...new Set(entries.map(([, s]) => s.jobId))];
    let current: Map<string, number>;
    try {
      const rows = (await db('jobs').select('id', 'updated_at').whereIn('id', ids)) as Array<{
        id: string;
        updated_at: Date;
      }>;
      current = new Map(rows.map((r) => [r.id, new Date(r.updated_at).getTime()]));
    } catch (err) {
      // Postgres is away: a waiter's own read says so when it next reads.
      logger.debug({ err: (err as Error).message }, 'job safety check failed');
      return;
    }
    for (const [waiter, s] of entries) {
      if (current.get(s.jobId) !== s.updatedAt.getTime() && this.seen.has(waiter)) waiter('changed');
    }
  }

  private wake(jobId: string, how: Wake) {
    const set = this.waiters.get(jobId);
    if (!set) return;
    this.waiters.delete(jobId);
    for (const w of set) w(how);
  }

  /**
   * Resolves on the next hint for the job, a resubscription, or the safety check finding the job
   * newer than `seen` ('changed'); with 'timeout' after timeoutMs (SAFETY_REREAD_MS at most for a
   * waiter that does not say what it saw) or when the signal aborts; or with 'lost' once the
   * subscription has been down SUBSCRIPTION_LOST_MS (at once when it already has).
   */
  async next(jobId: string, timeoutMs: number, signal?: AbortSignal, seen?: Seen): Promise<Wake> {
    this.subscribe();
    if (seen && !this.safetyTimer) {
      this.safetyTimer = setInterval(() => void this.safetyCheck(), this.safetyMs);
      this.safetyTimer.unref();
    }
    if (signal?.aborted) return 'timeout';
    if (!this.listening && Date.now() - this.downSince >= SUBSCRIPTION_LOST_MS) return 'lost';
    return new Promise((resolve) => {
      let set = this.waiters.get(jobId);
      if (!set) this.waiters.set(jobId, (set = new Set()));
      const done = (how: Wake) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        set!.delete(waiter);
        this.seen.delete(waiter);
        if (set!.size === 0 && this.waiters.get(jobId) === set) this.waiters.delete(jobId);
        resolve(how);
      };
      const waiter: Waiter = (how) => done(how);
      const onAbort = () => done('timeout');
      const cap = seen ? timeoutMs : Math.min(timeoutMs, this.safetyMs);
      const timer = setTimeout(() => done('timeout'), Math.max(0, Math.min(cap, 2 ** 31 - 1)));
      signal?.addEventListener('abort', onAbort, { once: true });
      set.add(waiter);
      if (seen) this.seen.set(waiter, { jobId, ...seen });
    });
  }

  async close(): Promise<void> {
    clearInterval(this.safetyTimer);
    this.safetyTimer = undefined;
    clearTimeout(this.lostTimer);
    this.lostTimer = undefined;
    const sub = this.subscriber;
    this.subscriber = undefined;
    this.listening = false;
    for (const id of [...this.waiters.keys()]) this.wake(id, 'timeout');
    sub?.disconnect();
  }
}
