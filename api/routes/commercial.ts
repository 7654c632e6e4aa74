// Table B, commercial and status routes under /api/v1.
import { z } from 'zod';
import { migrationsCurrent } from '../../shared/db/migrate';
import { serviceSigningKey } from '../../shared/keys';
import type { AppDeps } from '../deps';
import { RouteTable } from '../http/route';
import type { Check } from './health';
import { checkDb, checkRedis, queueDepths } from './health';

export type ReadinessCheck = (deps: AppDeps) => Promise<Check>;

/** Product lines add their own readiness checks (circuit artifacts, chain adapters, …). */
const readinessChecks = new Map<string, ReadinessCheck>([
  ['db', checkDb],
  ['redis', checkRedis],
  [
    'migrations',
    async (deps) => {
      try {
        const { current, pending } = await migrationsCurrent(deps.db);
        return current ? { ok: true } : { ok: false, detail: `pending: ${pending.join(', ')}` };
      } catch (err) {
        return { ok: false, detail: (err as Error).message };
      }
    },
  ],
  [
    'queues',
    async (deps) => ((await queueDepths(deps)) ? { ok: true } : { ok: false, detail: 'queues unreachable' }),
  ],
  [
    'receiptKey',
    async () => {
      try {
        return { ok: true, detail: `ed25519 key ${serviceSigningKey().keyId}` };
      } catch (err) {
        return { ok: false, detail: (err as Error).message };
      }
    },
  ],
]);

export function registerReadinessCheck(name: string, check: ReadinessCheck): void {
  readinessChecks.set(name, check);
}

export function commercialRoutes(table = new RouteTable('commercial')): RouteTable {
  const report = z.object({ ready: z.boolean(), checks: z.record(z.string(), z.unknown()) });
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
      const entries = await Promise.all(
        [...readinessChecks].map(
          async ([name, check]) =>
            [name, await check(deps).catch((e: Error) => ({ ok: false, detail: e.message }))] as const,
        ),
      );
      const ready = entries.every(([, c]) => c.ok);
      return {
        status: ready ? 200 : 503,
        headers: { 'Cache-Control': 'no-store', ...(ready ? {} : { 'Retry-After': '5' }) },
        body: { ready, checks: Object.fromEntries(entries) },
      };
    },
  });
}
