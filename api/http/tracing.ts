// One server span per request when traces are on: the root of the trace that the request's queries, the
// job it queues and that job's processing join (shared/platform/tracing.ts).
import { SpanStatusCode, context } from '@opentelemetry/api';
import type { NextFunction, Request, Response } from 'express';
import { startServerSpan, tracingOn } from '../../shared/platform/tracing';
import { routeOf } from './route-label';

export function httpTracing() {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!tracingOn()) return next();
    const { span, ctx } = startServerSpan(req.method, { 'http.request.method': req.method });
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      // The route's pattern, never the path itself (ids, tokens in links); a sealed action (a ballot,
      // a bid) says nothing about where it went, as in the metrics.
      const route = res.locals.sealed ? undefined : routeOf(req, res);
      if (route) {
        span.setAttribute('http.route', route);
        span.updateName(`${req.method} ${route}`);
      }
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    res.once('finish', end);
    res.once('close', end);
    context.with(ctx, next);
  };
}
