// A line's published package as its routes serve it: GET …/package (the signed package), GET …/bundle
// (the same package as an offline bundle), and POST …/verify (a pasted package checked offline-style
// under the service's trust root, its key history, with the key it is signed with). Each line names its
// subject, who may read it, how its package is found and which verifier checks it.
import { z } from 'zod';
import type { ProductLine } from '../../shared/licensing/tiers';
import type { ServiceTrust } from '../../shared/platform/key-history';
import { bundleSchema } from '../../shared/platform/translog/bundle';
import { bundleOf } from '../../shared/proofs/bundle';
import type { Envelope, Reason } from '../../shared/proofs/envelope';
import { servicePublicKey } from '../../shared/proofs/seal';
import { verifyUnderServiceTrust } from '../../shared/proofs/service-trust';
import type { AuthMode } from './auth';
import type { HandlerContext, RouteTable } from './route';

type ZObject = z.ZodObject<z.ZodRawShape>;

export interface PackageRoutesSpec<P extends ZObject, Q extends ZObject> {
  /** The subject's path, e.g. /api/auctions/{auctionId}: the routes are its …/package and …/bundle. */
  path: string;
  /** The operations are get<name>Package and get<name>Bundle. */
  name: string;
  /** Whose package, as the summaries open: "The finalized auction’s". */
  of: string;
  /** The package route's summary, where "<of> proof package" says too little. */
  packageSummary?: string;
  tags: string[];
  auth?: AuthMode;
  product?: ProductLine;
  params: P;
  query?: Q;
  schema: z.ZodType;
  /** The bundle's Cache-Control. */
  bundleCache: 'no-cache' | 'no-store';
  /** The subject's published package: 404 not_found, 409 not_published before there is one. */
  load: (ctx: HandlerContext<z.output<P>, z.output<Q>, undefined>) => Promise<Envelope>;
}

/** GET <path>/package and GET <path>/bundle. */
export function packageRoutes<P extends ZObject, Q extends ZObject = ZObject>(
  table: RouteTable,
  spec: PackageRoutesSpec<P, Q>,
): RouteTable {
  const access = {
    tags: spec.tags,
    ...(spec.auth ? { auth: spec.auth } : {}),
    ...(spec.product ? { product: spec.product } : {}),
    params: spec.params,
    ...(spec.query ? { query: spec.query } : {}),
  };
  return table
    .add<P, Q>({
      method: 'get',
      path: `${spec.path}/package`,
      operationId: `get${spec.name}Package`,
      summary: spec.packageSummary ?? `${spec.of} proof package`,
      ...access,
      responses: { 200: { description: 'The package', schema: spec.schema } },
      problems: { 404: ['not_found'], 409: ['not_published'] },
      handler: async (ctx) => ({ status: 200, body: await spec.load(ctx) }),
    })
    .add<P, Q>({
      method: 'get',
      path: `${spec.path}/bundle`,
      operationId: `get${spec.name}Bundle`,
      summary: `${spec.of} package as an offline bundle (the package and its tlog proof)`,
      ...access,
      responses: { 200: { description: 'The bundle, for npm run verify', schema: bundleSchema } },
      problems: { 404: ['not_found'], 409: ['not_published', 'checkpoint_pending'] },
      handler: async (ctx) => ({
        status: 200,
        headers: { 'Cache-Control': spec.bundleCache },
        body: await bundleOf(ctx.deps.db, await spec.load(ctx)),
      }),
    });
}

export interface VerifyRouteSpec<V extends { reasons: readonly Reason[] }> {
  path: string;
  operationId: string;
  summary: string;
  tags: string[];
  /** The verifier's own checks, listed in the verdict between the envelope's and the reasons. */
  checks: z.ZodRawShape;
  verify: (pkg: Record<string, unknown>, trust: ServiceTrust, opts: { loggedAt?: string }) => V;
}

/** POST <path>: { package } checked by the line's verifier under this service's trust root. */
export function verifyRoute<V extends { reasons: readonly Reason[] }>(
  table: RouteTable,
  spec: VerifyRouteSpec<V>,
): RouteTable {
  return table.add({
    method: 'post',
    path: spec.path,
    operationId: spec.operationId,
    summary: spec.summary,
    tags: spec.tags,
    bodyLimit: 'large',
    body: z.strictObject({ package: z.record(z.string(), z.unknown()) }),
    responses: {
      200: {
        description: 'The verdict',
        schema: z.object({
          valid: z.boolean(),
          signatureValid: z.boolean(),
          inclusionValid: z.boolean().optional(),
          ...spec.checks,
          reasons: z.array(z.object({ check: z.string(), code: z.string(), detail: z.string() })),
          signingKey: z.object({ keyId: z.string(), publicKey: z.string() }),
        }),
      },
    },
    handler: async ({ body, deps }) => {
      const verdict = await verifyUnderServiceTrust(deps.db, body.package, (trust, opts) =>
        spec.verify(body.package, trust, opts),
      );
      const { keyId, publicKey } = servicePublicKey();
      return { status: 200, body: { ...verdict, signingKey: { keyId, publicKey } } };
    },
  });
}
