// The error taxonomy: every failure a client can see is an AppError with a stable machine code,
// rendered as RFC 9457 problem details by the API's error middleware.

export interface FieldError {
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string> | undefined;
  /** Extra members merged into the problem document (never secrets). */
  readonly extra: Record<string, unknown> | undefined;

  constructor(
    status: number,
    code: string,
    detail: string,
    options: {
      errors?: FieldError[];
      headers?: Record<string, string>;
      extra?: Record<string, unknown>;
    } = {},
  ) {
    super(detail);
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.errors = options.errors;
    this.headers = options.headers;
    this.extra = options.extra;
  }
}

export const badRequest = (code: string, detail: string, errors?: FieldError[]) =>
  new AppError(400, code, detail, errors ? { errors } : {});
export const validationFailed = (errors: FieldError[], detail = 'The request is not valid.') =>
  new AppError(400, 'validation_failed', detail, { errors });
export const unauthorized = (detail = 'Authentication is required.', headers?: Record<string, string>) =>
  new AppError(401, 'unauthorized', detail, headers ? { headers } : {});
export const forbidden = (detail: string) => new AppError(403, 'forbidden', detail);
export const notFound = (what: string) => new AppError(404, 'not_found', `${what} was not found.`);
export const conflict = (code: string, detail: string, extra?: Record<string, unknown>) =>
  new AppError(409, code, detail, extra ? { extra } : {});
export const unprocessable = (code: string, detail: string, extra?: Record<string, unknown>) =>
  new AppError(422, code, detail, extra ? { extra } : {});
export const serviceUnavailable = (detail: string) => new AppError(503, 'service_unavailable', detail);

/** Titles for the problem documents, by status. */
export const statusTitles: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

const unavailableCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
  '08000',
  '08001',
  '08003',
  '08006',
]);

/**
 * A failure of a third party a job talks to (a webhook target, a chain node, a settler): it spends the
 * job's attempt even when its message reads like an outage, since it is no outage of ours.
 */
export class ExternalFailure extends Error {}

/**
 * True when our own infrastructure (Postgres, Redis) is unreachable: the job that met it waits for it
 * without spending an attempt (workers/pool.ts).
 */
export function isOutageOfOurs(err: unknown): boolean {
  return isUnavailableError(err) && !(err instanceof ExternalFailure);
}

/**
 * True when a failed BullMQ job's reason is an outage of Postgres or Redis (the message of the error
 * that failed it, from before outages stopped spending attempts): the sweeper runs such a job again.
 */
export function isOutageReason(reason: string): boolean {
  return /^(connect ECONNREFUSED|Connection terminated|timeout exceeded when trying to connect|Knex: Timeout acquiring)/i.test(
    reason,
  );
}

/** True when an error means a backing store (Postgres, Redis) is unreachable, not that the input is bad. */
export function isUnavailableError(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: unknown; name?: unknown; message?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && unavailableCodes.has(e.code)) return true;
  if (e.name === 'KnexTimeoutError') return true;
  if (
    typeof e.message === 'string' &&
    /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect/i.test(e.message)
  )
    return true;
  if (Array.isArray(e.errors)) return e.errors.some(isUnavailableError); // AggregateError from net.connect
  return false;
}
