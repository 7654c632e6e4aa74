// Liveness and readiness: GET /api/health (the first route of the exchange table) and /api/v1/readiness (the
// commercial table), ready only when every check the web process was given passes (api/wiring.ts lists them).
import { z } from 'zod';
import { env } from '../../shared/platform/env';
import { checkDb, checkQueues, checkRedis, sharedRun } from '../http/health-checks';
import { readinessReport } from '../http/readiness';
import type { ReadinessChecks } from '../http/readiness';
import type { RouteTable } from '../http/route';
import { AGENT_EXCHANGE_VERSION, signingKeySchema, signingKeyView } from '../views/exchange';

export function readinessRoutes(table: RouteTable, checks: ReadinessChecks): RouteTable {
  const report = z.object({ ready: z.boolean(), checks: z.record(z.string(), z.unknown()) });
  // Every check at most once per READINESS_CACHE_MS, however many ask.
  const run = sharedRun(env.READINESS_CACHE_MS, (deps) => readinessReport(checks, deps));
  return table.add({
    method: 'get',
    path: '/api/v1/readiness',
    operationId: 'readiness',
    summary: 'Ready only when every dependency is; each check listed',
    tags: ['Status'],
    responses: {
      200: { description: 'Ready', schema: report },
      503: {
        description: 'Not ready; the failing checks say why',
        schema: report,
        headers: {
          'Retry-After': { description: 'Seconds before asking again', schema: { type: 'integer' } },
        },
      },
    },
    handler: async ({ deps }) => {
      const { ready, checks: results } = await run(deps);
      return {
        status: ready ? 200 : 503,
        headers: { 'Cache-Control': 'no-store', ...(ready ? {} : { 'Retry-After': '5' }) },
        body: { ready, checks: results },
      };
    },
  });
}

export function healthRoutes(table: RouteTable): RouteTable {
  // The dependency summary, probed at most once per READINESS_CACHE_MS however many ask.
  const summary = sharedRun(env.READINESS_CACHE_MS, async (deps) => {
    const [db, redis, queues] = await Promise.all([checkDb(deps), checkRedis(deps), checkQueues(deps)]);
    return { db, redis, queues };
  });
  return table.add({
    method: 'get',
    path: '/api/health',
    operationId: 'health',
    summary: 'Liveness and a summary of the dependencies',
    tags: ['Agent exchange'],
    responses: {
      200: {
        description: 'The process is alive; `status` says whether its dependencies are',
        schema: z.object({
          status: z.enum(['ok', 'degraded']),
          version: z.string(),
          time: z.string(),
          checks: z.record(z.string(), z.unknown()),
          signingKey: signingKeySchema,
        }),
      },
    },
    handler: async ({ deps }) => {
      const checks = await summary(deps);
      return {
        status: 200,
        headers: { 'Cache-Control': 'no-store' },
        body: {
          status: checks.db.ok && checks.redis.ok && checks.queues.ok ? 'ok' : 'degraded',
          version: AGENT_EXCHANGE_VERSION,
          time: new Date().toISOString(),
          // Whether each answers, never how much work waits: queue counts are on /metrics alone.
          checks,
          signingKey: signingKeyView(),
        },
      };
    },
  });
}
