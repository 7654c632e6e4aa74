// Rate limits, counted in Redis so every web process shares them (an in-memory limiter stands in
// while Redis is down rather than failing requests):
// * every request spends from its client network's bucket (an IPv4 address, an IPv6 /64);
// * a request whose credential authenticated also spends from that caller's bucket — a token that
//   authenticates nothing earns no bucket of its own;
// * a route may declare its own budget, counted per budget owner (`budgetKey`: a free agent counts as
//   the network that registered it, so minting agents multiplies nothing);
// * `inFlightSlot` caps how much queued work one budget owner may have outstanding;
// * a credential that authenticates nothing spends from its network's small failure budget
//   (AUTH_FAILURES_PER_MINUTE); once that is spent, the network's guessable credentials (configured
//   secrets, not issued keys) are refused unchecked.
import { randomBytes } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { LRUCache } from 'lru-cache';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { isCapability } from '../../shared/platform/capabilities';
import { clientNetwork, networkTag } from '../../shared/platform/client-network';
import { sha256Hex } from '../../shared/platform/crypto';
import { env } from '../../shared/platform/env';
import { AppError } from '../../shared/platform/errors';
import { logger } from '../../shared/platform/log';
import { amountHolderFor } from '../../shared/payments/amount-holds';
import type { AmountHolder } from '../../shared/payments/amount-holds';
import { untagged } from '../../shared/platform/redis';
import type { AppDeps } from '../deps';
import { bearerToken, isIssuedToken, isOperator, principalKey, resolveCredential } from './auth';
import type { Principal } from './auth';

/**
 * The client as per-address budgets count it: its address (the socket's, or the one TRUST_PROXY hops of
 * X-Forwarded-For vouch for), or for IPv6 its network of IPV6_PREFIX_LENGTH bits (a /64 by default).
 */
export const clientAddress = (req: Request): string =>
  clientNetwork(req.ip ?? req.socket.remoteAddress ?? 'unknown', env.IPV6_PREFIX_LENGTH);

/** The client network as it may be stored: a keyed hash, never the address. */
export const clientTag = (req: Request): string => networkTag(clientAddress(req));

/**
 * Who a request is, for scopes (idempotency keys, A2A message ids): the caller, else its network. Each
 * key of an organization is a caller of its own, so no key replays what another key was answered.
 */
export const callerKey = (principal: Principal | null, req: Request): string =>
  principal && principal.kind !== 'anonymous'
    ? principal.kind === 'license' && principal.keyId
      ? `${principalKey(principal)}:${principal.keyId}`
      : principalKey(principal)
    : `addr:${clientTag(req)}`;

/**
 * Whose budget a request spends: a license or the operator its own; an agent the network it was
 * registered from (agents are free to make: eight agents from one network share that network's
 * budget); an anonymous caller its network. Agents registered before networks were recorded count alone.
 */
export function budgetKey(principal: Principal | null, req: Request): string {
  if (!principal || principal.kind === 'anonymous') return `net:${clientTag(req)}`;
  if (principal.kind === 'agent' && principal.network) return `net:${principal.network}`;
  return principalKey(principal);
}

/**
 * Whose budget a unique amount is held on (`amountHolderFor`, the payments rule): the request's caller
 * as the rule sees it, with its budget owner and its network's.
 */
export function amountHolder(principal: Principal | null, req: Request, gate = false): AmountHolder {
  const standing =
    principal?.kind === 'operator'
      ? 'operator'
      : principal?.kind === 'license'
        ? principal.tier === 'TRIAL'
          ? 'trial'
          : 'license'
        : 'other';
  return amountHolderFor(
    { standing, budget: budgetKey(principal, req), network: budgetKey(null, req) },
    gate,
  );
}

/**
 * A bucket of `points` a window, counted in Redis, spent from local reservations: a web process takes
 * `batch` points of a bucket from Redis at a time (a hundredth of the budget, at least 1) and spends
 * them in memory, so most requests pay no Redis round trip. No more than `points` are ever spent in a
 * window across all processes (every point spent was counted in Redis first); a bucket may refuse
 * early by the points other web processes hold and have not spent yet, at most `batch - 1` each. When
 * the last reservation finds less room than a batch, it takes what is left, so one process alone can
 * spend the whole budget. A bucket found empty is refused locally until its window ends.
 * A bucket has one reservation in flight at a time: requests that find its points spent while one is
 * on its way wait for it and spend from it, so a request costs one point whether it comes alone or
 * with fifty others (each taking a batch of its own would spend the budget a batch a request).
 */
export class BatchedLimiter {
  readonly batch: number;
  /** Per bucket: points reserved and not yet spent, until the Redis window they came from ends. */
  private readonly local: LRUCache<string, { left: number; until: number; remaining: number }>;
  /** Per bucket: the reservation on its way to Redis, if any. */
  private readonly reserving = new Map<string, Promise<void>>();

  constructor(
    private readonly store: RateLimiterRedis,
    readonly points: number,
  ) {
    this.batch = Math.max(1, Math.floor(points / 100));
    this.local = new LRUCache({ max: LOCAL_BUCKETS });
  }

  /** Spends one point; throws RateLimiterRes (as the library does) when the bucket is empty. */
  consume(key: string): Promise<{ remainingPoints: number }> | { remainingPoints: number } {
    const now = Date.now();
    const held = this.local.get(key);
    if (held && held.until > now) {
      if (held.left > 0) {
        held.left--;
        return { remainingPoints: held.remaining + held.left };
      }
      if (held.remaining <= 0) throw refusal(held.until - now);
    }
    let reservation = this.reserving.get(key);
    if (!reservation) {
      reservation = this.reserve(key, now).finally(() => this.reserving.delete(key));
      this.reserving.set(key, reservation);
    }
    // Spent from what the reservation brought, like every request that waited on it.
    return reservation.then(() => this.consume(key));
  }

  /** Takes a batch of the bucket from Redis into the local reservation (or records it empty). */
  private async reserve(key: string, now: number): Promise<void> {
    let consumed: number;
    let msBeforeNext: number;
    try {
      const r = await this.store.consume(key, this.batch);
      consumed = r.consumedPoints;
      msBeforeNext = r.msBeforeNext;
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      consumed = err.consumedPoints;
      msBeforeNext = err.msBeforeNext;
    }
    // What this reservation may spend: the batch, or the room that was left before it.
    const granted = Math.max(0, Math.min(this.batch, this.points - (consumed - this.batch)));
    this.local.set(key, {
      left: granted,
      until: now + Math.max(1, msBeforeNext),
      remaining: Math.max(0, this.points - consumed),
    });
  }

  /** Points spent in the bucket's window across processes (reservations included); null if none. */
  async consumed(key: string): Promise<{ consumedPoints: number; msBeforeNext: number } | null> {
    const held = this.local.get(key);
    if (held && held.until > Date.now() && held.left === 0 && held.remaining === 0) {
      return { consumedPoints: this.points, msBeforeNext: held.until - Date.now() };
    }
    return this.store.get(key);
  }
}

/** Buckets a process keeps reservations for; the least recently used beyond this give theirs up. */
const LOCAL_BUCKETS = 100_000;

const refusal = (msBeforeNext: number) => new RateLimiterRes(0, Math.max(1, msBeforeNext));

type Limiter = BatchedLimiter;
const limiters = new WeakMap<AppDeps, Map<string, Limiter>>();

function limiter(deps: AppDeps, name: string, points: number, duration = 60): Limiter {
  let byName = limiters.get(deps);
  if (!byName) limiters.set(deps, (byName = new Map()));
  const key = `${name}:${points}:${duration}`;
  let l = byName.get(key);
  if (!l) {
    l = new BatchedLimiter(
      new RateLimiterRedis({
        storeClient: deps.redis,
        keyPrefix: `${untagged(deps.queues.prefix)}:rl:${name}`,
        points,
        duration,
        insuranceLimiter: new RateLimiterMemory({ points, duration }),
      }),
      points,
    );
    byName.set(key, l);
  }
  return l;
}

const bucketOf = (id: string) => sha256Hex(id).slice(0, 32);

function rateLimited(l: Limiter, msBeforeNext: number, what: string): AppError {
  const retryAfter = Math.max(1, Math.ceil(msBeforeNext / 1000));
  return new AppError(429, 'rate_limited', `Too many ${what}; retry after ${retryAfter} s.`, {
    headers: {
      'Retry-After': String(retryAfter),
      'RateLimit-Limit': String(l.points),
      'RateLimit-Remaining': '0',
    },
  });
}

/**
 * Spends one point of `id`'s bucket; 429 with Retry-After when it is empty. `quiet`: the bucket is not
 * shown in the RateLimit headers of a request that passes.
 */
async function spend(l: Limiter, id: string, res: Response, what: string, quiet = false): Promise<void> {
  try {
    const spent = l.consume(bucketOf(id));
    const r = spent instanceof Promise ? await spent : spent;
    const remaining = Number(res.getHeader('RateLimit-Remaining') ?? Infinity);
    if (!quiet && r.remainingPoints < remaining) {
      res.setHeader('RateLimit-Limit', String(l.points));
      res.setHeader('RateLimit-Remaining', String(r.remainingPoints));
    }
  } catch (err) {
    if (err instanceof RateLimiterRes) throw rateLimited(l, err.msBeforeNext, what);
    throw err;
  }
}

const failureLimiter = (deps: AppDeps) =>
  limiter(deps, 'auth-failures', deps.rateLimit.authFailuresPerMinute ?? env.AUTH_FAILURES_PER_MINUTE);
const FAILURES = 'failed credentials';

/**
 * Refuses a request carrying a credential while its network's failure budget is spent, before the
 * credential is looked at: guessing a token goes no faster than AUTH_FAILURES_PER_MINUTE a network,
 * and a right guess in a spent window is not confirmed. Every guess that fails spends from the budget
 * (spendAuthFailure) and meets 429 once it is spent, whatever its shape.
 */
async function refuseWhileFailing(deps: AppDeps, req: Request): Promise<void> {
  const l = failureLimiter(deps);
  const r = await l.consumed(bucketOf(clientAddress(req))).catch(() => null);
  if (r && r.consumedPoints >= l.points) throw rateLimited(l, r.msBeforeNext, FAILURES);
}

const failed = new WeakSet<Request>();

/**
 * Spends a point of the request's network failure budget: a credential it presented authenticated
 * nothing. Once per request, whoever finds out first; 429 once the budget is spent.
 */
export async function spendAuthFailure(deps: AppDeps, req: Request, res: Response): Promise<void> {
  if (!deps.rateLimit.enabled || failed.has(req)) return;
  failed.add(req);
  await spend(failureLimiter(deps), clientAddress(req), res, FAILURES, true);
}

/**
 * Marks a request whose Bearer token this service does not resolve: a mount that checks a token of its
 * own (`/metrics`, Bull Board) and counts its own failures, or a token meant for another party (the
 * payments provider's access token, passed on unread).
 */
export const tokenCheckedElsewhere: RequestHandler = (_req, res, next) => {
  res.locals.tokenCheckedElsewhere = true;
  next();
};

/**
 * Whether the request's credential could be a right guess: one this service configures (the operator
 * token, a metrics token, a Bull Board login, anything but a Bearer token) rather than issues. Only
 * those are checked against the failure budget before they are looked at, a Redis read each; a token
 * of an issued shape carries 256 random bits or a signature, so no budget makes a right one a guess,
 * and a network's spent budget does not hold up the keys and capabilities its honest clients hold.
 */
function guessable(req: Request, res: Response, deps: AppDeps): boolean {
  if (res.locals.tokenCheckedElsewhere) return true;
  const token = bearerToken(req);
  return !token || isOperator(token, deps) || !isIssuedToken(token);
}

export function rateLimit(deps: AppDeps): RequestHandler {
  if (!deps.rateLimit.enabled) return (_req, _res, next) => next();
  return async (req, res, next) => {
    await spend(limiter(deps, 'ip', deps.rateLimit.ipPerMinute), clientAddress(req), res, 'requests');
    if (req.headers.authorization !== undefined && guessable(req, res, deps))
      await refuseWhileFailing(deps, req);
    // Only after the address paid: resolving a key may cost a database read.
    const { token, principal } = await resolveCredential(req, deps);
    if (principal) {
      await spend(
        limiter(deps, 'key', deps.rateLimit.keyPerMinute),
        principalKey(principal),
        res,
        'requests',
      );
    } else if (token && !res.locals.tokenCheckedElsewhere && !isCapability(token)) {
      // A Bearer token that authenticates nothing, on any route: a guess at a credential. A
      // capability (jt_, cs_, gs_) is no principal: the route checks it against the one resource it
      // opens, and 256 random bits are not guessed at any rate the request budget allows.
      await spendAuthFailure(deps, req, res);
    }
    next();
  };
}

const windowSeconds = { minute: 60, hour: 3600, day: 86_400 } as const;

/**
 * A route's own budget: `points` per window for each budget owner (`budgetKey`). `paidExempt` exempts
 * the callers who pay (a license, the operator); a free agent never is, it spends its network's budget.
 */
export interface RouteBudget {
  name: string;
  points: (deps: AppDeps) => number;
  per?: keyof typeof windowSeconds;
  paidExempt?: boolean;
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
  if (budget.paidExempt && (auth.kind === 'license' || auth.kind === 'operator')) return;
  await spend(
    limiter(deps, `route:${budget.name}`, budget.points(deps), windowSeconds[budget.per ?? 'minute']),
    budgetKey(auth, req),
    res,
    budget.what,
  );
}

const PENDING = 'pending:';
/** A reservation whose request died is forgotten after this long. */
const PENDING_TTL_MS = 60_000;

/** The last reply of a MULTI, which fails as a whole when any command in it failed. */
function lastReply(replies: Array<[Error | null, unknown]> | null): number {
  if (!replies) throw new Error('transaction aborted');
  for (const [err] of replies) if (err) throw err;
  return Number(replies.at(-1)![1]);
}

/**
 * Reserves one of `max` slots of a caller's outstanding work (e.g. proofs queued or running). Slots
 * are ids in a Redis sorted set. The reservation and the count go in one round trip; ids of work that
 * has ended stay in the set until a count says the caller is over its cap, and only then are they
 * looked up (`stillBusy`) and dropped: a caller under its cap costs one round trip and no query, and
 * the count can only be too high, never let one more through. Returns `commit(id)` to record the work
 * under its id, or `release()` when nothing was created. A Redis outage lets the request through
 * (logged): the per-address budgets still hold.
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
    let count = lastReply(
      await redis.multi().zadd(key, now, token).pexpire(key, 3_600_000).zcard(key).exec(),
    );
    if (count > max) {
      const members = await redis.zrange(key, 0, -1, 'WITHSCORES');
      const ids: string[] = [];
      const stale: string[] = [];
      for (let i = 0; i < members.length; i += 2) {
        const id = members[i]!;
        if (id === token) continue;
        if (id.startsWith(PENDING)) {
          if (now - Number(members[i + 1]) > PENDING_TTL_MS) stale.push(id);
        } else ids.push(id);
      }
      if (ids.length) {
        const busy = await stillBusy(ids);
        stale.push(...ids.filter((id) => !busy.has(id)));
      }
      if (stale.length)
        count = lastReply(
          await redis
            .multi()
            .zrem(key, ...stale)
            .zcard(key)
            .exec(),
        );
    }
    if (count > max) {
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
