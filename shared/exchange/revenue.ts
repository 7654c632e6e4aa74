// Revenue from confirmed payments: summed from the signed receipts (the amounts exactly as receipted),
// by asset, service, period and referral. Sums are numeric in SQL and strings here: never floats.
// Payments settled on a development chain (payments.development) are left out.
import type { Db } from '../platform/db/knex';

export interface RevenueQuery {
  from?: Date | undefined;
  to?: Date | undefined;
  period: 'day' | 'month';
}

const fields = {
  asset: "r.document->>'asset'",
  service: "r.document->>'serviceId'",
  amount: "(r.document->>'amount')::numeric",
  usd: "(r.document->>'usdCents')::numeric",
  decimals: "(r.document->>'decimals')::int",
};

function base(db: Db, q: RevenueQuery) {
  const query = db('receipts as r')
    .join('payments as p', 'p.id', 'r.payment_id')
    .join('jobs as j', 'j.id', 'r.job_id')
    .where('p.status', 'confirmed')
    // Demo money from npm start's chain is receipted like any payment, and never revenue.
    .where('p.development', false);
  if (q.from) query.where('r.issued_at', '>=', q.from);
  if (q.to) query.where('r.issued_at', '<', q.to);
  return query;
}

interface AssetSum {
  asset: string;
  decimals: number;
  receipts: number;
  amount: string;
  usdCents: string;
}

const assetColumns = (db: Db) => [
  db.raw(`${fields.asset} as asset`),
  db.raw(`max(${fields.decimals}) as decimals`),
  db.raw('count(*)::int as receipts'),
  db.raw(`sum(${fields.amount})::text as amount`),
  db.raw(`sum(${fields.usd})::text as "usdCents"`),
];

export async function revenueSummary(db: Db, q: RevenueQuery) {
  const bucket = `to_char(date_trunc('${q.period}', r.issued_at at time zone 'UTC'), '${q.period === 'day' ? 'YYYY-MM-DD' : 'YYYY-MM'}')`;
  const [totals, byAsset, byServiceAsset, byPeriodAsset, byReferral] = await Promise.all([
    base(db, q).first(
      db.raw('count(*)::int as receipts'),
      db.raw(`coalesce(sum(${fields.usd}), 0)::text as "usdCents"`),
    ),
    base(db, q).select(assetColumns(db)).groupByRaw(fields.asset).orderByRaw(fields.asset),
    base(db, q)
      .select(db.raw(`${fields.service} as service`), ...assetColumns(db))
      .groupByRaw(`${fields.service}, ${fields.asset}`)
      .orderByRaw(`${fields.service}, ${fields.asset}`),
    base(db, q)
      .select(db.raw(`${bucket} as period`), ...assetColumns(db))
      .groupByRaw(`${bucket}, ${fields.asset}`)
      .orderByRaw(`${bucket}, ${fields.asset}`),
    base(db, q)
      .join('referrals as f', 'f.id', 'j.referral_id')
      .select(
        'f.id as referralId',
        'f.code as code',
        'f.agent_id as agentId',
        'f.commission_bps as commissionBps',
        db.raw('count(*)::int as receipts'),
        db.raw(`sum(${fields.usd})::text as "usdCents"`),
        db.raw(`floor(sum(${fields.usd}) * f.commission_bps / 10000)::text as "commissionUsdCents"`),
      )
      .groupBy('f.id', 'f.code', 'f.agent_id', 'f.commission_bps')
      .orderBy('f.code'),
  ]);
  return {
    currency: 'USD' as const,
    period: q.period,
    from: q.from?.toISOString() ?? null,
    to: q.to?.toISOString() ?? null,
    totals: totals as { receipts: number; usdCents: string },
    byAsset: byAsset as AssetSum[],
    byService: group(byServiceAsset as Array<AssetSum & { service: string }>, 'service'),
    byPeriod: group(byPeriodAsset as Array<AssetSum & { period: string }>, 'period'),
    byReferral: byReferral as Array<{
      referralId: string;
      code: string;
      agentId: string;
      commissionBps: number;
      receipts: number;
      usdCents: string;
      commissionUsdCents: string;
    }>,
  };
}

/** Folds (key, asset) rows into one entry per key with its assets; USD cents added as bigints. */
function group<K extends 'service' | 'period'>(rows: Array<AssetSum & Record<K, string>>, key: K) {
  const out = new Map<string, { receipts: number; usdCents: bigint; assets: AssetSum[] }>();
  for (const row of rows) {
    const entry = out.get(row[key]) ?? { receipts: 0, usdCents: 0n, assets: [] };
    entry.receipts += row.receipts;
    entry.usdCents += BigInt(row.usdCents);
    entry.assets.push({
      asset: row.asset,
      decimals: row.decimals,
      receipts: row.receipts,
      amount: row.amount,
      usdCents: row.usdCents,
    });
    out.set(row[key], entry);
  }
  return [...out].map(([k, v]) => ({
    [key]: k,
    receipts: v.receipts,
    usdCents: v.usdCents.toString(),
    assets: v.assets,
  })) as Array<Record<K, string> & { receipts: number; usdCents: string; assets: AssetSum[] }>;
}
