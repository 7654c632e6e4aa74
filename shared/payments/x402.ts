// x402 (v2 HTTP transport) payment of a priced job: a createJob retry carrying PAYMENT-SIGNATURE (or the
// legacy X-PAYMENT) is decoded with @x402/core, matched to the requirement this service issued for the
// job (the quote named in `accepted.extra.reference`, whose stored terms must equal the accepted ones),
// verified and settled by the configured settler, and then recorded as an ordinary payment of the
// settling transaction: the payments worker confirms it on chain against the quote's binding and
// issues the signed receipt, exactly as for a transaction given to submitPayment.
//
// Crash safety: the authorization is written (x402_settlements, status `settling`) before anything is
// broadcast; the service's own settler also writes the transaction hash before broadcasting it. A
// process that dies between settling and recording leaves that row, and the sweeper finds the
// transaction again (the token's AuthorizationUsed(payer, nonce) event) and records the payment, or
// ends the row `failed` once the authorization can no longer execute. One row per (network, token,
// payer, nonce): a replayed signature settles nothing.
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader } from '@x402/core/http';
import { isPaymentPayloadV2, parsePaymentPayload } from '@x402/core/schemas';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import type { Knex } from 'knex';
import { keccak256, pad, toHex } from 'viem';
import { z } from 'zod';
import { canonicalJson } from '../canonical';
import { jsonRpc } from '../chains/http';
import { sha256Hex } from '../crypto';
import type { Db } from '../db/knex';
import { env } from '../env';
import type { Env } from '../env';
import { AppError, badRequest, conflict, unprocessable } from '../errors';
import { idPattern } from '../ids';
import { findService } from '../jobs/catalog';
import type { JobRow } from '../jobs/jobs';
import { serviceOrThrow, validateServiceInput } from '../jobs/jobs';
import { logger } from '../log';
import type { Queues } from '../queues';
import { submitPayment, x402Requirements, x402RequirementFor } from './payments';
import type { PaymentRow, QuoteRow } from './payments';
import { SettlerUnavailable, x402Networks, x402Settler } from './x402-settle';
import type { X402Settler } from './x402-settle';

/** The request headers that carry a payment: v2's, and v1's name, which some clients still send. */
export const PAYMENT_SIGNATURE_HEADER = 'payment-signature';
export const LEGACY_PAYMENT_HEADER = 'x-payment';

/** keccak256("AuthorizationUsed(address,bytes32)"), the EIP-3009 event of a spent authorization. */
export const AUTHORIZATION_USED_TOPIC = keccak256(toHex('AuthorizationUsed(address,bytes32)'));

const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const uint = z.string().regex(/^\d{1,78}$/);
const eip3009Payload = z.object({
  signature: z.string().regex(/^0x[0-9a-fA-F]{2,}$/),
  authorization: z.object({
    from: evmAddress,
    to: evmAddress,
    value: uint,
    validAfter: uint,
    validBefore: uint,
    nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
  }),
});
type Eip3009Payload = z.infer<typeof eip3009Payload>;

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

export interface X402PaymentRequest {
  /** The header's value, base64 JSON. */
  header: string;
  /** What the retried createJob asked for: it must be what the job was created for. */
  request: { service: string; input: unknown };
  /** The agent exchange's public base address (for the job link in PAYMENT-REQUIRED). */
  base: string;
}

export interface X402Paid {
  job: JobRow;
  payment: PaymentRow;
  settlement: SettleResponse;
}

type RpcSettings = Pick<Env, 'EVM_RPC_URL' | 'CHAIN_RPC_TIMEOUT_MS' | 'CHAIN_RPC_RETRIES'>;

const requirementsMismatch = (detail: string) => unprocessable('payment_requirements_mismatch', detail);

/** Decodes and checks the header: an x402 v2 payload of the `exact` scheme with an EIP-3009 authorization. */
export function decodePaymentHeader(header: string): { payload: PaymentPayload; exact: Eip3009Payload } {
  let decoded: unknown;
  try {
    decoded = decodePaymentSignatureHeader(header.trim());
  } catch {
    throw badRequest('payment_signature_invalid', 'PAYMENT-SIGNATURE is not base64-encoded JSON.');
  }
  const parsed = parsePaymentPayload(decoded);
  if (!parsed.success) {
    throw badRequest('payment_signature_invalid', 'PAYMENT-SIGNATURE is not an x402 payment payload.');
  }
  if (!isPaymentPayloadV2(parsed.data)) {
    throw badRequest(
      'x402_version_unsupported',
      'This service speaks x402 version 2: send PAYMENT-SIGNATURE with a v2 payload for one of the requirements in PAYMENT-REQUIRED.',
    );
  }
  const exact = eip3009Payload.safeParse(parsed.data.payload);
  if (parsed.data.accepted.scheme !== 'exact' || !exact.success) {
    throw badRequest(
      'payment_signature_invalid',
      'Only the `exact` scheme with an EIP-3009 authorization is taken here.',
    );
  }
  return { payload: parsed.data as PaymentPayload, exact: exact.data };
}

const lower = (s: string) => s.toLowerCase();

/** Every term the payer accepted must be one this service stated for the quote; names the first that is not. */
function compareTerms(accepted: PaymentRequirements, ours: PaymentRequirements, exact: Eip3009Payload) {
  const checks: Array<[string, boolean]> = [
    ['scheme', accepted.scheme === ours.scheme],
    ['network', accepted.network === ours.network],
    ['asset', lower(accepted.asset) === lower(ours.asset)],
    ['payTo', lower(accepted.payTo) === lower(ours.payTo)],
    ['amount', accepted.amount === ours.amount],
    ['extra.name', accepted.extra?.name === ours.extra.name],
    ['extra.version', accepted.extra?.version === ours.extra.version],
    ['authorization.to', lower(exact.authorization.to) === lower(ours.payTo)],
    ['authorization.value', exact.authorization.value === ours.amount],
  ];
  const wrong = checks.find(([, ok]) => !ok);
  if (wrong) {
    throw requirementsMismatch(
      `The payment's ${wrong[0]} is not what this job's quote ${String(ours.extra.reference)} asks for; pay the requirement from PAYMENT-REQUIRED as it is.`,
    );
  }
}

/** The retry must ask for what the job was created for: a signature pays its own job only. */
function checkSameRequest(job: JobRow, request: X402PaymentRequest['request']) {
  const stored = typeof job.input === 'string' ? JSON.parse(job.input) : job.input;
  let sameInput = false;
  if (request.service === job.service_id) {
    sameInput =
      canonicalJson(validateServiceInput(serviceOrThrow(request.service), request.input)) ===
      canonicalJson(stored);
  }
  if (!sameInput) {
    throw conflict(
      'payment_for_other_job',
      `This payment is for job ${job.id}, which was created for another request; send it with that job's service and input, or create this job anew to get requirements of its own.`,
      { jobId: job.id },
    );
  }
}

async function requirementsHeader(db: Db, job: JobRow, quotes: QuoteRow[], base: string) {
  const required = x402Requirements(
    `${base}/api/jobs/${job.id}`,
    findService(job.service_id)?.name ?? job.service_id,
    quotes,
    await x402Networks(),
  );
  return { 'PAYMENT-REQUIRED': encodePaymentRequiredHeader(required) };
}

async function currentBlock(settings: RpcSettings): Promise<string | null> {
  if (!settings.EVM_RPC_URL) return null;
  try {
    const head = await jsonRpc<string>(settings.EVM_RPC_URL, 'eth_blockNumber', [], {
      timeoutMs: settings.CHAIN_RPC_TIMEOUT_MS,
      retries: 0,
    });
    return BigInt(head).toString();
  } catch {
    return null;
  }
}

const isTxHash = (s: string | undefined | null): s is string => !!s && /^0x[0-9a-fA-F]{64}$/.test(s);

/**
 * Pays the job a PAYMENT-SIGNATURE was made for: matched, verified, settled, recorded. Throws a 4xx
 * AppError for anything the payer can fix (the problem's `code` says what), 402 with PAYMENT-REQUIRED
 * where the settler refused the payment, 503 where the settlement's outcome is not known yet.
 */
export async function payJobWithX402(
  db: Db,
  queues: Queues,
  req: X402PaymentRequest,
  opts: { settler?: X402Settler; now?: Date; settings?: RpcSettings } = {},
): Promise<X402Paid> {
  const settings = opts.settings ?? env;
  const settler = opts.settler ?? x402Settler();
  if (!settler) {
    throw new AppError(
      503,
      'x402_unavailable',
      'x402 payments are not configured here; pay with submitPayment instead.',
    );
  }
  const { payload, exact } = decodePaymentHeader(req.header);
  // A spent or in-flight authorization is named as such before anything else is looked at.
  await refuseUsed(db, {
    network: payload.accepted.network,
    token: lower(payload.accepted.asset),
    payer: lower(exact.authorization.from),
    nonce: lower(exact.authorization.nonce),
  });
  const reference = payload.accepted.extra?.reference;
  if (typeof reference !== 'string' || !idPattern('pay').test(reference)) {
    throw requirementsMismatch(
      'The accepted requirement names no quote of this service (extra.reference); pay one from PAYMENT-REQUIRED.',
    );
  }
  const quote = (await db('quotes').where({ id: reference }).first()) as QuoteRow | undefined;
  if (!quote) throw requirementsMismatch(`${reference} is not a quote of this service.`);
  const job = (await db('jobs').where({ id: quote.job_id }).first()) as JobRow;
  checkSameRequest(job, req.request);

  const now = opts.now ?? new Date();
  const quotes = (await db('quotes').where({ job_id: job.id }).orderBy('id')) as QuoteRow[];
  if (job.status !== 'awaiting_payment') {
    throw conflict('job_not_awaiting_payment', `The job is ${job.status}; it takes no payment now.`, {
      jobId: job.id,
    });
  }
  if (now.getTime() >= new Date(quote.expires_at).getTime()) {
    throw conflict('quote_expired', `The quote ${quote.id} expired; create the job again for a fresh one.`);
  }
  const ours = x402RequirementFor(quote, await settler.networks(), now);
  if (!ours) {
    throw requirementsMismatch(
      `The ${quote.asset} quote cannot be paid with x402 here; pay it with submitPayment instead.`,
    );
  }
  compareTerms(payload.accepted, ours, exact);

  const key = {
    network: ours.network,
    token: lower(ours.asset),
    payer: lower(exact.authorization.from),
    nonce: lower(exact.authorization.nonce),
  };

  // Read-only checks first (signature, balance, simulation): a refusal writes nothing.
  let verified;
  try {
    verified = await settler.verify(payload, ours);
  } catch (err) {
    throw settlerDown(err);
  }
  if (!verified.isValid) {
    throw new AppError(
      402,
      'payment_invalid',
      `The payment was refused: ${verified.invalidReason ?? 'invalid'}${verified.invalidMessage ? ` (${verified.invalidMessage.split('\n')[0]})` : ''}.`,
      {
        headers: await requirementsHeader(db, job, quotes, req.base),
        extra: { reason: verified.invalidReason ?? 'invalid', jobId: job.id },
      },
    );
  }

  const fromBlock = await currentBlock(settings);
  const payloadHash = sha256Hex(canonicalJson(payload));
  await recordIntent(db, job, quote, key, {
    payload_hash: payloadHash,
    settler: settler.kind,
    from_block: fromBlock,
    valid_before: new Date(Number(BigInt(exact.authorization.validBefore) * 1000n)),
  });

  const where = { ...key, status: 'settling' };
  let settlement: SettleResponse;
  try {
    settlement = await settler.settle(payload, ours, async (txHash) => {
      await db('x402_settlements')
        .where(where)
        .update({ tx_hash: lower(txHash), updated_at: db.fn.now() });
    });
  } catch (err) {
    // The outcome is unknown: the row stays `settling` for the sweeper to resolve from the chain.
    logger.warn({ jobId: job.id, err: (err as Error).message }, 'x402 settlement outcome unknown');
    throw new AppError(
      503,
      'payment_settlement_unknown',
      'The settlement did not report back. If it went through, the job is credited automatically; poll the job.',
      {
        headers: { 'Retry-After': '10', Location: `${req.base}/api/jobs/${job.id}` },
        extra: { jobId: job.id },
      },
    );
  }
  if (!settlement.success || !isTxHash(settlement.transaction)) {
    // Nothing moved (refused before broadcast, or the transaction reverted). The sweeper still watches
    // the authorization until it expires, in case it is used after all.
    await db('x402_settlements')
      .where(where)
      .update({
        status: 'failed',
        error: (settlement.errorReason ?? 'settlement_failed').slice(0, 200),
        ...(isTxHash(settlement.transaction) ? { tx_hash: lower(settlement.transaction) } : {}),
        updated_at: db.fn.now(),
      });
    throw new AppError(
      402,
      'payment_settlement_failed',
      `The payment could not be settled: ${settlement.errorReason ?? 'settlement failed'}.`,
      {
        headers: await requirementsHeader(db, job, quotes, req.base),
        extra: { reason: settlement.errorReason ?? 'settlement_failed', jobId: job.id },
      },
    );
  }
  const payment = await recordPayment(
    db,
    queues,
    key,
    quote,
    settlement.transaction,
    exact.authorization.from,
  );
  const paidJob = (await db('jobs').where({ id: job.id }).first()) as JobRow;
  return { job: paidJob, payment, settlement };
}

type SettlementKey = Pick<X402SettlementRow, 'network' | 'token' | 'payer' | 'nonce'>;

async function refuseUsed(db: Db | Knex.Transaction, key: SettlementKey): Promise<void> {
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

/** Writes the intent before anything is broadcast; one per authorization, one in flight per job. */
async function recordIntent(
  db: Db,
  job: JobRow,
  quote: QuoteRow,
  key: SettlementKey,
  values: Pick<X402SettlementRow, 'payload_hash' | 'settler' | 'from_block' | 'valid_before'>,
): Promise<void> {
  await db.transaction(async (trx) => {
    const locked = (await trx('jobs').where({ id: job.id }).forUpdate().first()) as JobRow;
    if (locked.status !== 'awaiting_payment') {
      throw conflict('job_not_awaiting_payment', `The job is ${locked.status}; it takes no payment now.`);
    }
    await refuseUsed(trx, key);
    const other = await trx('x402_settlements')
      .where({ job_id: job.id })
      .whereIn('status', ['settling', 'settled'])
      .first();
    if (other) {
      throw conflict(
        'job_payment_in_progress',
        'Another x402 payment for this job is being settled; poll the job.',
        { jobId: job.id },
      );
    }
    const row = {
      ...key,
      job_id: job.id,
      quote_id: quote.id,
      status: 'settling',
      tx_hash: null,
      payment_id: null,
      error: null,
      ...values,
      updated_at: trx.fn.now(),
    };
    // A failed earlier attempt with this authorization (nothing moved) may be tried again.
    await trx('x402_settlements').insert(row).onConflict(['network', 'token', 'payer', 'nonce']).merge();
  });
}

/** The settling transaction becomes an ordinary payment (verified by the payments worker); the row is done. */
async function recordPayment(
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

function settlerDown(err: unknown): AppError {
  if (err instanceof SettlerUnavailable) {
    return new AppError(503, 'payment_settler_unavailable', `${err.message} Try again shortly.`, {
      headers: { 'Retry-After': '10' },
    });
  }
  return err as AppError;
}

// ---------------------------------------------------------------------------------------------------
// Recovery (the sweeper)

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
        fromBlock: row.from_block ? toHex(BigInt(row.from_block)) : 'earliest',
        toBlock: 'latest',
        topics: [AUTHORIZATION_USED_TOPIC, pad(row.payer as `0x${string}`), row.nonce],
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
