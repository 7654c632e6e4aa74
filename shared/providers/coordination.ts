// Status of the coordination layer (governance, treasury, auctions: built in, backed by Postgres and the
// transparency log), of analysis providers (the local AI runtime, when configured), and of the advanced
// private-payout module, which this release does not include: it says so rather than pretend to pay.
import type { Knex } from 'knex';
import { probeLocalAi } from './probes';
import { env } from '../platform/env';
import { logSize } from '../platform/translog/pg-log';

async function timedDb(
  db: Knex,
): Promise<{ healthy: boolean; latencyMs: number | null; treeSize: number | null }> {
  const start = performance.now();
  try {
    const treeSize = await logSize(db);
    return { healthy: true, latencyMs: Math.round((performance.now() - start) * 10) / 10, treeSize };
  } catch {
    return { healthy: false, latencyMs: null, treeSize: null };
  }
}

export async function coordinationProviders(db: Knex) {
  const store = await timedDb(db);
  const provider = (name: string, description: string) => ({
    name,
    kind: 'built-in' as const,
    enabled: true,
    healthy: store.healthy,
    latencyMs: store.latencyMs,
    description,
  });
  return {
    providers: [
      provider(
        'governance',
        'Rooms, committees, proposals with sealed ballots; tally packages on the transparency log.',
      ),
      provider(
        'treasury',
        'Treasury requests, m-of-n approvals, per-period spending limits; records only, no funds move.',
      ),
      provider(
        'auctions',
        'Sealed-bid auctions with commit/reveal windows; outcome packages on the transparency log.',
      ),
    ],
    transparencyLog: { healthy: store.healthy, treeSize: store.treeSize },
    checkedAt: new Date().toISOString(),
  };
}

export async function intelligenceProviders() {
  const localAi = await probeLocalAi();
  return {
    providers: [
      {
        name: 'local-ai',
        kind: 'analysis' as const,
        ...localAi,
        model: env.LOCAL_AI_MODEL ?? null,
        description:
          'An OpenAI-compatible runtime the operator runs; the service sends it no private inputs.',
      },
    ],
    checkedAt: new Date().toISOString(),
  };
}

const advancedModules = [
  'payroll',
  'confidential_payments',
  'compensation',
  'vesting',
  'settlement',
] as const;

export function privatePayoutStatus() {
  return {
    module: 'private-payout',
    enabled: env.PRIVATE_PAYOUT_ENABLED,
    // Enabling the setting installs nothing: no payout module ships in this release.
    active: false,
    paysFunds: false,
    modules: advancedModules.map((name) => ({ name, available: false, enabled: false })),
    detail: env.PRIVATE_PAYOUT_ENABLED
      ? 'PRIVATE_PAYOUT_ENABLED is set, but no payout module is installed in this release; nothing is paid.'
      : 'Disabled (the default). Payroll, confidential payments, compensation, vesting and settlement are advanced modules not included in this release; the service pays nothing.',
  };
}
