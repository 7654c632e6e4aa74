// OpenAPI 3.1.0 documents generated from the route tables: each route's one declaration (schemas, auth
// mode, budget, product line, the problems its handler raises) gives its operation, security and
// every problem reply it can really send, with the codes of the pipeline around it added here.
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { statusTitles } from '../../shared/platform/errors';
import type { CapabilityKind } from '../../shared/platform/capabilities';
import { requiredScope } from '../../shared/licensing/scopes';
import type { RouteTables } from '../tables';
import type { AuthMode } from './auth';
import { operatorRoleOf, problemSchema, routeBodyLimit } from './route';
import type { ProblemCodes, RouteTable } from './route';

type AnyRoute = ReturnType<RouteTable['list']>[number];
type Security = Array<Record<string, string[]>>;

const securitySchemes = {
  operatorToken:
    'The bootstrap operator token (OPERATOR_TOKEN, an admin), or a named operator key (opk_…) with its role: `read-only` reads every operator route; `support` also suspends and resumes licenses and revokes agents’ and organizations’ keys; `admin` does everything else. A write needs `admin` unless its description says `support`.',
  agentKey: 'An agent API key (ak_…), issued once by registerAgent.',
  licenseKey:
    'A license key (lk_…) from a confirmed checkout, a TRIAL or the operator. It is its organization’s admin key: every route a license may use, with every scope.',
  organizationKey:
    'An organization’s API key (rk_…), made by an admin key of the organization (POST /api/v1/organization/keys) and shown once. It acts as its license within its scopes; the scope a route needs is listed beside it (`read`: any scope of the route’s line, or `read`, or `admin`; a line: that line or `admin`; `admin`: admin).',
  checkoutSecret:
    'A checkout’s client secret (cs_…), returned once by prepareCheckout: it opens that one checkout.',
  gateSecret:
    'A payment-gate request’s client secret (gs_…), returned once by paymentGatePrepare: it opens that one request.',
  jobToken:
    'A job’s access token (jt_…), returned once as `accessToken` by the createJob that made the job (and by the paid x402 retry). It opens that one job: its status and result, events, payment and delivery. The agent or license key that created the job, and the operator token, open it too; any other caller is answered 404 as for a job that does not exist.',
  paymentsProviderToken:
    'An access token from the private-payments provider’s login (POST {payments_url}/v1/spl/login with the wallet-signed challenge); the service passes it on to the provider unread.',
} as const;
type Scheme = keyof typeof securitySchemes;

const only = (...schemes: Scheme[]): Security => schemes.map((s) => ({ [s]: [] }));
/** An empty requirement first: the credential is optional. */
const optional = (...schemes: Scheme[]): Security => [{}, ...only(...schemes)];

/** The credentials `authenticate` takes for each mode, as OpenAPI security requirements (alternatives). */
export const securityOf: Record<AuthMode, Security> = {
  public: [],
  operator: only('operatorToken'),
  'operator-optional': optional('operatorToken'),
  agent: only('agentKey'),
  'agent-optional': optional('agentKey', 'licenseKey', 'organizationKey'),
  job: optional('jobToken', 'agentKey', 'licenseKey', 'organizationKey', 'operatorToken'),
  'operator-or-license': only('operatorToken', 'licenseKey', 'organizationKey'),
  'provider-token': only('paymentsProviderToken'),
};

/** The security scheme of each capability kind a route can declare (`capability` in route.ts). */
const capabilitySchemes: Partial<Record<CapabilityKind, Scheme>> = {
  checkout: 'checkoutSecret',
  gate: 'gateSecret',
};

/**
 * A route's security: its auth mode's credentials, and its capability beside them as one more
 * alternative. A capability route answers without one (404 for the resource, or its public part), so
 * where the mode is public the empty requirement stays first.
 */
export function securityOfRoute(
  spec: Pick<AnyRoute, 'auth' | 'capability'> & Partial<Pick<AnyRoute, 'method' | 'product' | 'scope'>>,
): Security {
  // An organization key's requirement names the scope the route needs (a role, as OpenAPI 3.1 allows).
  const scope = requiredScope(spec.method ?? 'get', spec.product, spec.scope);
  const base = securityOf[spec.auth ?? 'public'].map((r) =>
    'organizationKey' in r ? { organizationKey: [scope] } : r,
  );
  const scheme = spec.capability && capabilitySchemes[spec.capability];
  if (!scheme) return base;
  return [...(base.length === 0 ? [{}] : base), { [scheme]: [] }];
}

/** The tags, in the order the docs list them. */
const tagDescriptions: Record<string, string> = {
  'Agent exchange': 'Services, prices, jobs, payments and signed receipts.',
  'Agent registry': 'Agents register (and get their API key once) and find each other.',
  Discovery: 'The service’s agent card and how to obtain access.',
  Referrals: 'Referral codes from registered agents; later revenue is attributed to them.',
  Marketplace: 'Listings that registered agents publish and anyone searches.',
  Logistics: 'Delivery of a job’s results: webhook, polling, on-chain anchoring, agent hand-off.',
  Agreements: 'Terms between two agents, accepted with a wallet signature over their hash.',
  'Revenue and treasury': 'Revenue from confirmed receipts (operator) and the treasury’s addresses.',
  Commercial: 'Licenses through a crypto checkout, the TRIAL, and the randomized-amount payment gate.',
  Organization: 'An organization’s own API keys, each with a name and scopes, shown once.',
  Administration:
    'The operator’s administration: licenses issued by hand, suspended, resumed, revoked and rotated; agents’ keys; the audit.',
  Status: 'Readiness, providers, privacy claims and the state of advanced modules.',
  'Proof workflows': 'Workflows from templates, their audited stages, public verification and the log.',
  'Blind policy proofs': 'Groth16 proofs that private inputs satisfy a policy, and their verification.',
  Governance: 'Private rooms, proposals, anonymous ballots and the published tally.',
  'Treasury coordination': 'Treasury requests, m-of-n approvals and spending limits.',
  'Sealed auctions': 'Committed bids, the reveal window and the published result.',
};

function add(into: Map<number, Set<string>>, status: number, ...codes: string[]) {
  let set = into.get(status);
  if (!set) into.set(status, (set = new Set()));
  for (const c of codes) set.add(c);
}

/**
 * The problems the pipeline around a route can answer with (app.ts and RouteTable.router, in order):
 * load shedding, Bearer-only and the rate limit; for POST the media type, size, JSON, depth and idempotency checks;
 * the input guard and zod on params, query and body; the auth mode; the route's own budget; the
 * license's product line and quota.
 */
export function pipelineProblems(
  spec: Pick<
    AnyRoute,
    'method' | 'path' | 'auth' | 'budget' | 'product' | 'quota' | 'secretReply' | 'operatorRole'
  >,
) {
  const out = new Map<number, Set<string>>();
  add(out, 400, 'validation_failed');
  // A path segment that is not valid percent-encoding never reaches the route.
  if (spec.path.includes('{')) add(out, 400, 'bad_request');
  add(out, 401, 'unauthorized');
  add(out, 429, 'rate_limited');
  // Load shedding (api/http/overload.ts), which spares liveness and readiness.
  if (!(spec.method === 'get' && (spec.path === '/api/health' || spec.path === '/api/v1/readiness')))
    add(out, 503, 'overloaded');
  if (spec.method !== 'get') {
    add(out, 400, 'malformed_json', 'json_too_deep');
    add(out, 413, 'payload_too_large');
    add(out, 415, 'unsupported_media_type');
  }
  if (spec.method === 'post') {
    add(out, 400, 'invalid_idempotency_key');
    add(out, 409, 'idempotency_conflict', 'idempotency_in_progress');
    if (spec.secretReply) add(out, 409, 'idempotency_reply_withheld');
  }
  const mode = spec.auth ?? 'public';
  // A named operator key whose role falls short of the route's (a write needs admin unless it says).
  if (
    (mode === 'operator' || mode === 'job' || mode === 'operator-or-license') &&
    operatorRoleOf(spec) !== 'read-only'
  )
    add(out, 403, 'operator_role_insufficient');
  switch (mode) {
    case 'operator':
      add(out, 503, 'operator_disabled');
      add(out, 401, 'key_revoked');
      break;
    case 'agent':
    case 'agent-optional':
    case 'job':
    case 'operator-or-license':
      // A license key that was ours but expired or was revoked (or its signing key was) is refused
      // with its own code.
      add(out, 401, 'license_expired', 'license_revoked', 'license_key_revoked', 'license_suspended');
      add(out, 401, 'key_revoked');
      add(out, 403, 'insufficient_scope');
      break;
    default:
      break;
  }
  if (spec.budget) add(out, 429, 'rate_limited');
  const licensed = spec.auth === 'operator-or-license' || spec.auth === 'agent-optional';
  if (licensed && spec.product) add(out, 403, 'license_product_not_included');
  if (licensed && spec.product && spec.quota) add(out, 403, 'license_quota_exhausted');
  return out;
}

/** A route's description, with the operator role it needs where that is not the rule's. */
function describedRole(spec: AnyRoute): string | undefined {
  if (spec.auth !== 'operator' || operatorRoleOf(spec) !== 'support') return spec.description;
  const role = 'An operator key with the role `support` (or `admin`) may call it.';
  return spec.description ? `${spec.description} ${role}` : role;
}

/** Every problem a route can answer with: the pipeline's and its own, by status. */
export function routeProblems(spec: AnyRoute): Map<number, string[]> {
  const all = pipelineProblems(spec);
  for (const [status, codes] of Object.entries(spec.problems ?? ({} as ProblemCodes)))
    add(all, Number(status), ...(codes ?? []));
  return new Map([...all].sort(([a], [b]) => a - b).map(([s, codes]) => [s, [...codes].sort()]));
}

const problemRef = { $ref: '#/components/schemas/Problem' };
const retryAfter = {
  'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer' as const } },
};
const wwwAuthenticate = {
  'WWW-Authenticate': {
    description: 'The scheme to authenticate with (Bearer)',
    schema: { type: 'string' as const },
  },
};

function problemResponse(status: number, codes: string[], described?: string) {
  const lead = described ?? statusTitles[status] ?? 'Problem';
  return {
    description: `${lead}. Problem codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`,
    ...(status === 429 || status === 503
      ? { headers: retryAfter }
      : status === 401
        ? { headers: wwwAuthenticate }
        : {}),
    content: {
      'application/problem+json': {
        schema: {
          type: 'object' as const,
          allOf: [
            problemRef,
            { type: 'object' as const, properties: { code: { type: 'string' as const, enum: codes } } },
          ],
        },
      },
    },
  };
}

function registerRoute(registry: OpenAPIRegistry, spec: AnyRoute): void {
  const responses: RouteConfig['responses'] = {};
  for (const [status, r] of Object.entries(spec.responses)) {
    responses[status] = {
      description: r.description,
      ...(r.headers ? { headers: r.headers } : {}),
      ...(r.schema ? { content: { [r.contentType ?? 'application/json']: { schema: r.schema } } } : {}),
    };
  }
  for (const [status, r] of Object.entries(spec.responses)) {
    if (Number(status) >= 400 && !r.schema && !routeProblems(spec).has(Number(status))) {
      throw new Error(`${spec.operationId}: ${status} is declared without its problem codes`);
    }
  }
  for (const [status, codes] of routeProblems(spec)) {
    const own = spec.responses[status];
    // A status the route documents with its own body (503 with a readiness report) keeps it; where
    // the route also raises problems of that status itself (createJob's 402: a refused x402 payment),
    // the problem document is listed beside the body.
    if (own?.schema) {
      if (
        spec.problems?.[status]?.length &&
        (own.contentType ?? 'application/json') !== 'application/problem+json'
      ) {
        const problem = problemResponse(status, codes, own.description);
        const mine = responses[String(status)] as { content?: Record<string, unknown> };
        responses[String(status)] = {
          ...mine,
          description: problem.description,
          content: { ...mine.content, ...problem.content },
        };
      }
      continue;
    }
    responses[String(status)] = problemResponse(status, codes, own?.description);
  }
  responses.default = {
    description: 'Any other failure, as an RFC 9457 problem document (5xx: try again later).',
    content: { 'application/problem+json': { schema: problemSchema } },
  };
  registry.registerPath({
    method: spec.method,
    path: spec.path,
    operationId: spec.operationId,
    summary: spec.summary,
    ...(describedRole(spec) ? { description: describedRole(spec) } : {}),
    ...(spec.tags ? { tags: spec.tags } : {}),
    security: securityOfRoute(spec),
    request: {
      ...(spec.params ? { params: spec.params } : {}),
      ...(spec.query ? { query: spec.query } : {}),
      ...(spec.method === 'post' || spec.requestHeaders
        ? {
            headers: z.object({
              ...(spec.method === 'post'
                ? { 'Idempotency-Key': z.string().min(16).max(255).optional() }
                : {}),
              ...spec.requestHeaders?.shape,
            }),
          }
        : {}),
      ...(spec.body
        ? {
            body: {
              description:
                spec.bodyLimit === 'large'
                  ? 'At most BODY_LIMIT_BYTES (65,536 by default); a longer body is 413 payload_too_large before it is read.'
                  : `At most ${routeBodyLimit(spec, Infinity)} bytes; a longer body is 413 payload_too_large before it is read.`,
              content: { 'application/json': { schema: spec.body } },
              required: true,
            },
          }
        : {}),
    },
    responses,
  });
}

/** The public address of each route table: A at `base`, B at `api`, C at `site`. */
export interface TableUrls {
  base: string;
  api: string;
  site: string;
}

const license = (urls: TableUrls) => ({
  name: 'Proprietary: the service is licensed through its checkout (TRIAL, Starter, Business, Enterprise)',
  url: `${urls.base}/api/acquisition`,
});

function buildDocument(
  parts: Array<{ table: RouteTable; server?: { url: string; description: string } }>,
  info: { title: string; version: string; description: string },
  server: { url: string; description: string },
  urls: TableUrls,
) {
  const registry = new OpenAPIRegistry();
  const routes = parts.flatMap((p) =>
    p.table
      .list()
      .filter((r) => !r.hidden)
      .map((r) => ({ r, p })),
  );
  const schemes = new Set(routes.flatMap(({ r }) => securityOfRoute(r).flatMap(Object.keys)));
  for (const [name, description] of Object.entries(securitySchemes)) {
    if (!schemes.has(name)) continue;
    registry.registerComponent('securitySchemes', name, { type: 'http', scheme: 'bearer', description });
  }
  for (const { r } of routes) registerRoute(registry, r);
  const used = new Set(routes.flatMap(({ r }) => r.tags ?? []));
  const doc = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: { ...info, license: license(urls) },
    servers: [server],
    tags: Object.entries(tagDescriptions)
      .filter(([name]) => used.has(name))
      .map(([name, description]) => ({ name, description })),
  });
  // A table served at another base than the document's names its own server on each of its paths.
  for (const { r, p } of routes) {
    if (p.server && doc.paths?.[r.path]) doc.paths[r.path]!.servers = [p.server];
  }
  return doc;
}

/** `/openapi.json`: the exchange table (the agent exchange). */
export function exchangeDocument(tables: RouteTables, version: string, urls: TableUrls) {
  return buildDocument(
    [{ table: tables.exchange }],
    {
      title: 'proof-exchange agent exchange API',
      version,
      description:
        'Discover services, price and create jobs, pay for them, fetch signed receipts, and trade with other agents.',
    },
    { url: urls.base, description: 'The agent exchange (BASE_URL)' },
    urls,
  );
}

/** `/openapi/platform.json`: the commercial table at API_URL (per path) and the site table at SITE_URL. */
export function platformDocument(tables: RouteTables, version: string, urls: TableUrls) {
  return buildDocument(
    [
      {
        table: tables.commercial,
        server: { url: urls.api, description: 'The commercial and status API (API_URL)' },
      },
      { table: tables.site },
    ],
    {
      title: 'proof-exchange platform API',
      version,
      description:
        'Commercial checkout and status routes (/api/v1, served at API_URL) and the public proof-workflow, blind-policy, governance, treasury and auction routes (served at SITE_URL).',
    },
    { url: urls.site, description: 'The site and its API routes (SITE_URL)' },
    urls,
  );
}
