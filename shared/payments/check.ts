// Payment checks in groups: the payments a worker takes up in the same turn of the event loop are
// claimed in one statement, asked of their chain together (one JSON-RPC batch for EVM) and their
// verdicts written in one transaction, with the same guarantees as a check alone: only a row still
// being verified is settled, a transfer is claimed once, and a crash before commit leaves the rows to
// be checked again.
import type { Knex } from 'knex';
import { MicroBatch } from '../platform/batch';
import { adapterFor } from '../chains';
import type { VerifyRequest, VerifyResult } from '../chains';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { newId } from '../platform/ids';
import { jobChanged } from '../jobs/notify';
import { serviceSigningKey } from '../platform/keys';
import { logger } from '../platform/log';
import type { Queues } from '../platform/queues';
import type { ChainFamily } from '../chains/assets';
import { developmentNetworks } from '../chains/development';
import { verifyRequestFor } from './terms';
import { paymentView } from './views';
import type { PaymentRow, PaymentSettings, PaymentStatus, QuoteRow, Settlement } from './rows';
import { receiptEntry, signReceipt } from './receipts';
import type { Receipt } from './receipts';
import { judgeTransfer, recheckColumns } from './verdict';
import type { Judgement, Verdict } from './verdict';
import { emitWebhookEvents, enqueueWebhooks } from '../deliveries/webhooks';

const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);

export type ProcessOutcome =
  | { outcome: 'skipped' }
  | {
      outcome: 'settled';
      status: PaymentStatus;
      settlement?: Settlement;
      jobQueued: boolean;
      receiptId?: string;
    }
  | { outcome: 'recheck'; delayMs: number; reason: string };

export interface ProcessOptions {
  now?: () => Date;
  settings?: PaymentSettings;
}

/** Asks the family's adapter; without one the payment waits (it is never settled blind). */
export async function verifyWithAdapter(req: VerifyRequest): Promise<VerifyResult> {
  const lookup = adapterFor(req.asset.family);
  if (!lookup.configured) return { status: 'pending', detail: lookup.detail, reason: 'rpc_unreachable' };
  return lookup.adapter.verifyTransfer(req);
}

export interface PaymentChecker {
  /** One check of one payment, made together with the others taken up at the same time. */
  check(paymentId: string): Promise<ProcessOutcome>;
}

/**
 * The `payments` processor's collector, a two-stage group commit: payments are claimed in groups, then
 * checked and settled in groups per chain family (a slow endpoint of one family holds no other
 * family's verdicts back). Each stage runs one group at a time; what arrives meanwhile waits and goes
 * in the next group (at most `maxBatch`, PAYMENT_CHECK_BATCH), so the busier the worker, the fewer
 * round trips each payment costs. `queues` enqueues paid jobs and webhooks.
 */
export function paymentChecker(
  db: Db,
  queues: () => Queues,
  opts: ProcessOptions & { maxBatch?: number } = {},
): PaymentChecker {
  const settings = opts.settings ?? env;
  const now = opts.now ?? (() => new Date());
  const max = opts.maxBatch ?? env.PAYMENT_CHECK_BATCH;
  const claims = new MicroBatch<string, Claimed | undefined>(
    async (ids) => {
      const claimed = await claimForCheck(db, ids);
      // An id listed twice in one group is checked once; the later caller is skipped.
      return ids.map((id) => {
        const c = claimed.get(id);
        claimed.delete(id);
        return c;
      });
    },
    max,
    1,
  );
  const families = new Map<ChainFamily, MicroBatch<Claimed, ProcessOutcome>>();
  const checks = (family: ChainFamily) => {
    let batch = families.get(family);
    if (!batch) {
      batch = new MicroBatch((group) => checkClaimed(db, queues(), group, settings, now), max, 1);
      families.set(family, batch);
    }
    return batch;
  };
  return {
    async check(paymentId) {
      const claimed = await claims.add(paymentId);
      if (!claimed) return { outcome: 'skipped' };
      return checks(claimed.req.asset.family).add(claimed);
    },
  };
}

interface Claimed {
  payment: PaymentRow;
  quote: QuoteRow;
  req: VerifyRequest;
  /**
   * The job has a webhook that hears of payments (made with the job, never later; an A2A push config,
   * which may come later, follows the job's states and not its payments).
   */
  webhook: boolean;
}

/**
 * Asks the chain about claimed payments of one family together, then writes their verdicts together;
 * one outcome per payment, in order.
 */
async function checkClaimed(
  db: Db,
  queues: Queues,
  group: readonly Claimed[],
  settings: PaymentSettings,
  now: () => Date,
): Promise<ProcessOutcome[]> {
  const results = await verifyMany(group.map((c) => c.req));
  const judged = group.map((c, k) => ({ ...c, judged: judge(c, results[k]!, settings, now()) }));
  const settles = judged.flatMap((j) =>
    j.judged.kind === 'settle'
      ? [{ payment: j.payment, quote: j.quote, webhook: j.webhook, verdict: j.judged.verdict }]
      : [],
  );
  const rechecks = judged.flatMap((j) =>
    j.judged.kind === 'recheck' ? [{ payment: j.payment, judged: j.judged }] : [],
  );
  const [settled, rechecked] = await Promise.all([
    settleMany(db, queues, settles),
    writeRechecks(db, rechecks, now()),
  ]);
  const outcomes = new Map([...settled, ...rechecked]);
  return group.map((c) => outcomes.get(c.payment.id) ?? { outcome: 'skipped' });
}

/**
 * Marks the payments `verifying` (one more check) and reads what their checks need: the quote's stored
 * terms and the outputs of the transaction already claimed. Two statements for the whole group.
 */
async function claimForCheck(db: Db, ids: readonly string[]): Promise<Map<string, Claimed>> {
  const unique = [...new Set(ids)];
  // Rows are locked in id order, as in settleMany, so two groups sharing payments cannot deadlock.
  const { rows } = await db.raw(
    `with l as (
       select id from payments where id = any(?::text[]) and status in ('pending', 'verifying')
       order by id for update
     ), c as (
       update payments p set status = 'verifying', checks = p.checks + 1, updated_at = now()
       from l where p.id = l.id returning p.*
     )
     select c.*, array(select pc.output from payment_claims pc
                       where pc.chain = c.chain and pc.tx_ref = c.tx_ref) as claimed_outputs,
            exists(select 1 from job_webhooks w
                   where w.job_id = c.job_id and w.format <> 'a2a') as webhook
     from c`,
    [unique],
  );
  const payments = rows as Array<PaymentRow & { claimed_outputs: string[]; webhook: boolean }>;
  if (payments.length === 0) return new Map();
  const quotes = (await db('quotes').whereIn('id', [
    ...new Set(payments.map((p) => p.quote_id)),
  ])) as QuoteRow[];
  const quoteOf = new Map(quotes.map((q) => [q.id, q]));
  return new Map(
    payments.map(({ claimed_outputs, webhook, ...payment }) => {
      const quote = quoteOf.get(payment.quote_id)!;
      // The quote's own terms, as they were when it was made: today's configuration plays no part.
      const req = verifyRequestFor(quote, {
        txRef: payment.tx_ref,
        txKey: payment.tx_key,
        skipOutputs: claimed_outputs,
      });
      return [payment.id, { payment, quote, req, webhook }];
    }),
  );
}

/** Asks the family's adapter about every request at once where it can; without one they all wait. */
export async function verifyMany(reqs: readonly VerifyRequest[]): Promise<VerifyResult[]> {
  if (reqs.length === 0) return [];
  const lookup = adapterFor(reqs[0]!.asset.family);
  if (!lookup.configured)
    return reqs.map(() => ({ status: 'pending', detail: lookup.detail, reason: 'rpc_unreachable' }));
  const { adapter } = lookup;
  if (adapter.verifyTransfers) return adapter.verifyTransfers(reqs);
  return Promise.all(reqs.map((r) => adapter.verifyTransfer(r)));
}

function judge(c: Claimed, result: VerifyResult, settings: PaymentSettings, now: Date): Judgement {
  return judgeTransfer(
    result,
    {
      amount: String(c.quote.amount),
      expiresAt: new Date(c.quote.expires_at),
      submittedAt: new Date(c.payment.created_at),
      checks: c.payment.checks,
      what: 'the quote',
    },
    settings,
    now,
  );
}

/** Payments the chain has not settled yet go back to pending with their next check time, in one statement. */
async function writeRechecks(
  db: Db,
  items: ReadonlyArray<{ payment: PaymentRow; judged: Extract<Judgement, { kind: 'recheck' }> }>,
  now: Date,
): Promise<Array<[string, ProcessOutcome]>> {
  if (items.length === 0) return [];
  const cols = items.map((i) => ({ id: i.payment.id, ...recheckColumns(i.judged, now) }));
  const { rows } = await db.raw(
    `with v as (
       select * from unnest(?::text[], ?::text[], ?::text[], ?::numeric[], ?::int[], ?::timestamptz[])
         as v(id, reason, detail, amount_received, confirmations, next_check_at)
     ), l as (
       select p.id from payments p join v on v.id = p.id where p.status = 'verifying' order by p.id for update of p
     )
     update payments p set status = 'pending', reason = v.reason, detail = v.detail,
       amount_received = v.amount_received, confirmations = v.confirmations,
       next_check_at = v.next_check_at, updated_at = now()
     from v, l where p.id = v.id and l.id = p.id
     returning p.id`,
    [
      cols.map((c) => c.id),
      cols.map((c) => c.reason),
      cols.map((c) => c.detail),
      cols.map((c) => c.amount_received),
      cols.map((c) => c.confirmations),
      cols.map((c) => c.next_check_at),
    ] as Knex.RawBinding[],
  );
  const updated = new Set((rows as Array<{ id: string }>).map((r) => r.id));
  return items.map((i): [string, ProcessOutcome] => [
    i.payment.id,
    updated.has(i.payment.id)
      ? { outcome: 'recheck', delayMs: i.judged.delayMs, reason: i.judged.reason }
      : { outcome: 'skipped' },
  ]);
}

interface ToSettle {
  payment: PaymentRow;
  quote: QuoteRow;
  webhook: boolean;
  verdict: Verdict;
}

/**
 * Writes the verdicts of a group in one transaction, each exactly as a check alone would: the claim
 * on the transfer (confirmed and underpaid take one, so a transfer is credited once), the payment, and
 * for a confirmed one the receipt and the job's move to queued. A row another delivery settled first
 * is left alone (skipped); the others are not held back by it.
 */
async function settleMany(
  db: Db,
  queues: Queues,
  items: readonly ToSettle[],
): Promise<Array<[string, ProcessOutcome]>> {
  if (items.length === 0) return [];
  const done = await db.transaction(async (trx) => {
    // Lock order: payments, then jobs, then transfers (submitPayment takes a job, then its transfer).
    const live = new Set(
      (await trx('payments')
        .whereIn(
          'id',
          items.map((i) => i.payment.id),
        )
        .andWhere('status', 'verifying')
        .orderBy('id')
        .forUpdate()
        .pluck('id')) as string[],
    );
    const todo = items.filter((i) => live.has(i.payment.id)).map((i) => ({ ...i }));
    if (todo.length === 0)
      return {
        rows: [],
        receipts: new Map<string, string>(),
        queued: new Map<string, string>(),
        webhooks: [],
        services: new Map<string, string>(),
      };

    const paidJobs = [
      ...new Set(todo.filter((t) => t.verdict.status === 'confirmed').map((t) => t.payment.job_id)),
    ];
    const jobs = new Map(
      paidJobs.length === 0
        ? []
        : (
            (await trx('jobs')
              .whereIn('id', paidJobs)
              .orderBy('id')
              .forUpdate()
              .select('id', 'service_id')) as Array<{
              id: string;
              service_id: string;
            }>
          ).map((j) => [j.id, j.service_id]),
    );

    await claimTransfers(trx, todo);
    const rows = await writeVerdicts(trx, todo);
    const rowOf = new Map(rows.map((r) => [r.id, r]));

    const receipts = new Map<string, string>();
    let queued = new Map<string, string>();
    const confirmed = todo.filter((t) => t.verdict.status === 'confirmed');
    if (confirmed.length > 0) {
      const receiptRows = confirmed.map((t) => {
        const row = rowOf.get(t.payment.id)!;
        const id = newId('rcpt');
        receipts.set(t.payment.id, id);
        const receipt = paymentReceipt(id, t, row, jobs.get(t.payment.job_id)!);
        return {
          id,
          payment_id: t.payment.id,
          job_id: t.payment.job_id,
          document: JSON.stringify(receipt),
          issued_at: row.settled_at,
          logged: receiptEntry(receipt),
        };
      });
      queued = await recordPaid(trx, confirmed, receiptRows);
    }
    const webhooked = new Set(todo.filter((t) => t.webhook).map((t) => t.payment.id));
    const webhooks = await emitWebhookEvents(
      trx,
      rows
        .filter((row) => webhooked.has(row.id))
        .map((row) => ({
          jobId: row.job_id,
          build: ({ base }: { base: string }) => ({
            event: `payment.${row.status}`,
            occurredAt: iso(row.settled_at ?? row.updated_at)!,
            payment: paymentView(row, base, receipts.get(row.id)),
          }),
        })),
    );
    return { rows, receipts, queued, webhooks, services: jobs };
  });

  await enqueueWebhooks(queues, done.webhooks);
  const queuedJobs = [...done.queued.keys()];
  for (const id of queuedJobs) jobChanged(id);
  try {
    await queues.enqueueMany(
      'jobs',
      queuedJobs.map((jobId) => ({ jobId, service: done.services.get(jobId) })),
    );
  } catch (err) {
    logger.warn(
      { jobs: queuedJobs.length, err: (err as Error).message },
      'enqueue failed; the sweeper will retry from Postgres',
    );
  }
  const queuedBy = new Set(done.queued.values());
  const settled = new Map(done.rows.map((r) => [r.id, r]));
  return items.map((i): [string, ProcessOutcome] => {
    const row = settled.get(i.payment.id);
    if (!row) return [i.payment.id, { outcome: 'skipped' }];
    const receiptId = done.receipts.get(row.id);
    return [
      row.id,
      {
        outcome: 'settled',
        status: row.status,
        ...(row.settlement ? { settlement: row.settlement } : {}),
        jobQueued: queuedBy.has(row.id),
        ...(receiptId ? { receiptId } : {}),
      },
    ];
  });
}

/**
 * Confirmed and underpaid verdicts take their claim on (chain, tx_ref, output); a verdict whose claim
 * is already taken (by an earlier payment, or by another in this group) becomes rejected /
 * already_claimed. Under the same per-transfer locks submitPayment takes, in one order.
 */
async function claimTransfers(trx: Knex.Transaction, todo: ToSettle[]): Promise<void> {
  const claimers = todo.filter((t) => t.verdict.status === 'confirmed' || t.verdict.status === 'underpaid');
  if (claimers.length === 0) return;
  for (const t of claimers) {
    // Every adapter names the paying output; 'tx' keeps the claim whole-transaction if one ever does not.
    t.verdict = { ...t.verdict, output: t.verdict.output ?? 'tx' };
  }
  await trx.raw(
    `select pg_advisory_xact_lock(k) from (
       select distinct hashtextextended(t, 0) as k from unnest(?::text[]) as t order by 1
     ) s`,
    [claimers.map((t) => `${t.payment.chain}|${t.payment.tx_ref}`)],
  );
  const won = new Set(
    (
      (await trx('payment_claims')
        .insert(
          claimers.map((t) => ({
            chain: t.payment.chain,
            tx_ref: t.payment.tx_ref,
            output: t.verdict.output!,
            payment_id: t.payment.id,
          })),
        )
        .onConflict(['chain', 'tx_ref', 'output'])
        .ignore()
        .returning('payment_id')) as Array<{ payment_id: string }>
    ).map((r) => r.payment_id),
  );
  for (const t of claimers) {
    if (won.has(t.payment.id)) continue;
    t.verdict = {
      status: 'rejected',
      reason: 'already_claimed',
      detail: 'This transfer has already been credited to another payment.',
      ...(t.verdict.amount !== undefined ? { amount: t.verdict.amount } : {}),
      output: t.verdict.output!,
    };
  }
}

/** Every verdict of the group in one update; each row comes back as stored. */
async function writeVerdicts(trx: Knex.Transaction, todo: readonly ToSettle[]): Promise<PaymentRow[]> {
  const v = todo.map((t) => t.verdict);
  const { rows } = await trx.raw(
    `update payments p set status = v.status, settlement = v.settlement, reason = v.reason,
       detail = v.detail, amount_received = v.amount_received, output = v.output,
       confirmations = v.confirmations, block_time = v.block_time,
       payer = coalesce(p.payer, v.payer), next_check_at = null, settled_at = now(), updated_at = now(),
       development = p.development or p.chain = any(?::text[])
     from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::numeric[], ?::text[], ?::int[],
                 ?::timestamptz[], ?::text[])
       as v(id, status, settlement, reason, detail, amount_received, output, confirmations, block_time, payer)
     where p.id = v.id and p.status = 'verifying'
     returning p.*`,
    [
      // Settled on npm start's chain: demo money, marked so it never counts as revenue.
      developmentNetworks(env),
      todo.map((t) => t.payment.id),
      v.map((x) => x.status),
      v.map((x) => x.settlement ?? null),
      v.map((x) => x.reason ?? null),
      v.map((x) => x.detail ?? null),
      v.map((x) => x.amount ?? null),
      v.map((x) => x.output ?? null),
      v.map((x) => x.confirmations ?? null),
      v.map((x) => (x.blockTime ? new Date(x.blockTime) : null)),
      v.map((x) => x.payer ?? null),
    ] as Knex.RawBinding[],
  );
  return rows as PaymentRow[];
}

/** The signed receipt of a confirmed payment (the same document a check alone issues). */
function paymentReceipt(id: string, t: ToSettle, row: PaymentRow, serviceId: string): Receipt {
  const { payment, quote, verdict: v } = t;
  return signReceipt(
    {
      type: 'proof-exchange.receipt/v1',
      id,
      jobId: payment.job_id,
      serviceId,
      paymentId: payment.id,
      asset: payment.asset,
      network: payment.chain,
      decimals: quote.decimals,
      amount: String(v.amount),
      quotedAmount: String(quote.amount),
      usdCents: String(quote.usd_cents),
      payTo: quote.pay_to,
      payer: v.payer ?? payment.payer ?? null,
      settlement: v.settlement!,
      transaction: { txRef: payment.tx_ref, output: v.output!, confirmations: v.confirmations ?? null },
      quote: {
        reference: quote.id,
        createdAt: iso(quote.created_at)!,
        expiresAt: iso(quote.expires_at)!,
      },
      times: {
        submittedAt: iso(payment.created_at)!,
        confirmedAt: iso(row.settled_at)!,
        issuedAt: iso(row.settled_at)!,
      },
    },
    serviceSigningKey(),
  );
}

/**
 * What a confirmation writes besides the payment, in one statement: the receipts; the quotes' unique
 * amounts set free (a paid job takes no more payment; as `releaseAmounts`); and the paid jobs moved to
 * queued (a late payment inside the watch window revives a job the sweeper already expired), each
 * with its `queued` event naming the payment that paid it. Returns the jobs moved, each with the
 * payment that moved it.
 */
async function recordPaid(
  trx: Knex.Transaction,
  confirmed: readonly ToSettle[],
  receipts: ReadonlyArray<{
    id: string;
    payment_id: string;
    job_id: string;
    document: string;
    issued_at: Date | null;
    /** The receipt's log entry, queued in the same statement (the sequencer logs it). */
    logged: { key: string; entry: Buffer };
  }>,
): Promise<Map<string, string>> {
  const first = new Map<string, ToSettle>();
  for (const t of confirmed) if (!first.has(t.payment.job_id)) first.set(t.payment.job_id, t);
  const paid = [...first.values()];
  const receiptOf = new Map(receipts.map((r) => [r.payment_id, r.id]));
  const { rows } = await trx.raw(
    `with r as (
       insert into receipts (id, payment_id, job_id, document, issued_at)
       select * from unnest(?::text[], ?::text[], ?::text[], ?::jsonb[], ?::timestamptz[])
     ), l as (
       insert into translog_queue (key, entry) select * from unnest(?::text[], ?::bytea[])
       on conflict (key) do nothing
     ), d as (
       delete from payment_amounts where owner in (select id from quotes where job_id = any(?::text[]))
     ), v as (
       select * from unnest(?::text[], ?::jsonb[]) as v(id, data)
     ), u as (
       update jobs j set status = 'queued', queued_at = now(), finished_at = null, error = null, updated_at = now()
       from v where j.id = v.id and j.status in ('awaiting_payment', 'expired') returning j.id
     ), e as (
       insert into job_events (job_id, type, data) select u.id, 'queued', v.data from u join v on v.id = u.id
     )
     select id from u`,
    [
      receipts.map((r) => r.id),
      receipts.map((r) => r.payment_id),
      receipts.map((r) => r.job_id),
      receipts.map((r) => r.document),
      receipts.map((r) => r.issued_at),
      receipts.map((r) => r.logged.key),
      receipts.map((r) => r.logged.entry),
      paid.map((t) => t.payment.job_id),
      paid.map((t) => t.payment.job_id),
      paid.map((t) =>
        JSON.stringify({
          paymentId: t.payment.id,
          receiptId: receiptOf.get(t.payment.id),
          settlement: t.verdict.settlement,
          asset: t.payment.asset,
        }),
      ),
    ] as Knex.RawBinding[],
  );
  return new Map((rows as Array<{ id: string }>).map((r) => [r.id, first.get(r.id)!.payment.id]));
}
