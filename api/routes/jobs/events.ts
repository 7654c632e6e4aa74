// jobEvents (table A, not in the documents): a job's state changes as a server-sent event stream, from
// after Last-Event-ID, ending when the job ends.
import { z } from 'zod';
import { getJobFor } from '../../../shared/jobs/access';
import { followJob } from '../../../shared/jobs/follow';
import { jobIdSchema, terminalStatuses } from '../../../shared/jobs/jobs';
import { jobAccess } from '../../http/auth';
import { closedSignal } from '../../http/closed';
import { origin } from '../../http/links';
import type { RouteTable } from '../../http/route';

/** A quiet stream says a comment this often, so proxies do not take it for a dead one. */
const KEEP_ALIVE_MS = 15_000;

export function jobEventsRoutes(table: RouteTable): RouteTable {
  return table.add({
    method: 'get',
    path: '/api/jobs/{jobId}/events',
    operationId: 'jobEvents',
    summary: "A job's state changes as a server-sent event stream, ending when the job ends",
    tags: ['Agent exchange'],
    hidden: true,
    auth: 'job',
    params: z.strictObject({ jobId: jobIdSchema }),
    responses: { 200: { description: 'text/event-stream', contentType: 'text/event-stream' } },
    problems: { 404: ['not_found'] },
    handler: async ({ params, auth, req, res, deps }) => {
      const { id } = await getJobFor(deps.db, params.jobId, jobAccess(req, auth));
      const after = Number(req.header('last-event-id') ?? 0) || 0;
      res.writeHead(200, {
        'Content-Type': 'text/event-stream',
        'Cache-Control': 'no-store',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
      });
      const steps = followJob(deps, id, {
        after,
        signal: closedSignal(res),
        ended: (row) => terminalStatuses.has(row.status),
      });
      const job = `${origin(req, deps)}/api/jobs/${id}`;
      let lastWrite = Date.now();
      for await (const { events, last } of steps) {
        if (Date.now() - lastWrite > KEEP_ALIVE_MS) {
          res.write(': keep-alive\n\n');
          lastWrite = Date.now();
        }
        for (const e of events) {
          lastWrite = Date.now();
          res.write(
            `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify({ jobId: id, type: e.type, at: e.at, ...e.data, links: { job } })}\n\n`,
          );
        }
        if (last) break;
      }
      res.end();
      return undefined;
    },
  });
}
