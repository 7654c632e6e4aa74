// Bull Board for operators at /admin/queues, behind the operator token or a named operator key (Bearer,
// or Basic with the token as password: the only place Basic is accepted), by role: a read-only operator
// gets a read-only board (and the board's own API refuses its changes), support may retry and promote,
// an admin do everything. Mounted behind the rate limiter; every wrong token or
// password spends from the client network's failure budget.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import express from 'express';
import type { AppDeps } from '../deps';
import { sendProblem } from './problem';
import { bearerToken, requireOperatorRole, resolveToken } from './auth';
import type { OperatorRole } from '../../shared/licensing/operators';
import type { Request } from 'express';
import { AppError } from '../../shared/platform/errors';
import { spendAuthFailure } from './ratelimit';

export const ADMIN_PATH = '/admin/queues';

/** Bull Board's page asks Google Fonts for IBM Plex; without it the board uses the system fonts. */
const EXTERNAL_STYLESHEET = /<link\b[^>]*href="https?:\/\/[^"]*"[^>]*>/g;
/** Everything the board loads comes from here: its bundle, styles and its own JSON API. */
const BOARD_CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

type Render = (path: string, options: object, done: (err: Error | null, html?: string) => void) => void;

/** Renders the board's page with every external stylesheet link removed. */
function withoutExternalAssets(board: express.Express): void {
  const render = (board as unknown as { engines: Record<string, Render> }).engines['.ejs'];
  if (!render) throw new Error('Bull Board renders no ejs view: check its external assets by hand');
  board.engine('ejs', (path, options, done) =>
    render(path, options, (err, html) => done(err, html?.replace(EXTERNAL_STYLESHEET, ''))),
  );
}

/** Bull Board's browsers log in with Basic (any user, the token as password); scripts send Bearer. */
function adminToken(req: Request): string | undefined {
  const basic = /^Basic\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  if (!basic) return bearerToken(req);
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  return decoded.slice(decoded.indexOf(':') + 1);
}

/** A board over every queue; read-only (no retry, clean, remove, pause or add) for read-only operators. */
function board(deps: AppDeps, readOnlyMode: boolean): express.Express {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(ADMIN_PATH);
  createBullBoard({
    queues: deps.queues.all().map((q) => new BullMQAdapter(q, { readOnlyMode })),
    serverAdapter,
    options: {
      uiConfig: { boardTitle: readOnlyMode ? 'proof-exchange queues (read-only)' : 'proof-exchange queues' },
    },
  });
  const router = serverAdapter.getRouter() as express.Express;
  withoutExternalAssets(router);
  return router;
}

/**
 * What a support operator may change on the board: retry and promote (a job runs again or sooner).
 * Cleaning, removing, emptying, pausing, adding or editing jobs is an admin's.
 */
const SUPPORT_ACTIONS = /^\/api\/queues\/[^/]+\/(?:retry\/[^/]+|promote|[^/]+\/retry|[^/]+\/promote)$/;

/** The role a board request needs: reads are anyone's, retry and promote support's, the rest admin's. */
function boardRole(req: Request): OperatorRole {
  if (req.method === 'GET' || req.method === 'HEAD') return 'read-only';
  return SUPPORT_ACTIONS.test(req.path) ? 'support' : 'admin';
}

export function adminRouter(deps: AppDeps): express.Router {
  const router = express.Router();
  const boards = { full: board(deps, false), readOnly: board(deps, true) };
  router.use(ADMIN_PATH, async (req, res, next) => {
    const { principal } = await resolveToken(adminToken(req), deps);
    if (!deps.operatorToken && principal?.kind !== 'operator') {
      sendProblem(
        res,
        new AppError(503, 'operator_disabled', 'Bull Board is disabled: OPERATOR_TOKEN is not configured.'),
      );
      return;
    }
    if (principal?.kind !== 'operator') {
      // A wrong token or password is a guess: it spends from the network's failure budget (429 once spent).
      if (req.headers.authorization !== undefined) await spendAuthFailure(deps, req, res);
      sendProblem(
        res,
        new AppError(
          401,
          'unauthorized',
          'Bull Board needs the operator token or an operator key (Bearer, or as the Basic password).',
          {
            headers: { 'WWW-Authenticate': 'Basic realm="proof-exchange operator", charset="UTF-8"' },
          },
        ),
      );
      return;
    }
    try {
      requireOperatorRole(principal, boardRole(req));
    } catch (err) {
      sendProblem(res, err as AppError);
      return;
    }
    if (/^Basic\s/i.test(req.headers.authorization ?? '') && !['GET', 'HEAD'].includes(req.method)) {
      // A cached Basic login is sent by the browser whoever built the request: a change must come
      // from Bull Board's own page.
      const from = req.headers.origin ?? req.headers.referer;
      let sameOrigin = false;
      try {
        sameOrigin = !!from && new URL(from).host === req.headers.host;
      } catch {
        sameOrigin = false;
      }
      if (!sameOrigin) {
        sendProblem(
          res,
          new AppError(403, 'cross_origin_refused', 'Bull Board changes must come from Bull Board itself.'),
        );
        return;
      }
    }
    res.locals.board = principal.role === 'read-only' ? 'readOnly' : 'full';
    next();
  });
  router.use(ADMIN_PATH, (_req, res, next) => {
    res.setHeader('Content-Security-Policy', BOARD_CSP);
    next();
  });
  router.use(ADMIN_PATH, (req, res, next) =>
    boards[res.locals.board === 'readOnly' ? 'readOnly' : 'full'](req, res, next),
  );
  return router;
}
