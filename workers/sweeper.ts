// The outbox sweeper: Postgres is the truth, so rows whose BullMQ job is missing (Redis was down at
// enqueue, or flushed) are enqueued again; jobs stuck past their timeout are ended as failed.
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { Db } from '../shared/platform/db/knex';
import { env } from '../shared/platform/env';
import { failJob } from '../shared/jobs/jobs';
import { isOutageReason } from '../shared/platform/errors';
import { logger, roundLog } from '../shared/platform/log';
import { expireCheckouts } from '../shared/licensing/verify';
import { expireGateRequests } from '../shared/payments/gate';
import { expireUnpaidJobs } from '../shared/payments/expiry';
import { recoverX402Settlements } from '../shared/payments/x402/recover';
import type { Payload, QueueName, Queues } from '../shared/platform/queues';
import type { RedisClient } from '../shared/platform/redis';

/** A table whose rows are the outbox of a queue; each queue's processor module exports its own. */
export interface SweepTarget<Q extends QueueName = QueueName> {
  queue: Q;
  table: string;
  /** Rows in these states should have a live BullMQ job. */
  statuses: string[];
  payload(row: { id: string } & Record<string, unknown>): Payload<Q>;
  /** Called when BullMQ gave up on the row's job but the row was never marked (Postgres was down then). */
  markFailed(db: Db, id: string, reason: string): Promise<unknown>;
}

export interface SweepReport {
  requeued: number;
  markedFailed: number;
  timedOut: number;
  /** Unpaid jobs, checkouts and payment-gate requests whose window ran out. */
  expired: number;
  idempotencyPurged: number;
  /** x402 settlements whose outcome the request never saw, now paid or failed. */
  x402Recovered: number;
}

export interface SweeperOptions {
  intervalMs: number;
  graceMs: number;
  /** Rows read, checked and enqueued per round trip (one query, one pipeline, one addBulk). */
  batchSize?: number;
}

/** What the sweeper found of a row's BullMQ job. */
type JobPresence = 'live' | 'missing' | 'failed' | 'completed';

export class Sweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private readonly rounds = roundLog('sweep');
  /** Redis answered again while a sweep ran: another follows at once. */
  private again = false;
  private readonly token = randomUUID();
  private readonly connections: RedisClient[];

  constructor(
    private readonly db: Db,
    private readonly queues: Queues,
    private readonly lockRedis: RedisClient,
    /** The outbox tables to sweep: each process names its own (workers/main.ts). */
    private readonly targets: readonly SweepTarget[],
    private readonly opts: SweeperOptions = {
      intervalMs: env.SWEEP_INTERVAL_MS,
      graceMs: env.SWEEP_GRACE_MS,
    },
  ) {
    this.connections = [...new Set([lockRedis, queues.connection])];
  }

  start(): void {
    this.timer = setTimeout(() => void this.tick(false), this.opts.intervalMs);
    // Rows stranded while Redis was down are enqueued the moment it answers, not at the next tick.
    for (const c of this.connections) c.on('ready', this.onReady);
  }

  private readonly onReady = () => this.kick();

  /** A sweep now (after the one running, if any), then the usual period. */
  kick(): void {
    if (!this.timer) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(true), 0);
  }

  private async tick(force: boolean): Promise<void> {
    this.running = this.sweepWithLock(force).then(
      () => this.rounds.succeeded(),
      (err: Error) => this.rounds.failed(err),
    );
    await this.running;
    this.running = undefined;
    if (!this.timer) return;
    const again = this.again;
    this.again = false;
    this.timer = again
      ? setTimeout(() => void this.tick(true), 0)
      : setTimeout(() => void this.tick(false), this.opts.intervalMs);
  }

  async stop(): Promise<void> {
    for (const c of this.connections) c.off('ready', this.onReady);
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /**
   * One sweep, by one process at a time across the deployment: the lock lasts a period. `force` (Redis
   * answered again) sweeps at once when this sweeper holds the lock itself.
   */
  async sweepWithLock(force = false): Promise<SweepReport | null> {
    const key = `${this.queues.prefix}:sweeper:lock`;
    const ttl = Math.max(1000, this.opts.intervalMs - 100);
    const got = await this.lockRedis.set(key, this.token, 'PX', ttl, 'NX');
    if (got !== 'OK') {
      if (!force || (await this.lockRedis.get(key)) !== this.token) return null;
      await this.lockRedis.set(key, this.token, 'PX', ttl);
    }
    return this.sweep();
  }

  async sweep(): Promise<SweepReport> {
    const report: SweepReport = {
      requeued: 0,
      markedFailed: 0,
      timedOut: 0,
      expired: 0,
      idempotencyPurged: 0,
      x402Recovered: 0,
    };
    for (const target of this.targets) await this.sweepTarget(target, report);
    report.timedOut = await this.timeOutStuckJobs();
    report.expired =
      (await expireUnpaidJobs(this.db)) +
      (await expireCheckouts(this.db)) +
      (await expireGateRequests(this.db));
    const recovered = await recoverX402Settlements(this.db, this.queues);
    report.x402Recovered = recovered.paid + recovered.failed;
    report.idempotencyPurged = await this.db('idempotency_keys')
      .where('created_at', '<', new Date(Date.now() - 24 * 3600 * 1000))
      .delete();
    if (report.requeued || report.markedFailed || report.timedOut || report.expired || report.x402Recovered)
      logger.info(report, 'sweep');
    return report;
  }

  /**
   * Every open row of the target without a live job, enqueued again, until none is left: per batch one
   * query (by id, after the last batch), one pipeline asking Redis for each row's job, one addBulk.
   */
  private async sweepTarget(target: SweepTarget, report: SweepReport): Promise<void> {
    const batchSize = this.opts.batchSize ?? 1000;
    const cutoff = new Date(Date.now() - this.opts.graceMs);
    const queue = this.queues.get(target.queue);
    let after = '';
    for (;;) {
      const rows = (await this.db(target.table)
        .select('*')
        .whereIn('status', target.statuses)
        .andWhere('updated_at', '<', cutoff)
        .andWhere('id', '>', after)
        .orderBy('id')
        .limit(batchSize)) as Array<{ id: string; status: string } & Record<string, unknown>>;
      if (rows.length === 0) return;
      after = rows[rows.length - 1]!.id;
      const presence = await this.jobPresence(
        queue,
        rows.map((r) => r.id),
      );
      const missing: typeof rows = [];
      for (const [i, row] of rows.entries()) {
        const found = presence[i];
        if (found === 'missing') missing.push(row);
        else if (found === 'failed' || found === 'completed') {
          const job = await queue.getJob(row.id);
          const reason = job?.failedReason ?? '';
          if (found === 'failed' && job && !isOutageReason(reason)) {
            if (await target.markFailed(this.db, row.id, reason || 'failed after all attempts'))
              report.markedFailed++;
            continue;
          }
          // Failed by an outage of ours, not by the job: it runs again (an outage never fails a job).
          // A completed job whose row is still open means the row write was lost: it runs again too.
          await job?.remove().catch(() => undefined);
          missing.push(row);
        }
      }
      await this.queues.enqueueMany(
        target.queue,
        missing.map((row) => target.payload(row)),
        10_000,
      );
      report.requeued += missing.length;
      if (rows.length < batchSize) return;
    }
  }

  /** Where each id's job stands, in one round trip. */
  private async jobPresence(queue: Queue, ids: string[]): Promise<JobPresence[]> {
    const pipeline = this.queues.connection.pipeline();
    for (const id of ids) {
      pipeline.exists(queue.toKey(id));
      pipeline.zscore(queue.keys.failed!, id);
      pipeline.zscore(queue.keys.completed!, id);
    }
    const answers = (await pipeline.exec()) ?? [];
    return ids.map((_, i) => {
      const [exists, failed, completed] = [0, 1, 2].map((k) => {
        const [err, value] = answers[3 * i + k] ?? [new Error('no answer'), null];
        if (err) throw err;
        return value;
      });
      if (exists === 0) return 'missing';
      if (failed !== null) return 'failed';
      if (completed !== null) return 'completed';
      return 'live';
    });
  }

  private async timeOutStuckJobs(): Promise<number> {
    const stuck = (await this.db('jobs')
      .select('id')
      .where('status', 'running')
      .andWhere('started_at', '<', new Date(Date.now() - env.JOB_TIMEOUT_MS))
      .limit(500)) as Array<{ id: string }>;
    let n = 0;
    for (const { id } of stuck) {
      const ended = await failJob(
        this.db,
        id,
        'timeout',
        `The job ran longer than ${Math.round(env.JOB_TIMEOUT_MS / 1000)} s.`,
      );
      if (ended) {
        n++;
        await this.queues
          .get('jobs')
          .remove(id)
          .catch(() => undefined);
      }
    }
    return n;
  }
}
