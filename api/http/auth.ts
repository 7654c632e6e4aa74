// Credentials: one resolver for every request (Bearer only: operator token in constant time, agent API
// keys and license keys through registered resolvers), resolved once and shared by the rate limiter,
// the idempotency layer and the routes. Basic auth belongs to Bull Board alone (`admin.ts`).
import type { Request, RequestHandler } from 'express';
import { safeEqual } from '../../shared/crypto';
import { AppError, unauthorized } from '../../shared/errors';
import type { AppDeps } from '../deps';

/**
 * What a route takes as its credential. The OpenAPI document's security requirements are derived
 * from it (`securityOf` in openapi.ts), so a route's declared mode is both what runs and what is shown.
 * * `operator-optional`: public; the operator token, when sent and valid, shows more.
 * * `provider-token`: a Bearer token issued by the private-payments provider, required here and
 *   passed on to the provider unread (the service cannot check it itself).
 */
export type AuthMode =
  | 'public'
  | 'operator'
  | 'operator-optional'
  | 'agent'
  | 'agent-optional'
  | 'operator-or-license'
  | 'provider-token';

export type Principal =
  | { kind: 'anonymous' }
  | { kind: 'operator' }
  | { kind: 'agent'; agentId: string; keyId: string }
  | { kind: 'license'; licenseId: string; tier: string; organization: string };

/** Resolves a bearer credential of one prefix (ak_… agent keys, lk_… license keys) to a principal. */
export type KeyResolver = (token: string, deps: AppDeps) => Promise<Principal | null>;
const resolvers = new Map<string, KeyResolver>();

export function registerKeyResolver(prefix: string, resolver: KeyResolver): void {
  resolvers.set(prefix, resolver);
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
    found = resolve(bearerToken(req), deps);
    credentials.set(req, found);
  }
  return found;
}

async function resolve(token: string | undefined, deps: AppDeps): Promise<Credential> {
  if (!token) return { token, principal: null, refusal: undefined };
  if (isOperator(token, deps)) return { token, principal: { kind: 'operator' }, refusal: undefined };
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
      return 'operator';
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
    if (!deps.operatorToken) {
      throw new AppError(
        503,
        'operator_disabled',
        'Operator routes are disabled: OPERATOR_TOKEN is not configured.',
      );
    }
    if (principal?.kind !== 'operator')
      throw unauthorized('This route needs the operator token as a Bearer token.');
    return principal;
  }
  if (mode === 'operator-or-license') {
    if (principal?.kind === 'operator' || principal?.kind === 'license') return principal;
    throw (
      refusal ?? unauthorized('This route needs the operator token or a valid license key as a Bearer token.')
    );
  }
  // agent / agent-optional
  if (!token) {
    if (mode === 'agent-optional') return { kind: 'anonymous' };
    throw unauthorized(
      'This route needs an agent API key (Authorization: Bearer ak_…). POST /api/registry/register issues one.',
    );
  }
  if (principal?.kind === 'agent') return principal;
  if (mode === 'agent-optional' && principal?.kind === 'license') return principal;
  throw refusal ?? unauthorized('The API key is not valid.');
}
