// Rate limits, counted in Redis so every web process shares them (an in-memory limiter stands in
// while Redis is down rather than failing requests):
// * every request spends from its client address's bucket;
// * a request whose credential authenticated also spends from that caller's bucket — a token that
//   authenticates nothing earns no bucket of its own;
// * a route may declare its own per-address budget (anonymous proving, Groth16 verification);
// * `inFlightSlot` caps how much queued work one caller may have outstanding.
import { randomBytes } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { sha256Hex } from '../../shared/crypto';
import { AppError } from '../../shared/errors';
import { logger } from '../../shared/log';
import { untagged } from '../../shared/redis';
import type { AppDeps } from '../deps';
import { principalKey, resolveCredential } from './auth';
import type { Principal } from './auth';

/** The client's address: the socket's, or the one TRUST_PROXY hops of X-Forwarded-For vouch for. */
export const clientAddress = (req: Request): string => req.ip ?? req.socket.remoteAddress ?? 'unknown';

/** Who a request counts as for budgets and scopes: the authenticated caller, else its address. */
export const callerKey = (principal: Principal | null, req: Request): string =>
  principal && principal.kind !== 'anonymous' ? principalKey(principal) : `addr:${clientAddress(req)}`;

type Limiter = RateLimiterRedis;
const limiters = new WeakMap<AppDeps, Map<string, Limiter>>();

function limiter(deps: AppDeps, name: string, points: number): Limiter {
  let byName = limiters.get(deps);
  if (!byName) limiters.set(deps, (byName = new Map()));
  const key = `${name}:${points}`;
  let l = byName.get(key);
  if (!l) {
    l = new RateLimiterRedis({
      storeClient: deps.redis,
      keyPrefix: `${untagged(deps.queues.prefix)}:rl:${name}`,
      points,
      duration: 60,
      insuranceLimiter: new RateLimiterMemory({ points, duration: 60 }),
    });
    byName.set(key, l);
  }
  return l;
}

/** Spends one point of `id`'s bucket; 429 with Retry-After when it is empty. */
async function spend(l: Limiter, id: string, res: Response, what: string): Promise<void> {
  try {
    const r = await l.consume(sha256Hex(id).slice(0, 32));
    const remaining = Number(res.getHeader('RateLimit-Remaining') ?? Infinity);
    if (r.remainingPoints < remaining) {
      res.setHeader('RateLimit-Limit', String(l.points));
      res.setHeader('RateLimit-Remaining', String(r.remainingPoints));
    }
  } catch (err) {
    if (err instanceof RateLimiterRes) {
      const retryAfter = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      throw new AppError(429, 'rate_limited', `Too many ${what}; retry after ${retryAfter} s.`, {
        headers: {
          'Retry-After': String(retryAfter),
          'RateLimit-Limit': String(l.points),
          'RateLimit-Remaining': '0',
        },
      });
    }
    throw err;
  }
}

export function rateLimit(deps: AppDeps): RequestHandler {
  if (!deps.rateLimit.enabled) return (_req, _res, next) => next();
  return async (req, res, next) => {
    await spend(limiter(deps, 'ip', deps.rateLimit.ipPerMinute), clientAddress(req), res, 'requests');
    // Only after the address paid: resolving a key may cost a database read.
    const { principal } = await resolveCredential(req, deps);
    if (principal) {
      await spend(
        limiter(deps, 'key', deps.rateLimit.keyPerMinute),
        principalKey(principal),
        res,
        'requests',
      );
    }
    next();
  };
}

/** A route's own budget, per client address; `anonymousOnly` exempts callers that authenticated. */
export interface RouteBudget {
  name: string;
  perMinute: (deps: AppDeps) => number;
  anonymousOnly?: boolean;
  what: string;
}

export async function spendRouteBudget(
  deps: AppDeps,
  budget: RouteBudget,
  req: Request,
  res: Response,
  auth: Principal,
): Promise<void> {
  if (!deps.rateLimit.enabled) return;
  if (budget.anonymousOnly && auth.kind !== 'anonymous') return;
  await spend(
    limiter(deps, `route:${budget.name}`, budget.perMinute(deps)),
    clientAddress(req),
    res,
    budget.what,
  );
}

const PENDING = 'pending:';
/** A reservation whose request died is forgotten after this long. */
const PENDING_TTL_MS = 60_000;

/**
 * Reserves one of `max` slots of a caller's outstanding work (e.g. proofs queued or running). Slots
 * are ids in a Redis sorted set; ids `stillBusy` no longer reports are released first. Returns
 * `commit(id)` to record the work under its id, or `release()` when nothing was created. A Redis
 * outage lets the request through (logged): the per-address budgets still hold.
 */
export async function inFlightSlot(
  deps: AppDeps,
  bucket: string,
  caller: string,
  max: number,
  stillBusy: (ids: string[]) => Promise<Set<string>>,
): Promise<{ commit(id: string): Promise<void>; release(): Promise<void> }> {
  const key = `${deps.queues.prefix}:inflight:${bucket}:${sha256Hex(caller).slice(0, 32)}`;
  const token = `${PENDING}${randomBytes(8).toString('hex')}`;
  const redis = deps.redis;
  try {
    const now = Date.now();
    const members = await redis.zrange(key, 0, -1, 'WITHSCORES');
    const ids: string[] = [];
    const stale: string[] = [];
    for (let i = 0; i < members.length; i += 2) {
      const id = members[i]!;
      if (id.startsWith(PENDING)) {
        if (now - Number(members[i + 1]) > PENDING_TTL_MS) stale.push(id);
      } else ids.push(id);
    }
    if (ids.length) {
      const busy = await stillBusy(ids);
      stale.push(...ids.filter((id) => !busy.has(id)));
    }
    if (stale.length) await redis.zrem(key, ...stale);
    await redis.zadd(key, now, token);
    await redis.pexpire(key, 3_600_000);
    if ((await redis.zcard(key)) > max) {
      await redis.zrem(key, token);
      throw new AppError(
        429,
        'too_many_in_flight',
        `At most ${max} of your requests may be queued or running at once; wait for one to finish.`,
        { headers: { 'Retry-After': '5' } },
      );
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    logger.warn({ err: (err as Error).message, bucket }, 'in-flight cap unavailable; request let through');
    return { commit: async () => undefined, release: async () => undefined };
  }
  return {
    commit: async (id) => {
      await redis
        .multi()
        .zrem(key, token)
        .zadd(key, Date.now(), id)
        .pexpire(key, 3_600_000)
        .exec()
        .catch(() => undefined);
    },
    release: async () => {
      await redis.zrem(key, token).catch(() => undefined);
    },
  };
}
