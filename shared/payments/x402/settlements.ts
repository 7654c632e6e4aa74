// The x402 settlements as rows (one per authorization) and what both the paying request and the
// sweeper's recovery write: the refusal of a used authorization, and the settled transfer recorded as
// an ordinary payment.
import type { Knex } from 'knex';
import type { Db } from '../../platform/db/knex';
import type { Env } from '../../platform/env';
import { AppError, conflict } from '../../platform/errors';
import { logger } from '../../platform/log';
import type { Queues } from '../../platform/queues';
import type { PaymentRow, QuoteRow } from '../rows';
import { submitPayment } from '../submit';

export type X402Status = 'settling' | 'settled' | 'failed';
export interface X402SettlementRow {
  network: string;
  token: string;
  payer: string;
  nonce: string;
  job_id: string;
  quote_id: string;
  payload_hash: string;
  status: X402Status;
  settler: 'facilitator' | 'self';
  tx_hash: string | null;
  payment_id: string | null;
  from_block: string | null;
  valid_before: Date;
  error: string | null;
  created_at: Date;
  updated_at: Date;
}

export type RpcSettings = Pick<Env, 'EVM_RPC_URL' | 'CHAIN_RPC_TIMEOUT_MS' | 'CHAIN_RPC_RETRIES'>;

export const lower = (s: string) => s.toLowerCase();

export type SettlementKey = Pick<X402SettlementRow, 'network' | 'token' | 'payer' | 'nonce'>;

export async function refuseUsed(db: Db | Knex.Transaction, key: SettlementKey): Promise<void> {
  const row = (await db('x402_settlements').where(key).first()) as X402SettlementRow | undefined;
  if (!row || row.status === 'failed') return;
  if (row.status === 'settled') {
    throw conflict(
      'payment_signature_used',
      `This authorization already paid job ${row.job_id}; a payment signature pays once.`,
      { jobId: row.job_id, ...(row.payment_id ? { paymentId: row.payment_id } : {}) },
    );
  }
  throw new AppError(409, 'payment_in_progress', 'This authorization is being settled now; poll the job.', {
    headers: { 'Retry-After': '5' },
    extra: { jobId: row.job_id },
  });
}

/** The settling transaction becomes an ordinary payment (verified by the payments worker); the row is done. */
export async function recordPayment(
  db: Db,
  queues: Queues,
  key: SettlementKey,
  quote: QuoteRow,
  txHash: string,
  payer: string,
): Promise<PaymentRow> {
  await db('x402_settlements')
    .where(key)
    .update({ tx_hash: lower(txHash), updated_at: db.fn.now() });
  try {
    const { payment } = await submitPayment(db, queues, quote.job_id, {
      asset: quote.asset,
      txRef: txHash,
      reference: quote.id,
      payer,
    });
    await db('x402_settlements')
      .where(key)
      .update({ status: 'settled', payment_id: payment.id, error: null, updated_at: db.fn.now() });
    return payment;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    // The transfer happened but cannot be credited to this job (it was paid another way meanwhile):
    // kept with the reason, so the operator can refund it.
    await db('x402_settlements')
      .where(key)
      .update({ status: 'settled', error: err.code, updated_at: db.fn.now() });
    logger.error({ jobId: quote.job_id, txHash, code: err.code }, 'x402 transfer settled but not credited');
    throw conflict(err.code, `The payment settled in ${txHash} but could not be credited: ${err.message}`, {
      transaction: txHash,
      jobId: quote.job_id,
    });
  }
}
