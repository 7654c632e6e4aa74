// What a request tells a domain service about its caller, derived once from the principal and the
// request (its network, the address it reached).
import type { Request } from 'express';
import type { OrderingCaller } from '../../shared/exchange/order';
import { unauthorized } from '../../shared/platform/errors';
import type { AppDeps } from '../deps';
import type { Principal } from './auth';
import { origin } from './links';
import { amountHolder } from './ratelimit';

/** The caller of createJob or an A2A SendMessage, as `orderJob` takes it. */
export const orderingCaller = (auth: Principal, req: Request, deps: AppDeps): OrderingCaller => ({
  agent: auth.kind === 'agent' ? { agentId: auth.agentId, network: auth.network } : null,
  licenseId: auth.kind === 'license' ? auth.licenseId : null,
  grantor:
    auth.kind === 'license'
      ? { licenseId: auth.licenseId, keyId: auth.keyId, keyGeneration: auth.keyGeneration }
      : null,
  holder: amountHolder(auth, req),
  base: origin(req, deps, 'base'),
});

/** The calling agent of an `auth: 'agent'` route (the platform already refused anyone else). */
export function agentIdOf(auth: Principal): string {
  if (auth.kind !== 'agent') throw unauthorized('This route needs an agent API key.');
  return auth.agentId;
}

/** Who administers a room and what it holds: the operator, or the license that created it. */
export const ownerOf = (auth: Principal): string => (auth.kind === 'license' ? auth.licenseId : 'operator');
