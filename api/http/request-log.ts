// The request log: one line per request when its response is done, at a level set by the outcome
// (5xx or an error: error; 4xx and success: debug — a caller's mistake is the caller's, and at info
// every browser's /favicon.ico or a scanner's probe would fill the operator's terminal; a sealed action that succeeds: none, since the
// lines would count ballots and bids; a 503, expected while a backing service is down: debug, the
// outage itself logged once at warn when it starts and once when it ends, api/http/outage-log.ts). The line names the request (id, method, path as received), the
// status and the time taken; never headers or bodies. Every request gets an id (the caller's
// X-Request-Id when it is a plain token, else a UUID) echoed in X-Request-Id. `req.log`, the request's
// own logger with the same bindings, is made the first time a handler asks for it: most requests never
// log anything, and building a child logger costs more than the rest of this middleware.
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { OutageLog } from './outage-log';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** This request's id, as sent back in X-Request-Id. */
      id: string;
      /** A logger bound to this request (id, method, path). */
      log: Logger;
    }
  }
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

type Level = 'error' | 'debug' | 'silent';

const bindingsKey = Symbol('requestLogBindings');
const ownKey = Symbol('requestLogger');
type Logged = Request & { [bindingsKey]?: object; [ownKey]?: Logger };

/**
 * `log` on the requests' prototype (the app's, shared by its requests): a per-request property would
 * give every request object a shape of its own, which slows every later property read on it.
 */
function defineLazyLog(proto: object, logger: Logger) {
  Object.defineProperty(proto, 'log', {
    configurable: true,
    get(this: Logged) {
      return (this[ownKey] ??= logger.child(this[bindingsKey] ?? {}));
    },
  });
}

/**
 * Marks a ballot, bid or reveal: the app neither meters it nor logs its success, since per-request counts
 * during a live vote or auction would be a running tally (see api/app.ts).
 */
export const sealedAction = (res: Response): void => {
  res.locals.sealed = true;
};

function levelOf(res: Response, err: unknown): Level {
  if (!err && res.statusCode === 503) return 'debug';
  if (err || res.statusCode >= 500) return 'error';
  if (res.statusCode >= 400) return 'debug';
  return res.locals.sealed ? 'silent' : 'debug';
}

/**
 * Set by the error handler on a 503 it answers: the problem's code and what failed, for the outage's
 * one line.
 */
export const noteUnavailable = (res: Response, code: string, reason: string | undefined): void => {
  res.locals.unavailable = { code, ...(reason ? { reason } : {}) };
};

const startKey = Symbol('requestLogStart');
type LoggedResponse = Response & { [startKey]?: number; [bindingsKey]?: { req: object } };

export function requestLog(logger: Logger, outage = new OutageLog(logger)): RequestHandler {
  const prototypes = new WeakSet<object>();
  // One listener for the app, not a closure per request: what it needs rides on the response.
  function done(this: LoggedResponse, err?: unknown) {
    this.off('finish', done);
    this.off('close', done);
    this.off('error', done);
    if (!err && this.statusCode === 503)
      outage.unavailable((this.locals.unavailable as { code?: string } | undefined) ?? {});
    const level = levelOf(this, err);
    if (level === 'silent' || !logger.isLevelEnabled(level)) return;
    const line = {
      ...this[bindingsKey],
      res: { statusCode: this.statusCode },
      responseTime: Math.round(performance.now() - (this[startKey] ?? 0)),
    };
    if (level === 'error') {
      logger.error(
        {
          ...line,
          err: err instanceof Error ? err : new Error(`failed with status code ${this.statusCode}`),
        },
        'request errored',
      );
    } else {
      logger[level](line, 'request completed');
    }
  }
  return (req: Request, res: Response, next: NextFunction) => {
    const proto = Object.getPrototypeOf(req) as object;
    if (!prototypes.has(proto)) {
      defineLazyLog(proto, logger);
      prototypes.add(proto);
    }
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', id);
    req.id = id;
    // Routers rewrite req.url while they route: the path is taken as it arrived.
    const bindings = { req: { id, method: req.method, url: req.url } };
    (req as Logged)[bindingsKey] = bindings;
    (res as LoggedResponse)[bindingsKey] = bindings;
    (res as LoggedResponse)[startKey] = performance.now();
    res.on('finish', done);
    res.on('close', done);
    res.on('error', done);
    next();
  };
}
