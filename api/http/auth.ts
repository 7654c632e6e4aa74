// Credentials: one resolver for every request (Bearer only: operator token in constant time, agent API
// keys and license keys through the resolvers the web process lists), resolved once and shared by the
// rate limiter, the idempotency layer and the routes. Basic auth belongs to Bull Board alone (`admin.ts`).
import type { Request, RequestHandler } from 'express';
import { capabilityPrefixes, isCapability } from '../../shared/platform/capabilities';
import { safeEqual } from '../../shared/platform/crypto';
import type { JobAccess } from '../../shared/jobs/access';
import type { LicensePrincipal } from '../../shared/licensing/licenses';
import { BOOTSTRAP_OPERATOR, roleAllows } from '../../shared/licensing/operators';
import type { OperatorIdentity, OperatorRole } from '../../shared/licensing/operators';
import { AppError, unauthorized } from '../../shared/platform/errors';
import type { AppDeps } from '../deps';

/**
 * What a route takes as its credential. The OpenAPI document's security requirements are derived
 * from it (`securityOf` in openapi.ts), so a route's declared mode is both what runs and what is shown.
 * * `operator-optional`: public; the operator token, when sent and valid, shows more.
 * * `provider-token`: a Bearer token issued by the private-payments provider, required here and
 *   passed on to the provider unread (the service cannot check it itself).
 * * `agent-optional`: an agent or license key when sent; a job's capability (jt_…) passes as an
 *   anonymous caller holding it (the route checks it against the job it names).
 * * `job`: a route on one job. Any credential that can open a job passes (the operator token, an agent
 *   or license key, a job's capability) and none at all; the route then opens the job only for the
 *   caller shared/jobs/access.ts allows, and answers everyone else 404 as for a job that does not exist.
 */
export type AuthMode =
  | 'public'
  | 'operator'
  | 'operator-optional'
  | 'agent'
  | 'agent-optional'
  | 'job'
  | 'operator-or-license'
  | 'provider-token';

export type Principal =
  | { kind: 'anonymous' }
  /** The bootstrap operator token (an admin with no name), or a named operator key (opk_…) with its role. */
  | ({ kind: 'operator' } & OperatorIdentity)
  /** `network`: the tag of the client network that registered the agent (null for agents made before). */
  | { kind: 'agent'; agentId: string; keyId: string; network: string | null }
  /** A license key, or one of its organization's API keys (rk_…) with the scopes it was given. */
  | LicensePrincipal;

/**
 * Resolves a bearer credential of one prefix (ak_… agent keys, lk_… license keys, rk_… organization
 * keys, opk_… operator keys) to a principal.
 */
export type KeyResolver = (token: string, deps: AppDeps) => Promise<Principal | null>;
/** A resolver for each key prefix the product lines issue (the prefix ends with `_`). */
export type KeyResolvers = Readonly<Record<`${string}_`, KeyResolver>>;
let resolvers = new Map<string, KeyResolver>();

/**
 * The keys the API takes besides the operator token: createApp gives the web process's list
 * (api/wiring.ts) before any request is served.
 */
export function acceptKeys(list: KeyResolvers): void {
  resolvers = new Map(Object.entries(list));
}

/**
 * Whether a token is shaped as one this service issues: a capability (256 random bits), an agent or
 * organization key (256 random bits), a license token (an ed25519 signature). No request budget lets
 * anyone guess one of those; only a configured secret (the operator token, a metrics token) can be.
 */
export function isIssuedToken(token: string): boolean {
  return isCapability(token) || resolvers.has(token.slice(0, token.indexOf('_') + 1));
}

/** The Bearer token of a request; any other scheme is no credential here. */
export function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  return /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
}

export function isOperator(token: string | undefined, deps: AppDeps): boolean {
  return !!token && !!deps.operatorToken && safeEqual(token, deps.operatorToken);
}

/** What a request's Authorization header amounts to. */
export interface Credential {
  /** The Bearer token, when one was sent. */
  token: string | undefined;
  /** The principal it authenticates; null when none was sent or it is not ours (or no longer valid). */
  principal: Exclude<Principal, { kind: 'anonymous' }> | null;
  /** A license that was ours but is expired or revoked: its own 401 when a route needs it. */
  refusal: AppError | undefined;
}

const credentials = new WeakMap<Request, Promise<Credential>>();

/** Resolves the request's credential once; later calls share the answer. */
export function resolveCredential(req: Request, deps: AppDeps): Promise<Credential> {
  let found = credentials.get(req);
  if (!found) {
    found = resolveToken(bearerToken(req), deps);
    credentials.set(req, found);
  }
  return found;
}

/** What a Bearer token (or Bull Board's Basic password) amounts to, resolved afresh. */
export async function resolveToken(token: string | undefined, deps: AppDeps): Promise<Credential> {
  if (!token) return { token, principal: null, refusal: undefined };
  if (isOperator(token, deps))
    return { token, principal: { kind: 'operator', ...BOOTSTRAP_OPERATOR }, refusal: undefined };
  const resolver = resolvers.get(token.slice(0, token.indexOf('_') + 1));
  if (!resolver) return { token, principal: null, refusal: undefined };
  try {
    const principal = await resolver(token, deps);
    return {
      token,
      principal: principal && principal.kind !== 'anonymous' ? principal : null,
      refusal: undefined,
    };
  } catch (err) {
    if (err instanceof AppError && err.status === 401) return { token, principal: null, refusal: err };
    throw err;
  }
}

/** A stable name of an authenticated caller, for buckets and scopes (no secret in it). */
export function principalKey(principal: Exclude<Principal, { kind: 'anonymous' }>): string {
  switch (principal.kind) {
    case 'operator':
      return principal.operatorId ? `operator:${principal.operatorId}` : 'operator';
    case 'agent':
      return `agent:${principal.agentId}`;
    case 'license':
      return `license:${principal.licenseId}`;
  }
}

/**
 * The API takes Bearer credentials only. A browser keeps a Bull Board (Basic) login and sends it
 * again unasked; refusing every other scheme keeps that login from acting as an ambient credential.
 */
export const bearerOnly: RequestHandler = (req, _res, next) => {
  const header = req.headers.authorization;
  if (header !== undefined && !/^Bearer\s+\S+\s*$/i.test(header)) {
    throw unauthorized('The API takes Authorization: Bearer <token> only.', { 'WWW-Authenticate': 'Bearer' });
  }
  next();
};

export async function authenticate(req: Request, deps: AppDeps, mode: AuthMode): Promise<Principal> {
  if (mode === 'public') return { kind: 'anonymous' };
  if (mode === 'provider-token') {
    if (!bearerToken(req)) {
      throw unauthorized(
        'Send the access token from the provider’s login as Authorization: Bearer <ACCESS_TOKEN>.',
        { 'WWW-Authenticate': 'Bearer' },
      );
    }
    return { kind: 'anonymous' };
  }
  const { token, principal, refusal } = await resolveCredential(req, deps);
  if (mode === 'operator-optional') {
    return principal?.kind === 'operator' ? principal : { kind: 'anonymous' };
  }
  if (mode === 'operator') {
    if (principal?.kind === 'operator') return principal;
    if (!deps.operatorToken && !refusal) {
      throw new AppError(
        503,
        'operator_disabled',
        'Operator routes are disabled: OPERATOR_TOKEN is not configured.',
      );
    }
    throw (
      refusal ?? unauthorized('This route needs the operator token or an operator key as a Bearer token.')
    );
  }
  if (mode === 'operator-or-license') {
    if (principal?.kind === 'operator' || principal?.kind === 'license') return principal;
    throw (
      refusal ?? unauthorized('This route needs the operator token or a valid license key as a Bearer token.')
    );
  }
  // agent / agent-optional / job
  if (!token) {
    if (mode === 'agent-optional' || mode === 'job') return { kind: 'anonymous' };
    throw unauthorized(
      'This route needs an agent API key (Authorization: Bearer ak_…). POST /api/registry/register issues one.',
    );
  }
  if (principal?.kind === 'agent') return principal;
  if (mode === 'agent-optional' || mode === 'job') {
    if (principal?.kind === 'license') return principal;
    if (mode === 'job' && principal?.kind === 'operator') return principal;
    // A capability is no principal: whether it opens anything is the job's to say.
    if (!principal && !refusal && isJobCapability(token)) return { kind: 'anonymous' };
  }
  throw refusal ?? unauthorized('The API key is not valid.');
}

/**
 * The operator role a route needs: its own, else `read-only` to read and `admin` to change anything.
 * An operator whose role falls short is refused 403 `operator_role_insufficient`, with nothing done.
 */
export function requireOperatorRole(
  auth: Extract<Principal, { kind: 'operator' }>,
  needed: OperatorRole,
): void {
  if (roleAllows(auth.role, needed)) return;
  throw new AppError(
    403,
    'operator_role_insufficient',
    `This needs an operator key with the role ${needed}${needed === 'admin' ? '' : ' or above'}; ${auth.name}'s role is ${auth.role}.`,
    { extra: { role: auth.role, needed } },
  );
}

/** Whether a Bearer token is shaped as a job's capability (whether it is one, only the job can say). */
export const isJobCapability = (token: string): boolean => token.startsWith(capabilityPrefixes.job);

/** What a request brings to a job: its principal and the Bearer token it sent. */
export const jobAccess = (req: Request, auth: Principal): JobAccess => ({
  caller: auth,
  token: bearerToken(req),
});
