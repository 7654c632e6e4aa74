// The public shape of a job: state, progress, result or error, and links. Never the private input.
import type { Request } from 'express';
import { z } from 'zod';
import type { JobRow } from '../../shared/jobs/jobs';
import { jobStatuses } from '../../shared/jobs/jobs';
import type { AppDeps } from '../deps';
import { origin } from '../http/links';

export const jobSchema = z
  .object({
    id: z.string(),
    service: z.string(),
    status: z.enum(jobStatuses),
    progress: z.object({ percent: z.number().int(), stage: z.string().nullable() }),
    result: z.unknown().nullable(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    price: z.object({ usdCents: z.number().int() }),
    attempts: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
    queuedAt: z.string().nullable(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    expiresAt: z.string().nullable(),
    links: z.record(z.string(), z.string()),
  })
  .meta({ id: 'Job' });

export type JobView = z.infer<typeof jobSchema>;

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export function jobView(row: JobRow, req: Request, deps: AppDeps): JobView {
  const base = origin(req, deps, 'base');
  return {
    id: row.id,
    service: row.service_id,
    status: row.status,
    progress: { percent: row.progress, stage: row.progress_stage },
    result: row.result ?? null,
    error: row.error ?? null,
    price: { usdCents: row.price_usd_cents },
    attempts: row.attempts,
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
    queuedAt: iso(row.queued_at),
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    expiresAt: iso(row.expires_at),
    links: {
      self: `${base}/api/jobs/${row.id}`,
      events: `${base}/api/jobs/${row.id}/events`,
      ...(row.status === 'awaiting_payment' ? { payment: `${base}/api/jobs/${row.id}/payment` } : {}),
    },
  };
}
