// The typed job catalog: for each queue its name, payload schema and default options, side by side.
// The BullMQ job id is always the Postgres row id, so enqueueing the same row twice is harmless.
import { Queue } from 'bullmq';
import type { JobsOptions } from 'bullmq';
import { z } from 'zod';
import { env } from './env';
import type { RedisClient } from './redis';
import { queueTelemetry } from './tracing';

const rowId = z
  .string()
  .min(3)
  .max(64)
  .regex(/^[a-z]+_[0-9a-z]+$/);

/** The service a job runs: public (the catalog's id), so Bull Board can say what each job is. */
const serviceId = z.string().min(1).max(100);

export const queueCatalog = {
  // `service` is optional so a job queued before it was carried still runs; the row says the same.
  jobs: {
    payload: z.strictObject({ jobId: rowId, service: serviceId.optional() }),
    rowId: (p: { jobId: string }) => p.jobId,
  },
  payments: {
    payload: z.strictObject({ paymentId: rowId }),
    rowId: (p: { paymentId: string }) => p.paymentId,
  },
  checkouts: {
    payload: z.strictObject({ checkoutId: rowId }),
    rowId: (p: { checkoutId: string }) => p.checkoutId,
  },
  proofs: {
    payload: z.strictObject({ proofId: rowId, kind: z.string().min(1).max(64) }),
    rowId: (p: { proofId: string }) => p.proofId,
  },
  deliveries: {
    payload: z.strictObject({ requestId: rowId }),
    rowId: (p: { requestId: string }) => p.requestId,
  },
} as const;

export type QueueName = keyof typeof queueCatalog;
export type Payload<Q extends QueueName> = z.infer<(typeof queueCatalog)[Q]['payload']>;
export const queueNames = Object.keys(queueCatalog) as QueueName[];

/**
 * A job's name on Bull Board: the service it runs, the kind of proof it makes, else its queue. Never a
 * secret or a private input: a payload holds only ids and these public names.
 */
export function jobName<Q extends QueueName>(name: Q, data: Payload<Q>): string {
  const d = data as { service?: string; kind?: string };
  return d.service ?? d.kind ?? name;
}

export function defaultJobOptions(): JobsOptions {
  return {
    attempts: env.JOB_ATTEMPTS,
    backoff: { type: 'exponential', delay: env.JOB_BACKOFF_MS },
    // Postgres keeps the truth; Redis keeps only a bounded tail for Bull Board.
    removeOnComplete: { count: env.KEEP_COMPLETED_JOBS },
    removeOnFail: { count: env.KEEP_FAILED_JOBS },
  };
}

/** Validates a payload at either end: before queue.add, and again at the top of the processor. */
export function parsePayload<Q extends QueueName>(name: Q, data: unknown): Payload<Q> {
  return queueCatalog[name].payload.parse(data) as Payload<Q>;
}

export class Queues {
  private readonly queues = new Map<QueueName, Queue>();

  constructor(
    readonly connection: RedisClient,
    readonly prefix = env.QUEUE_PREFIX,
  ) {}

  get<Q extends QueueName>(name: Q): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      const telemetry = queueTelemetry();
      queue = new Queue(name, {
        connection: this.connection,
        prefix: this.prefix,
        defaultJobOptions: defaultJobOptions(),
        // With traces on, each job carries the trace context of the request that queued it.
        ...(telemetry ? { telemetry } : {}),
      });
      queue.on('error', () => undefined); // surfaced through add() failures and readiness
      this.queues.set(name, queue);
    }
    return queue;
  }

  all(): Queue[] {
    return queueNames.map((n) => this.get(n));
  }

  /** Adds the row's job; the row id is the job id. Rejects if Redis does not take it within timeoutMs. */
  async enqueue<Q extends QueueName>(
    name: Q,
    payload: Payload<Q>,
    opts: JobsOptions = {},
    timeoutMs = 1500,
  ): Promise<void> {
    const data = parsePayload(name, payload);
    const jobId = (queueCatalog[name].rowId as (p: Payload<Q>) => string)(data);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.get(name).add(jobName(name, data), data, { ...opts, jobId }),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`enqueue to ${name} timed out`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Adds many rows' jobs in one round trip (addBulk); same rules as enqueue. */
  async enqueueMany<Q extends QueueName>(name: Q, payloads: Payload<Q>[], timeoutMs = 1500): Promise<void> {
    if (payloads.length === 0) return;
    const rowId = queueCatalog[name].rowId as (p: Payload<Q>) => string;
    const jobs = payloads.map((p) => {
      const data = parsePayload(name, p);
      return { name: jobName(name, data), data, opts: { ...defaultJobOptions(), jobId: rowId(data) } };
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.get(name).addBulk(jobs),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`enqueue to ${name} timed out`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}
