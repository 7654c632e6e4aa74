// Job change notifications: one LISTEN connection per process wakes long-polls and event streams.
import pg from 'pg';
import { logger } from '../log';

type Waiter = () => void;

export class JobNotifier {
  private client: pg.Client | undefined;
  private readonly waiters = new Map<string, Set<Waiter>>();
  private connecting: Promise<void> | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly url: string) {}

  private connect(): Promise<void> {
    if (this.client || this.closed) return Promise.resolve();
    this.connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 3000 });
      client.on('notification', (msg) => {
        if (msg.payload) this.wake(msg.payload);
      });
      client.on('error', () => this.drop(client));
      client.on('end', () => this.drop(client));
      try {
        await client.connect();
        await client.query('listen job_events');
        this.client = client;
      } catch (err) {
        logger.debug(
          { err: (err as Error).message },
          'job notifier could not connect; waits fall back to timeouts',
        );
        await client.end().catch(() => undefined);
        this.scheduleReconnect();
      } finally {
        this.connecting = undefined;
      }
    })();
    return this.connecting;
  }

  private drop(client: pg.Client) {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    // Anything could have changed while we were deaf: wake every waiter to re-read.
    for (const id of [...this.waiters.keys()]) this.wake(id);
    this.scheduleReconnect();
  }

  private scheduleReconnect() {
    if (this.closed || this.retryTimer || this.waiters.size === 0) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, 1000);
    this.retryTimer.unref();
  }

  private wake(jobId: string) {
    const set = this.waiters.get(jobId);
    if (!set) return;
    this.waiters.delete(jobId);
    for (const w of set) w();
  }

  /** Resolves on the next change to the job, or after timeoutMs, or when the signal aborts. */
  async next(jobId: string, timeoutMs: number, signal?: AbortSignal): Promise<'changed' | 'timeout'> {
    await this.connect();
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
      const timer = setTimeout(() => done('timeout'), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      set.add(waiter);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    for (const id of [...this.waiters.keys()]) this.wake(id);
    await this.client?.end().catch(() => undefined);
    this.client = undefined;
  }
}
