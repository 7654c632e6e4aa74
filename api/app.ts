// The Express app: conventions (validation, problem details, limits, idempotency, logs) around three routers.
import { ServerResponse } from 'node:http';
import type { IncomingMessage } from 'node:http';
import cors from 'cors';
import express from 'express';
import type { Request, Response, NextFunction, RequestHandler } from 'express';
import type { Histogram } from 'prom-client';
import helmet from 'helmet';
import { safeEqual } from '../shared/platform/crypto';
import { AppError, forbidden, unauthorized } from '../shared/platform/errors';
import { env } from '../shared/platform/env';
import { logger } from '../shared/platform/log';
import { httpDuration, queueDepth, registry } from '../shared/platform/metrics';
import { CARD_PATH, agentCardHandler } from './a2a/card';
import { a2aRouter } from './a2a/router';
import type { AppDeps } from './deps';
import { pagesRouter } from './pages';
import { docsRouter } from './pages/docs';
import { browserNotFound } from './pages/layout';
import { coordinationPagesRouter } from './pages/governance';
import { ADMIN_PATH, adminRouter } from './http/admin';
import { gateOutside } from './http/gate';
import { acceptKeys, bearerOnly, bearerToken } from './http/auth';
import { guardQuery } from './http/input-guard';
import { origin } from './http/links';
import { exchangeDocument, platformDocument } from './http/openapi';
import { errorMiddleware, notFoundMiddleware } from './http/problem';
import { rateLimit, spendAuthFailure, tokenCheckedElsewhere } from './http/ratelimit';
import { overloadGate } from './http/overload';
import { requestLog } from './http/request-log';
import { httpTracing } from './http/tracing';
import { queueDepths } from './http/health-checks';
import { routeOf } from './http/route-label';
import { AGENT_EXCHANGE_VERSION } from './views/exchange';
import { buildTables } from './tables';
import type { RouteTables } from './tables';
import { keyResolvers } from './wiring';

export interface AppOptions {
  tables?: RouteTables;
  trustProxy?: number;
}

const writeHead = ServerResponse.prototype.writeHead;

/**
 * helmet's headers, as it sets them on a response, worked out once: they depend on nothing in the
 * request, so each response gets the same list set in one call. Its Content-Security-Policy is the
 * one of a response that is no page (JSON, a redirect, a file): nothing may run, load or frame it.
 * Each page, /docs and Bull Board replace it with their own (api/pages/csp.ts, api/http/admin.ts).
 */
function securityHeaders(): RequestHandler {
  const headers = new Map<string, string | number | readonly string[]>();
  const probe = {
    setHeader: (name: string, value: string | number | readonly string[]) => headers.set(name, value),
    removeHeader: (name: string) => headers.delete(name),
    getHeader: () => undefined,
  };
  helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: { defaultSrc: ["'none'"], baseUri: ["'none'"], frameAncestors: ["'none'"] },
    },
    crossOriginEmbedderPolicy: false,
  })({} as Request, probe as unknown as Response, () => undefined);
  return (_req, res, next) => {
    res.setHeaders(headers);
    next();
  };
}

const started = Symbol('requestStarted');
type Timed = Response & { [started]?: number };
/** The histogram's children by method, route and status, bound once (the label sets are few). */
const durations = new Map<string, Histogram.Internal<'method' | 'route' | 'status'>>();
const MAX_BOUND = 2_000;

/** Request latency by route pattern and status; one shared listener, no closure per request. */
const timeRequest: RequestHandler = (_req, res, next) => {
  (res as Timed)[started] = performance.now();
  res.on('finish', observeDuration);
  next();
};

function observeDuration(this: Timed) {
  // Sealed actions are not metered: a per-route count would be a running tally of ballots or bids.
  if (this.locals.sealed) return;
  const req = this.req;
  // The full route, mount path included (api/http/route-label.ts), never the path itself.
  const route = routeOf(req, this) ?? '';
  const key = `${req.method} ${route} ${this.statusCode}`;
  let child = durations.get(key);
  if (!child) {
    child = httpDuration.labels({ method: req.method, route, status: this.statusCode });
    if (durations.size < MAX_BOUND) durations.set(key, child);
  }
  child.observe((performance.now() - (this[started] ?? 0)) / 1000);
}

/** Liveness and readiness (api/routes/health.ts): never rate limited. */
const unlimitedPaths = new Set(['/api/health', '/api/v1/readiness']);

export function createApp(deps: AppDeps, options: AppOptions = {}): express.Express {
  const tables = options.tables ?? buildTables();
  // The keys the product lines issue (agent and license keys), as api/wiring.ts lists them.
  acceptKeys(keyResolvers);
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy ?? 0);
  app.set('query parser', 'simple');

  // Past what it can serve in time, the process sheds a request before doing any work for it: the gate
  // runs in front of the app's own handling (Express's request setup and router), so a refusal costs
  // the least a refusal can.
  const admit = overloadGate(
    {
      maxInFlight: env.OVERLOAD_MAX_IN_FLIGHT,
      maxEventLoopDelayMs: env.OVERLOAD_MAX_EVENT_LOOP_DELAY_MS,
      targetMs: env.OVERLOAD_TARGET_MS,
      maxBodies: env.OVERLOAD_MAX_BODIES,
      bodyMinRate: env.HTTP_BODY_MIN_RATE,
      bodyGraceMs: env.HTTP_BODY_GRACE_MS,
      ...deps.overload,
    },
    {
      exempt: (path) => unlimitedPaths.has(path),
      trustProxy: options.trustProxy ?? 0,
      ipv6PrefixLength: env.IPV6_PREFIX_LENGTH,
      bodyLimitBytes: deps.bodyLimitBytes,
    },
  );
  // Express 5's app function calls app.handle (not in its types): the gate goes in front of it.
  type Handle = (req: IncomingMessage, res: ServerResponse, next?: unknown) => void;
  const handled = app as unknown as { handle: Handle };
  const handle = handled.handle.bind(app);
  handled.handle = (req, res, next) => {
    if (admit(req, res)) handle(req, res, next);
  };
  app.use(httpTracing());
  app.use(requestLog(logger));
  app.use(timeRequest);
  app.use(securityHeaders());
  // An answer built from the request's Host (no BASE_URL/API_URL/SITE_URL configured) is that
  // requester's alone: a shared cache must not hand it to anyone else. Checked as the head is written,
  // on the app's response prototype (no wrapper made per request).
  app.response.writeHead = function (this: Response, ...args: Parameters<Response['writeHead']>) {
    if (this.locals?.originFromRequest) {
      this.setHeader('Cache-Control', 'no-store');
      this.vary('Host');
    }
    return writeHead.apply(this, args);
  } as Response['writeHead'];
  app.use(
    '/api',
    cors({
      origin: '*',
      allowedHeaders: [
        'Authorization',
        'Content-Type',
        'Idempotency-Key',
        'X-Request-Id',
        'Last-Event-ID',
        'X-Referral-Code',
        'PAYMENT-SIGNATURE',
        'X-PAYMENT',
        // x402 clients send it on the paid retry (asking the browser to expose the settlement header).
        'Access-Control-Expose-Headers',
      ],
      exposedHeaders: [
        'Location',
        'Retry-After',
        'X-Request-Id',
        'Idempotency-Replayed',
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'PAYMENT-REQUIRED',
        'PAYMENT-RESPONSE',
        'X-PAYMENT-RESPONSE',
      ],
      maxAge: 600,
    }),
  );

  // Every mount from here on is rate limited per client network, and a credential that authenticates
  // nothing spends from its network's failure budget. Mounts that check a token of their own say so
  // first (they count their own failures), as do routes whose Bearer token is another party's.
  app.use(['/metrics', ADMIN_PATH], tokenCheckedElsewhere);
  app.use(foreignTokenRoutes(tables));
  // Health and readiness answer a monitor whatever its address has spent (a monitor behind the same
  // address as a busy client still sees the truth): they pass the limiter by.
  const limited = rateLimit(deps);
  app.use((req, res, next) => {
    if ((req.method === 'GET' || req.method === 'HEAD') && unlimitedPaths.has(req.path)) return next();
    return limited(req, res, next);
  });

  // Operational endpoints: they take no body.
  app.get('/metrics', async (req, res) => {
    if (deps.metricsRefused) throw forbidden(deps.metricsRefused);
    if (deps.metricsToken && !safeEqual(bearerToken(req) ?? '', deps.metricsToken)) {
      if (req.headers.authorization !== undefined) await spendAuthFailure(deps, req, res);
      throw unauthorized('Metrics need Authorization: Bearer <METRICS_TOKEN>.', {
        'WWW-Authenticate': 'Bearer',
      });
    }
    const depths = await queueDepths(deps);
    queueDepth.reset();
    for (const [queue, counts] of Object.entries(depths ?? {})) {
      for (const [state, n] of Object.entries(counts)) queueDepth.set({ queue, state }, n);
    }
    res.type(registry.contentType).send(await registry.metrics());
  });
  app.use(adminRouter(deps));

  const urls = (req: Request) => ({
    base: origin(req, deps, 'base'),
    api: origin(req, deps, 'api'),
    site: origin(req, deps, 'site'),
  });
  const exchangeDoc = (req: Request) => exchangeDocument(tables, AGENT_EXCHANGE_VERSION, urls(req));
  const platformDoc = (req: Request) => platformDocument(tables, AGENT_EXCHANGE_VERSION, urls(req));
  app.get('/openapi.json', (req, res) => void res.json(exchangeDoc(req)));
  app.get(CARD_PATH, cors({ origin: '*', maxAge: 600 }), agentCardHandler(deps));
  app.get('/openapi/platform.json', (req, res) => void res.json(platformDoc(req)));
  app.use(docsRouter());
  app.get('/problems/:code', (req, res) => {
    res.json({
      code: req.params.code,
      see: '/docs',
      description: 'Problem types are identified by their stable `code`.',
    });
  });

  // Client traffic from here on: Bearer credentials only on the API, query strings guarded.
  // Server-rendered pages come first: they parse their own form posts, since an HTML form without
  // scripts cannot send JSON.
  app.use('/api', bearerOnly);
  app.use(guardQuery);
  // A2A (JSON-RPC and HTTP+JSON): parses and guards its own bodies, answering in the protocol's forms.
  // None of them serves a path under /api/: requests to the API pass them by unwalked.
  app.use(gateOutside('/api/', a2aRouter(deps)));
  app.use(gateOutside('/api/', pagesRouter(deps)));
  app.use(gateOutside('/api/', coordinationPagesRouter(deps)));

  // Everything below takes JSON input: size-limited (here, the service's limit; in each route, its
  // own) and guarded. Routes honour idempotency keys.
  app.use((req: Request, _res: Response, next: NextFunction) => {
    const length = Number(req.headers['content-length'] ?? 0);
    if (
      (length > 0 || req.headers['transfer-encoding']) &&
      !req.is('application/json') &&
      req.method !== 'GET'
    ) {
      throw new AppError(415, 'unsupported_media_type', 'Request bodies must be application/json.');
    }
    if (length > deps.bodyLimitBytes) {
      throw new AppError(
        413,
        'payload_too_large',
        `The request body is larger than ${deps.bodyLimitBytes} bytes.`,
      );
    }
    next();
  });
  // Each route parses and guards its own body, under its own limit (route.ts).
  app.use(tables.exchange.router(deps));
  app.use(tables.commercial.router(deps));
  app.use(tables.site.router(deps));

  app.use(browserNotFound);
  app.use(notFoundMiddleware);
  app.use(errorMiddleware);
  return app;
}

/** The routes whose Bearer token is the payments provider's, passed on unread: not ours to count. */
function foreignTokenRoutes(tables: RouteTables): express.Router {
  const router = express.Router();
  for (const table of [tables.exchange, tables.commercial, tables.site]) {
    for (const spec of table.list()) {
      if (spec.auth === 'provider-token') {
        router[spec.method](spec.path.replace(/\{(\w+)\}/g, ':$1'), tokenCheckedElsewhere);
      }
    }
  }
  return router;
}
