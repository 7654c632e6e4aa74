// A route table: each route is declared once — method, path, schemas, auth, handler — and that one
// declaration both validates requests at runtime and describes the route in the OpenAPI document.
import express from 'express';
import type { Request, Response, RequestHandler } from 'express';
import { z } from 'zod';
import type { CapabilityKind } from '../../shared/platform/capabilities';
import { requireProductLine, spendQuota } from '../../shared/licensing/entitlements';
import { requireScope, requiredScope } from '../../shared/licensing/scopes';
import type { KeyScope } from '../../shared/licensing/scopes';
import type { ProductLine } from '../../shared/licensing/tiers';
import { validationFailed } from '../../shared/platform/errors';
import type { AppDeps } from '../deps';
import { authenticate, bearerToken } from './auth';
import type { AuthMode, Principal } from './auth';
import { idempotent } from './idempotency';
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
  /** A license spends one unit of the product line's quota here (refunded if nothing is created). */
  quota?: boolean;
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

  router(deps: AppDeps): express.Router {
    const router = express.Router();
    for (const spec of this.routes) {
      const expressPath = spec.path.replace(/\{(\w+)\}/g, ':$1');
      const handler: RequestHandler = async (req, res) => {
        guardInput(req.params, 'params');
        const auth = await authenticate(req, deps, spec.auth ?? 'public');
        // Before the idempotency layer: a key without the scope never gets even a replayed answer.
        if (auth.kind === 'license')
          requireScope(auth.scopes, requiredScope(spec.method, spec.product, spec.scope), spec.product);
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
      router[spec.method](expressPath, handler);
    }
    return router;
  }
}

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
