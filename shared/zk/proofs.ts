// Reading blind policy proofs in Postgres: one row, the ones still in flight, the backend of the latest,
// and the proving times by policy. What a caller is shown of a row is ./views.ts.
import type { Db } from '../platform/db/knex';
import { notFound } from '../platform/errors';
import type { ProofRow } from './rows';

export async function findProof(db: Db, id: string): Promise<ProofRow | undefined> {
  return (await db('proofs').where({ id }).first()) as ProofRow | undefined;
}

export async function getProof(db: Db, id: string): Promise<ProofRow> {
  const row = await findProof(db, id);
  if (!row) throw notFound(`Proof ${id}`);
  return row;
}

/** Of these proof ids, the ones still queued or running. */
export async function proofsInFlight(db: Db, ids: string[]): Promise<Set<string>> {
  const rows = (await db('proofs')
    .whereIn('id', ids)
    .whereIn('status', ['queued', 'running'])
    .select('id')) as Array<{ id: string }>;
  return new Set(rows.map((r) => r.id));
}

/** The backend that made the latest proof (the web process cannot see the prover's choice otherwise). */
export async function lastProofBackend(db: Db): Promise<string | null> {
  const last = (await db('proofs')
    .where('status', 'succeeded')
    .orderBy('finished_at', 'desc')
    .first('backend')) as { backend: string | null } | undefined;
  return last?.backend ?? null;
}

export interface TimingStats {
  p50: number | null;
  p95: number | null;
}

export interface PolicyTimingStats {
  policy: string;
  count: number;
  totalMs: TimingStats;
  witnessMs: TimingStats;
  provingMs: TimingStats;
  queueMs: TimingStats;
}

/** p50/p95 of the last `limit` succeeded proofs, by policy. */
export async function provingStats(db: Db, limit = 200): Promise<PolicyTimingStats[]> {
  const pct = (col: string, p: number) => `percentile_cont(${p}) within group (order by ${col})`;
  const cols = ['total_ms', 'witness_ms', 'proving_ms', 'queue_ms'];
  const { rows } = await db.raw(
    `select policy, count(*)::int as count, ${cols
      .flatMap((c) => [`${pct(c, 0.5)} as ${c}_p50`, `${pct(c, 0.95)} as ${c}_p95`])
      .join(', ')}
     from (select * from proofs where status = 'succeeded' order by finished_at desc limit ?) recent
     group by policy order by policy`,
    [limit],
  );
  const round = (v: unknown) => (v === null || v === undefined ? null : Math.round(Number(v) * 100) / 100);
  return (rows as Array<Record<string, unknown>>).map((r) => {
    const stat = (c: string) => ({ p50: round(r[`${c}_p50`]), p95: round(r[`${c}_p95`]) });
    return {
      policy: String(r.policy),
      count: Number(r.count),
      totalMs: stat('total_ms'),
      witnessMs: stat('witness_ms'),
      provingMs: stat('proving_ms'),
      queueMs: stat('queue_ms'),
    };
  });
}
