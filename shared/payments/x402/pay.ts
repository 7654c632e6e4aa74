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
//
// The request that settled the payment gets a capability of the job in its reply (an unmodified x402
// client sees no other reply); a replayed signature, settled or in flight, gets none.
import { encodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequirements, SettleResponse } from '@x402/core/types';
import { jsonRpc } from '../../chains/http';
import { findService } from '../../jobs/catalog';
import type { JobRow } from '../../jobs/jobs';
import { serviceOrThrow, validateServiceInput } from '../../jobs/jobs';
import { newCapability } from '../../platform/capabilities';
import { canonicalJson } from '../../platform/canonical';
import { sha256Hex } from '../../platform/crypto';
import type { Db } from '../../platform/db/knex';
import { env } from '../../platform/env';
import { AppError, conflict, unprocessable } from '../../platform/errors';
import { idPattern } from '../../platform/ids';
import { logger } from '../../platform/log';
import type { Queues } from '../../platform/queues';
import type { PaymentRow, QuoteRow } from '../rows';
import { x402RequirementFor, x402Requirements } from '../views';
import { decodePaymentHeader } from './header';
import type { Eip3009Payload } from './header';
import { lower, recordPayment, refuseUsed } from './settlements';
import type { RpcSettings, SettlementKey, X402SettlementRow } from './settlements';
import { SettlerUnavailable, x402Networks, x402Settler } from './settle';
import type { X402Settler } from './settle';

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
  /**
   * A capability of the job for this request, the one that settled the payment: an unmodified x402
   * client sees only this reply, not the 402 that carried the creator's. Only its hash is kept.
   */
  accessToken: string;
}

/** How far past its quote's expiry an authorization may stay valid (the sweeper watches it until then). */
const AUTHORIZATION_SLACK_SECONDS = 86_400n;

const requirementsMismatch = (detail: string) => unprocessable('payment_requirements_mismatch', detail);

/** Every term the payer accepted must be one this service stated for the quote; names the first that is not. */
function compareTerms(
  accepted: PaymentRequirements,
  ours: PaymentRequirements,
  exact: Eip3009Payload,
  expiresAt: Date,
) {
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
    // Valid no longer than the quote it pays (and a day's slack for the payer's clock): the sweeper
    // watches an authorization until it expires.
    [
      'authorization.validBefore',
      BigInt(exact.authorization.validBefore) <=
        BigInt(Math.floor(new Date(expiresAt).getTime() / 1000)) + AUTHORIZATION_SLACK_SECONDS,
    ],
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
  compareTerms(payload.accepted, ours, exact, quote.expires_at);

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
  // Only this request gets here for this authorization: a replay of the signature (public once it is
  // on chain) is refused above as payment_signature_used, before anything is read or written.
  const access = newCapability('job');
  const [paidJob] = (await db('jobs')
    .where({ id: job.id })
    .update({ payer_access_hash: access.hash })
    .returning('*')) as JobRow[];
  return { job: paidJob!, payment, settlement, accessToken: access.token };
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

function settlerDown(err: unknown): AppError {
  if (err instanceof SettlerUnavailable) {
    return new AppError(503, 'payment_settler_unavailable', `${err.message} Try again shortly.`, {
      headers: { 'Retry-After': '10' },
    });
  }
  return err as AppError;
}
