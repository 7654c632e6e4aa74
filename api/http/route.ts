// A route table: each route is declared once — method, path, schemas, auth, handler — and that one
// declaration both validates requests at runtime and describes the route in the OpenAPI document.
import express from 'express';
import type { Request, Response, RequestHandler } from 'express';
import { z } from 'zod';
import type { CapabilityKind } from '../../shared/platform/capabilities';
import { requireProductLine, spendQuota } from '../../shared/licensing/entitlements';
import { requireScope, requiredScope } from '../../shared/licensing/scopes';
import type { KeyScope } from '../../shared/licensing/scopes';
import type { OperatorRole } from '../../shared/licensing/operators';
import type { ProductLine } from '../../shared/licensing/tiers';
import { AppError, validationFailed } from '../../shared/platform/errors';
import type { AppDeps } from '../deps';
import { authenticate, bearerToken, requireOperatorRole } from './auth';
import type { AuthMode, Principal } from './auth';
import { idempotent } from './idempotency';
import { gateUnder, staticPrefix } from './gate';
import { guardInput } from './input-guard';
import { spendRouteBudget } from './ratelimit';
import type { RouteBudget } from './ratelimit';

type ZObject = z.ZodObject<z.ZodRawShape>;

export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  contentType?: string;
  /** Response headers the reply sets, for the document. */
  headers?: Record<
    string,
    { description: string; required?: boolean; schema: { type: 'string' | 'integer' } }
  >;
}

/** Problem codes by HTTP status: what a route's handler and the services it calls can answer with. */
export type ProblemCodes = Partial<Record<number, readonly string[]>>;

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface HandlerContext<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  auth: Principal;
  /** The Bearer token, on a route that declares a `capability` (the handler compares it); else undefined. */
  capability: string | undefined;
  req: Request;
  res: Response;
  deps: AppDeps;
}

export interface RouteSpec<P extends ZObject, Q extends ZObject, B extends z.ZodType> {
  method: 'get' | 'post' | 'put' | 'delete';
  /** OpenAPI-style path: /api/jobs/{jobId}. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags?: string[];
  auth?: AuthMode;
  /** This route's own per-address budget, spent after authentication and before anything else. */
  budget?: RouteBudget;
  /**
   * The success reply carries a credential or secret shown once (an API key, a capability, salts): an
   * Idempotency-Key replays it only to the authenticated caller that made it, never to an address.
   */
  secretReply?: boolean;
  /**
   * The route reads or acts on one resource that its capability opens (`Authorization: Bearer` with
   * the token its creation returned once, e.g. cs_… for a checkout): the handler gets the token as
   * `capability` and answers 404 without the right one. The document lists it as a credential.
   */
  capability?: CapabilityKind;
  /** The product line a license must grant to use this route. */
  product?: ProductLine;
  /**
   * The scope an organization's key needs here, where the rule (`requiredScope`: GET needs `read`, a
   * write the product line, a write outside every line `admin`) does not fit.
   */
  scope?: KeyScope;
  /**
   * The operator role this route needs, where the rule (`operatorRoleOf`: GET needs `read-only`,
   * anything else `admin`) does not fit: `support` for the actions that contain abuse.
   */
  operatorRole?: OperatorRole;
  /** A license spends one unit of the product line's quota here (refunded if nothing is created). */
  quota?: boolean;
  /**
   * The most bytes this route's body may hold, refused `413` from its Content-Length before a byte is
   * parsed: `'large'` for a route whose real input is big (a package to verify), capped by
   * `BODY_LIMIT_BYTES`. Unset: `SMALL_BODY_BYTES` for a route with a body, `NO_BODY_BYTES` without.
   */
  bodyLimit?: number | 'large';
  params?: P;
  query?: Q;
  body?: B;
  /** Extra request headers worth documenting (Idempotency-Key is added to every POST). */
  requestHeaders?: ZObject;
  responses: Record<number, ResponseSpec>;
  /**
   * The problems this route's own handler and services raise (the pipeline's — validation, auth,
   * rate limits, idempotency, body limits, license checks — are added by the OpenAPI generator).
   */
  problems?: ProblemCodes;
  /** Returns the reply, or undefined when it wrote the response itself (streams). */
  handler: (ctx: HandlerContext<z.output<P>, z.output<Q>, z.output<B>>) => Promise<Reply | undefined>;
  /** Left out of the OpenAPI document (pages, streams documented elsewhere). */
  hidden?: boolean;
}

/** The operator role a route needs (see `RouteSpec.operatorRole`). */
export const operatorRoleOf = (
  spec: Pick<RouteSpec<ZObject, ZObject, z.ZodType>, 'method' | 'operatorRole'>,
) => spec.operatorRole ?? (spec.method === 'get' ? 'read-only' : 'admin');

/** What a route with a body accepts unless it says otherwise: every such input fits in a few KB. */
export const SMALL_BODY_BYTES = 16 * 1024;
/** A route without a body takes none or `{}`; a little slack for clients that send whitespace. */
export const NO_BODY_BYTES = 256;

/** The most bytes a route's body may hold, given the service-wide `BODY_LIMIT_BYTES`. */
export function routeBodyLimit(
  spec: Pick<RouteSpec<ZObject, ZObject, z.ZodType>, 'bodyLimit' | 'body'>,
  serviceLimit: number,
): number {
  const own =
    spec.bodyLimit === 'large'
      ? serviceLimit
      : (spec.bodyLimit ?? (spec.body !== undefined ? SMALL_BODY_BYTES : NO_BODY_BYTES));
  return Math.min(own, serviceLimit);
}

/**
 * A route's body, parsed only when it fits its own limit: a declared length over it is refused before
 * a byte is read, a chunked one as soon as it passes it; then the parsed value is guarded.
 */
function bodyParser(limit: number, parsers: Map<number, RequestHandler>): RequestHandler {
  let parse = parsers.get(limit);
  if (!parse) {
    const json = express.json({ limit, strict: true, type: 'application/json' });
    const tooLarge = () =>
      new AppError(413, 'payload_too_large', `This route takes a body of at most ${limit} bytes.`);
    // Refused over the limit: answered at once and the connection closed, the rest of the body unread.
    const refuse = (res: Response, next: (err: unknown) => void) => {
      res.setHeader('Connection', 'close');
      res.once('finish', () => res.req.socket.destroy());
      next(tooLarge());
    };
    parse = (req, res, next) => {
      if (Number(req.headers['content-length'] ?? 0) > limit) return refuse(res, next);
      let settled = false;
      const settle = (err?: unknown) => {
        if (settled) return;
        settled = true;
        req.off('data', count);
        next(err);
      };
      // A chunked body is counted as it comes and refused the moment it passes the limit (the parser
      // alone would read the rest of it, however long, before refusing it).
      let seen = 0;
      const count = (chunk: Buffer) => {
        seen += chunk.length;
        if (seen <= limit || settled) return;
        settled = true;
        req.off('data', count);
        refuse(res, next);
      };
      if (req.headers['transfer-encoding'] !== undefined) req.on('data', count);
      json(req, res, (err?: unknown) => {
        if (err) return settle(err);
        try {
          if (req.body !== undefined) guardInput(req.body, 'body');
        } catch (e) {
          return settle(e);
        }
        settle();
      });
    };
    parsers.set(limit, parse);
  }
  return parse;
}

const empty = z.strictObject({});
/** A route that takes no body: none, or an empty object. */
const noBody = z.union([z.undefined(), z.strictObject({})]);

function issuesToErrors(where: string, error: z.ZodError) {
  return error.issues.map((i) => ({
    path: [where, ...i.path.map(String)].join('.'),
    message: i.message,
  }));
}

function parsePart<T extends z.ZodType>(schema: T, value: unknown, where: string): z.output<T> {
  const result = schema.safeParse(value ?? {});
  if (!result.success) throw validationFailed(issuesToErrors(where, result.error));
  return result.data;
}

export class RouteTable {
  private readonly routes: RouteSpec<ZObject, ZObject, z.ZodType>[] = [];

  constructor(readonly name: string) {}

  add<
    P extends ZObject = typeof empty,
    Q extends ZObject = typeof empty,
    B extends z.ZodType = z.ZodUndefined,
  >(spec: RouteSpec<P, Q, B>): this {
    this.routes.push(spec as unknown as RouteSpec<ZObject, ZObject, z.ZodType>);
    return this;
  }

  list(): readonly RouteSpec<ZObject, ZObject, z.ZodType>[] {
    return this.routes;
  }

  /** The table's routes, walked only by requests under one of its paths' static prefixes. */
  router(deps: AppDeps): RequestHandler {
    const router = express.Router();
    const parsers = new Map<number, RequestHandler>();
    for (const spec of this.routes) {
      const expressPath = spec.path.replace(/\{(\w+)\}/g, ':$1');
      const handler: RequestHandler = async (req, res) => {
        guardInput(req.params, 'params');
        const auth = await authenticate(req, deps, spec.auth ?? 'public');
        // Before the idempotency layer: a key without the scope never gets even a replayed answer.
        if (auth.kind === 'license')
          requireScope(auth.scopes, requiredScope(spec.method, spec.product, spec.scope), spec.product);
        if (auth.kind === 'operator') requireOperatorRole(auth, operatorRoleOf(spec));
        if (spec.budget) await spendRouteBudget(deps, spec.budget, req, res, auth);
        if (spec.method === 'post' && (await idempotent(deps, req, res, spec.secretReply === true))) return;
        const params = parsePart(spec.params ?? empty, req.params, 'params');
        const query = parsePart(spec.query ?? empty, req.query, 'query');
        const body =
          spec.body !== undefined
            ? parsePart(spec.body, req.body, 'body')
            : (parsePart(noBody, req.body, 'body') as undefined);
        if (auth.kind === 'license' && spec.product) requireProductLine(auth, spec.product);
        const refund =
          auth.kind === 'license' && spec.product && spec.quota
            ? await spendQuota(deps.db, auth, spec.product)
            : undefined;
        let reply: Reply | undefined;
        try {
          const capability = spec.capability ? bearerToken(req) : undefined;
          reply = await spec.handler({ params, query, body, auth, capability, req, res, deps });
        } catch (err) {
          await refund?.();
          throw err;
        }
        if (refund && reply && reply.status >= 400) await refund();
        if (!reply || res.headersSent) return;
        for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
        if (reply.body === undefined) res.status(reply.status).end();
        else res.status(reply.status).json(reply.body);
      };
      router[spec.method](
        expressPath,
        bodyParser(routeBodyLimit(spec, deps.bodyLimitBytes), parsers),
        handler,
      );
    }
    return gateUnder(
      this.routes.map((spec) => staticPrefix(spec.path)),
      router,
    );
  }
}

/** A long poll's `wait` query parameter: seconds, at most 30. */
export const waitSeconds = (description: string) =>
  z.coerce.number().int().min(0).max(30).optional().describe(description);

export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string(),
    instance: z.string().optional(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details with a stable machine-readable code.' });
