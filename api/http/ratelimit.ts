// Rate limits per IP and per credential, counted in Redis so every web process shares them;
// if Redis is down an in-memory limiter stands in rather than failing requests.
import type { RequestHandler } from 'express';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { sha256Hex } from '../../shared/crypto';
import { AppError } from '../../shared/errors';
import type { AppDeps } from '../deps';
import { bearerToken } from './auth';

export function rateLimit(deps: AppDeps): RequestHandler {
  if (!deps.rateLimit.enabled) return (_req, _res, next) => next();
  const make = (prefix: string, points: number) =>
    new RateLimiterRedis({
      storeClient: deps.redis,
      keyPrefix: `${deps.queues.prefix}:rl:${prefix}`,
      points,
      duration: 60,
      insuranceLimiter: new RateLimiterMemory({ points, duration: 60 }),
    });
  const byIp = make('ip', deps.rateLimit.ipPerMinute);
  const byKey = make('key', deps.rateLimit.keyPerMinute);

  return async (req, res, next) => {
    const token = bearerToken(req);
    const limiter = token ? byKey : byIp;
    const id = token ? sha256Hex(token).slice(0, 24) : (req.ip ?? 'unknown');
    try {
      const r = await limiter.consume(id);
      res.setHeader('RateLimit-Limit', String(limiter.points));
      res.setHeader('RateLimit-Remaining', String(r.remainingPoints));
      next();
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        const retryAfter = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
        throw new AppError(429, 'rate_limited', `Too many requests; retry after ${retryAfter} s.`, {
          headers: {
            'Retry-After': String(retryAfter),
            'RateLimit-Limit': String(limiter.points),
            'RateLimit-Remaining': '0',
          },
        });
      }
      throw err;
    }
  };
}
