// The exchange's errors in A2A's terms, so each transport answers with its own error form (a JSON-RPC
// error, or an HTTP+JSON error body with its status): bad input is the protocol's invalid-params error,
// never an internal one; anything unexpected is logged here and answered without its details.
import {
  A2AError,
  ContentTypeNotSupportedError,
  RequestMalformedError,
  RestUnsupportedOperationError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { AppError } from '../../shared/platform/errors';
import { logger } from '../../shared/platform/log';
import { toAppError } from '../http/problem';

/** ErrorInfo metadata (strings only): the exchange's stable code and, for bad input, what was wrong. */
function metadataOf(err: AppError): Record<string, string> {
  return {
    code: err.code,
    ...(err.errors ? { errors: JSON.stringify(err.errors) } : {}),
  };
}

export function toA2AError(err: unknown): A2AError {
  if (err instanceof A2AError) return err;
  const app = toAppError(err);
  if (app.code === 'internal_error') {
    logger.error({ err }, 'unhandled error in an A2A call');
    return new A2AError({ message: app.message, metadata: { code: app.code } });
  }
  const options = { message: app.message, metadata: metadataOf(app) };
  if (app.status === 404) return new TaskNotFoundError(options);
  if (app.code === 'job_not_cancelable') return new TaskNotCancelableError(options);
  if (app.code === 'content_type_not_supported') return new ContentTypeNotSupportedError(options);
  if ([400, 413, 415, 422].includes(app.status)) return new RequestMalformedError(options);
  // A refusal of the caller (someone else's task is not found, above): JSON-RPC has no code of its
  // own for it; HTTP+JSON says 403.
  if (app.status === 403) return new RestUnsupportedOperationError({ ...options, statusCode: 403 });
  if (app.status < 500) return new UnsupportedOperationError(options);
  // A store that is down (503): said as it is, without details.
  return new A2AError(options);
}

/** Runs a call with its errors in A2A's terms. */
export async function a2a<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw toA2AError(err);
  }
}
