// Errors to RFC 9457 problem details: stable codes, never a stack trace, 4xx for anything the client sent.
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { ZodError } from 'zod';
import { AppError, isUnavailableError, statusTitles } from '../../shared/platform/errors';
import { logger } from '../../shared/platform/log';
import { noteUnavailable } from './request-log';

export function sendProblem(res: Response, err: AppError, instance?: string): void {
  const status = err.status;
  for (const [k, v] of Object.entries(err.headers ?? {})) res.setHeader(k, v);
  res
    .status(status)
    .type('application/problem+json')
    .send(
      JSON.stringify({
        type: `/problems/${err.code}`,
        title: statusTitles[status] ?? 'Error',
        status,
        detail: err.message,
        code: err.code,
        ...(instance ? { instance } : {}),
        ...(err.errors ? { errors: err.errors } : {}),
        ...(err.extra ?? {}),
      }),
    );
}

/** Maps anything thrown to an AppError: client mistakes to 4xx, unreachable stores to 503, the rest to 500. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof ZodError) {
    return new AppError(400, 'validation_failed', 'The request is not valid.', {
      errors: err.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
    });
  }
  const e = err as { type?: string; status?: number; statusCode?: number; message?: string };
  // body-parser errors carry a type and a 4xx status.
  switch (e?.type) {
    case 'entity.too.large':
      return new AppError(413, 'payload_too_large', 'The request body is larger than the limit.');
    case 'entity.parse.failed':
      return new AppError(400, 'malformed_json', 'The request body is not valid JSON.');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError(415, 'unsupported_media_type', 'The request body encoding is not supported.');
    // stream.not.readable: a request the server gave up on before its body arrived (api/http/overload.ts).
    case 'request.aborted':
    case 'stream.not.readable':
      return new AppError(400, 'request_aborted', 'The request was aborted by the client.');
    default:
      break;
  }
  if (isUnavailableError(err)) {
    return new AppError(503, 'service_unavailable', 'A backing service is unavailable; try again shortly.', {
      headers: { 'Retry-After': '5' },
    });
  }
  const status = e?.status ?? e?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new AppError(status, 'bad_request', 'The request could not be processed.');
  }
  return new AppError(500, 'internal_error', 'An unexpected error occurred. It has been logged.');
}

export const errorMiddleware: ErrorRequestHandler = (err, req, res, _next) => {
  const appError = toAppError(err);
  if (appError.status >= 500 && appError.code === 'internal_error') {
    (req.log ?? logger).error({ err }, 'unhandled error');
  } else if (appError.status === 503) {
    // Expected while a backing service is down: the request log writes one line per outage.
    noteUnavailable(res, appError.code, (err as Error)?.message);
  } else if (appError.status >= 500) {
    (req.log ?? logger).warn({ code: appError.code, err: (err as Error)?.message }, 'request failed');
  }
  if (res.headersSent) {
    res.end();
    return;
  }
  sendProblem(res, appError, req.originalUrl);
};

export const notFoundMiddleware: RequestHandler = (req, _res, next) => {
  next(new AppError(404, 'not_found', `No route ${req.method} ${req.path}.`));
};
