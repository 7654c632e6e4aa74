// jobEvents (the exchange table, not in the documents): a job's state changes as a server-sent event stream,
// from after Last-Event-ID, ending when the job ends. A stream that loses its source (a Postgres read fails,
// or this process cannot hear the job's hints) says so in an `error` event and ends; the client resumes with
// Last-Event-ID and gets the events it missed, each once.
import { z } from 'zod';
import { getJobFor } from '../../../shared/jobs/access';
import { followJob, streamInterrupted } from '../../../shared/jobs/follow';
import { jobIdSchema, terminalStatuses } from '../../../shared/jobs/jobs';
import { statusTitles, validationFailed } from '../../../shared/platform/errors';
import type { AppError } from '../../../shared/platform/errors';
import { jobAccess } from '../../http/auth';
import { closedSignal } from '../../http/closed';
import { origin } from '../../http/links';
import { toAppError } from '../../http/problem';
import type { RouteTable } from '../../http/route';

/** A quiet stream says a comment this often, so proxies do not take it for a dead one. */
const KEEP_ALIVE_MS = 15_000;
/** How long a client waits before it resumes a stream that ended with an error event. */
export const STREAM_RETRY_MS = 2_000;

/** An event id as this stream sends them: digits, 0 when absent. */
function lastEventId(header: string | undefined): number {
  if (header === undefined || header === '') return 0;
  if (!/^\d{1,15}$/.test(header)) {
    throw validationFailed([
      { path: 'headers.last-event-id', message: 'must be an event id of this stream' },
    ]);
  }
  return Number(header);
}

/**
 * What ended a stream mid-way, as a problem: anything that is not the client's own doing is
 * `stream_interrupted` (503).
 */
function interruption(err: unknown, log: { warn: (o: object, m: string) => void }): AppError {
  const app = toAppError(err);
  log.warn({ code: app.code, err: (err as Error)?.message }, 'job event stream interrupted');
  return app.status >= 500 ? streamInterrupted() : app;
}

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
    problems: { 400: ['validation_failed'], 404: ['not_found'] },
    handler: async ({ params, auth, req, res, deps }) => {
      const after = lastEventId(req.header('last-event-id'));
      const { id } = await getJobFor(deps.db, params.jobId, jobAccess(req, auth));
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
      let lastSent = after;
      try {
        for await (const { events, last } of steps) {
          if (Date.now() - lastWrite >= KEEP_ALIVE_MS) {
            res.write(': keep-alive\n\n');
            lastWrite = Date.now();
          }
          for (const e of events) {
            lastWrite = Date.now();
            lastSent = Number(e.id);
            res.write(
              `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify({ jobId: id, type: e.type, at: e.at, ...e.data, links: { job } })}\n\n`,
            );
          }
          if (last) break;
        }
      } catch (err) {
        // No id: the client's Last-Event-ID stays the last event it was sent.
        // The last event id sent is said too, for clients that resume by hand.
        const problem = interruption(err, req.log);
        const data = {
          type: `/problems/${problem.code}`,
          title: statusTitles[problem.status] ?? 'Error',
          status: problem.status,
          detail: problem.message,
          code: problem.code,
          instance: req.originalUrl,
          ...problem.extra,
          lastEventId: String(lastSent),
        };
        if (!res.writableEnded)
          res.write(`event: error\nretry: ${STREAM_RETRY_MS}\ndata: ${JSON.stringify(data)}\n\n`);
      }
      res.end();
      return undefined;
    },
  });
}
