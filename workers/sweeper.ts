// The outbox sweeper: Postgres is the truth, so rows whose BullMQ job is missing (Redis was down at
// enqueue, or flushed) are enqueued again; jobs stuck past their timeout are ended as failed.
import type { Db } from '../shared/platform/db/knex';
import { env } from '../shared/platform/env';
import { failJob } from '../shared/jobs/jobs';
import { isOutageReason } from '../shared/platform/errors';
import { logger } from '../shared/platform/log';
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

export class Sweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly db: Db,
    private readonly queues: Queues,
    private readonly lockRedis: RedisClient,
    /** The outbox tables to sweep: each process names its own (workers/main.ts). */
    private readonly targets: readonly SweepTarget[],
    private readonly opts = { intervalMs: env.SWEEP_INTERVAL_MS, graceMs: env.SWEEP_GRACE_MS },
  ) {}

  start(): void {
    const tick = async () => {
      this.running = this.sweepWithLock().catch((err: Error) =>
        logger.warn({ err: err.message }, 'sweep failed'),
      );
      await this.running;
      if (this.timer) this.timer = setTimeout(tick, this.opts.intervalMs);
    };
    this.timer = setTimeout(tick, this.opts.intervalMs);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One sweep, by one process at a time across the deployment. */
  async sweepWithLock(): Promise<SweepReport | null> {
    const key = `${this.queues.prefix}:sweeper:lock`;
    const got = await this.lockRedis.set(
      key,
      String(process.pid),
      'PX',
      Math.max(1000, this.opts.intervalMs - 100),
      'NX',
    );
    if (got !== 'OK') return null;
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
    for (const target of this.targets) {
      const rows = (await this.db(target.table)
        .select('*')
        .whereIn('status', target.statuses)
        .andWhere('updated_at', '<', new Date(Date.now() - this.opts.graceMs))
        .orderBy('updated_at')
        .limit(500)) as Array<{ id: string; status: string } & Record<string, unknown>>;
      const queue = this.queues.get(target.queue);
      for (const row of rows) {
        const job = await queue.getJob(row.id);
        const state = job ? await job.getState() : 'missing';
        if (state === 'failed' && job && !isOutageReason(job.failedReason ?? '')) {
          if (await target.markFailed(this.db, row.id, job.failedReason || 'failed after all attempts'))
            report.markedFailed++;
        } else if (state === 'failed' && job) {
          // Failed by an outage of ours, not by the job: it runs again (an outage never fails a job).
          await job.remove().catch(() => undefined);
          await this.queues.enqueue(target.queue, target.payload(row));
          report.requeued++;
        } else if (state === 'missing' || state === 'unknown' || state === 'completed') {
          // A completed job whose row is still open means the row write was lost: run it again (idempotent).
          if (job && state === 'completed') await job.remove().catch(() => undefined);
          await this.queues.enqueue(target.queue, target.payload(row));
          report.requeued++;
        }
      }
    }
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
