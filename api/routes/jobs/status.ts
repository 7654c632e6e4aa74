// jobStatus (the exchange table): a job, to a caller it opens to; with `wait`, a long poll for its next
// change of state.
import { z } from 'zod';
import { getJobFor } from '../../../shared/jobs/access';
import { waitForJob } from '../../../shared/jobs/follow';
import { jobIdSchema, terminalStatuses } from '../../../shared/jobs/jobs';
import { jobPayment } from '../../../shared/payments/job-payment';
import { jobAccess } from '../../http/auth';
import { closedSignal } from '../../http/closed';
import { waitSeconds } from '../../http/route';
import type { RouteTable } from '../../http/route';
import { jobSchema, jobView } from '../../views/jobs';
import { origin } from '../../http/links';
import { jobPaymentSchema, withPaymentPart } from '../../views/payments';

export function jobStatusRoutes(table: RouteTable): RouteTable {
  return table.add({
    method: 'get',
    path: '/api/jobs/{jobId}',
    operationId: 'jobStatus',
    summary: 'A job: state, progress, result when done; `wait` long-polls for a change (at most 30 s)',
    description:
      'Needs the job’s access token from createJob (`Authorization: Bearer jt_…`), or the agent or license key that created it. Without one, every job answers 404, as one that does not exist.',
    tags: ['Agent exchange'],
    auth: 'job',
    params: z.strictObject({ jobId: jobIdSchema }),
    query: z.strictObject({
      wait: waitSeconds('Seconds to wait for the job to change state'),
    }),
    responses: {
      200: {
        description: 'The job',
        schema: z.object({ job: jobSchema, payment: jobPaymentSchema.optional() }),
      },
    },
    problems: { 404: ['not_found'] },
    handler: async ({ params, query, auth, req, res, deps }) => {
      const found = await getJobFor(deps.db, params.jobId, jobAccess(req, auth));
      // Wake on any change; answer once the state moved (progress alone keeps waiting) or has ended.
      const row =
        query.wait && !terminalStatuses.has(found.status)
          ? await waitForJob(deps, found, (r) => r.status !== found.status, {
              signal: closedSignal(res),
              deadline: Date.now() + query.wait * 1000,
            })
          : found;
      // Free jobs carry no price, so no quotes: skip the lookups on the hot path.
      const payment =
        row.price_usd_cents > 0 ? await jobPayment(deps.db, row, origin(req, deps, 'base')) : undefined;
      return {
        status: 200,
        headers: { 'Cache-Control': 'no-store' },
        body: withPaymentPart(jobView(row, req, deps), payment),
      };
    },
  });
}
