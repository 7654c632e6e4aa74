// Authentication: operator token (constant-time), agent API keys and license keys through resolvers.
import type { Request } from 'express';
import { safeEqual } from '../../shared/crypto';
import { AppError, unauthorized } from '../../shared/errors';
import type { AppDeps } from '../deps';

export type AuthMode = 'public' | 'operator' | 'agent' | 'agent-optional' | 'operator-or-license';

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

export function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (m) return m[1];
  const basic = /^Basic\s+(\S+)\s*$/i.exec(header);
  if (basic) {
    // Browsers (Bull Board) send the operator token as the Basic password.
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    return decoded.slice(decoded.indexOf(':') + 1);
  }
  return undefined;
}

export function isOperator(token: string | undefined, deps: AppDeps): boolean {
  return !!token && !!deps.operatorToken && safeEqual(token, deps.operatorToken);
}

async function resolveKey(token: string, deps: AppDeps): Promise<Principal | null> {
  const prefix = token.slice(0, token.indexOf('_') + 1);
  const resolver = resolvers.get(prefix);
  return resolver ? resolver(token, deps) : null;
}

export async function authenticate(req: Request, deps: AppDeps, mode: AuthMode): Promise<Principal> {
  const token = bearerToken(req);
  if (mode === 'public') return { kind: 'anonymous' };
  if (mode === 'operator') {
    if (!deps.operatorToken) {
      throw new AppError(
        503,
        'operator_disabled',
        'Operator routes are disabled: OPERATOR_TOKEN is not configured.',
      );
    }
    if (!isOperator(token, deps))
      throw unauthorized('This route needs the operator token as a Bearer token.');
    return { kind: 'operator' };
  }
  if (mode === 'operator-or-license') {
    if (isOperator(token, deps)) return { kind: 'operator' };
    const principal = token ? await resolveKey(token, deps) : null;
    if (principal?.kind === 'license') return principal;
    throw unauthorized('This route needs the operator token or a valid license key as a Bearer token.');
  }
  // agent / agent-optional
  if (!token) {
    if (mode === 'agent-optional') return { kind: 'anonymous' };
    throw unauthorized(
      'This route needs an agent API key (Authorization: Bearer ak_…). POST /api/registry/register issues one.',
    );
  }
  const principal = await resolveKey(token, deps);
  if (!principal || principal.kind !== 'agent') {
    if (mode === 'agent-optional' && principal?.kind === 'license') return principal;
    throw unauthorized('The API key is not valid.');
  }
  return principal;
}
