// Recovering x402 settlements whose outcome the request never saw (the sweeper): the token's
// AuthorizationUsed event for the (payer, nonce) makes the payment; an authorization that expired
// unused ends the row `failed`.
import { keccak256 } from 'ox/Hash';
import { fromNumber, fromString, padLeft } from 'ox/Hex';
import { jsonRpc } from '../../chains/http';
import type { Db } from '../../platform/db/knex';
import { env } from '../../platform/env';
import type { Env } from '../../platform/env';
import { AppError } from '../../platform/errors';
import { logger } from '../../platform/log';
import type { Queues } from '../../platform/queues';
import type { QuoteRow } from '../rows';
import { recordPayment } from './settlements';
import type { RpcSettings, X402SettlementRow } from './settlements';

/** keccak256("AuthorizationUsed(address,bytes32)"), the EIP-3009 event of a spent authorization. */
export const AUTHORIZATION_USED_TOPIC = keccak256(fromString('AuthorizationUsed(address,bytes32)'));

interface RpcLog {
  transactionHash: string;
}

/** The transaction that spent (payer, nonce) on the token, from its AuthorizationUsed event, if any. */
async function authorizationUse(row: X402SettlementRow, settings: RpcSettings): Promise<string | undefined> {
  const logs = await jsonRpc<RpcLog[]>(
    settings.EVM_RPC_URL!,
    'eth_getLogs',
    [
      {
        address: row.token,
        fromBlock: row.from_block ? fromNumber(BigInt(row.from_block)) : 'earliest',
        toBlock: 'latest',
        topics: [AUTHORIZATION_USED_TOPIC, padLeft(row.payer as `0x${string}`, 32), row.nonce],
      },
    ],
    { timeoutMs: settings.CHAIN_RPC_TIMEOUT_MS, retries: settings.CHAIN_RPC_RETRIES },
  );
  return logs[0]?.transactionHash;
}

export interface RecoveryReport {
  paid: number;
  failed: number;
}

/**
 * Resolves settlements whose outcome the request did not see (the process died, the settler timed
 * out) and failed ones whose authorization could still be used: an AuthorizationUsed event for the
 * (payer, nonce) makes the payment; an authorization past its validBefore that never ran ends `failed`.
 */
export async function recoverX402Settlements(
  db: Db,
  queues: Queues,
  opts: {
    now?: Date;
    graceMs?: number;
    settings?: RpcSettings & Pick<Env, 'X402_FACILITATOR_TIMEOUT_MS'>;
  } = {},
): Promise<RecoveryReport> {
  const settings = opts.settings ?? env;
  const report: RecoveryReport = { paid: 0, failed: 0 };
  if (!settings.EVM_RPC_URL) return report;
  const now = opts.now ?? new Date();
  // A live request may still be waiting on its settlement: leave it alone until it must have ended.
  const grace = opts.graceMs ?? settings.X402_FACILITATOR_TIMEOUT_MS + 30_000;
  const before = new Date(now.getTime() - grace);
  const skew = 2 * 60_000;
  const rows = (await db('x402_settlements')
    .where((q) =>
      q
        .where({ status: 'settling' })
        .orWhere((f) =>
          f.where({ status: 'failed' }).andWhere('valid_before', '>', new Date(now.getTime() - skew)),
        ),
    )
    .andWhere('updated_at', '<', before)
    .orderBy('updated_at')
    .limit(50)) as X402SettlementRow[];
  for (const row of rows) {
    const key = { network: row.network, token: row.token, payer: row.payer, nonce: row.nonce };
    try {
      const tx = await authorizationUse(row, settings);
      if (tx) {
        const quote = (await db('quotes').where({ id: row.quote_id }).first()) as QuoteRow;
        await recordPayment(db, queues, key, quote, tx, row.payer).catch((err: unknown) => {
          if (!(err instanceof AppError)) throw err;
        });
        report.paid++;
      } else if (row.status === 'settling' && now.getTime() > new Date(row.valid_before).getTime() + skew) {
        await db('x402_settlements')
          .where({ ...key, status: 'settling' })
          .update({ status: 'failed', error: 'authorization_expired_unused', updated_at: db.fn.now() });
        report.failed++;
      } else {
        // Asked again on a later tick, not on every one.
        await db('x402_settlements').where(key).update({ updated_at: db.fn.now() });
      }
    } catch (err) {
      logger.warn({ jobId: row.job_id, err: (err as Error).message }, 'x402 recovery check failed');
    }
  }
  if (report.paid || report.failed) logger.info(report, 'x402 settlements recovered');
  return report;
}
