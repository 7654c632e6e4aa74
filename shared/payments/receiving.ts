// Treasury status: the receiving address of each chain family (or that none is set), the assets it
// enables, recent confirmed inflows, and balances where a chain adapter reads them — never failing
// because a chain is slow or down.
import { treasuryBalance, adapterFor } from '../chains';
import type { BalanceLookup } from '../chains';
import type { Db } from '../platform/db/knex';
import { assetStatus, chainFamilies, treasuryFor } from '../chains/assets';
import type { Asset } from '../chains/assets';

const treasuryVariable = {
  solana: 'TREASURY_SOLANA',
  evm: 'TREASURY_EVM',
  bitcoin: 'TREASURY_BITCOIN',
  monero: 'TREASURY_MONERO',
} as const;

export function treasuryFamilies() {
  const statuses = assetStatus();
  return chainFamilies.map((family) => {
    const address = treasuryFor(family) ?? null;
    const adapter = adapterFor(family);
    return {
      family,
      setting: treasuryVariable[family],
      configured: address !== null,
      address,
      adapter: adapter.configured ? 'configured' : 'unconfigured',
      assets: statuses
        .filter((s) => s.asset.family === family)
        .map((s) => ({ asset: s.asset.id, enabled: s.enabled, ...(s.enabled ? {} : { reason: s.reason }) })),
    };
  });
}

export async function recentInflows(db: Db, limit = 20) {
  const rows = (await db('receipts as r')
    .join('payments as p', 'p.id', 'r.payment_id')
    .where('p.status', 'confirmed')
    .where('p.development', false)
    .orderBy('r.issued_at', 'desc')
    .orderBy('r.id', 'desc')
    .limit(limit)
    .select('r.id', 'r.job_id', 'r.document', 'r.issued_at')) as Array<{
    id: string;
    job_id: string;
    document: Record<string, unknown> & { transaction?: { txRef?: string } };
    issued_at: Date;
  }>;
  return rows.map((r) => ({
    receiptId: r.id,
    jobId: r.job_id,
    asset: String(r.document.asset),
    network: String(r.document.network),
    amount: String(r.document.amount),
    decimals: Number(r.document.decimals),
    usdCents: String(r.document.usdCents),
    payTo: String(r.document.payTo),
    txRef: r.document.transaction?.txRef ?? null,
    confirmedAt: new Date(r.issued_at).toISOString(),
  }));
}

const timeout = (asset: Asset, ms: number) =>
  new Promise<BalanceLookup>((resolve) => {
    const t = setTimeout(
      () =>
        resolve({
          available: false,
          asset: asset.id,
          reason: 'rpc_unreachable',
          detail: `No answer within ${ms} ms.`,
        }),
      ms,
    );
    t.unref();
  });

/** Balances of the enabled assets, each bounded by `timeoutMs`; a failure is reported, never thrown. */
export async function treasuryBalances(timeoutMs = 2500): Promise<BalanceLookup[]> {
  const enabled = assetStatus()
    .filter((s) => s.enabled)
    .map((s) => s.asset);
  return Promise.all(
    enabled.map((asset) =>
      Promise.race([
        treasuryBalance(asset).catch((err: Error): BalanceLookup => ({
          available: false,
          asset: asset.id,
          reason: 'rpc_unreachable',
          detail: err.message,
        })),
        timeout(asset, timeoutMs),
      ]),
    ),
  );
}
