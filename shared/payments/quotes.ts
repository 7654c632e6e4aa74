// A priced job's quotes: priced in every payable asset before the job is stored, bound and stored with
// it, and read back as the terms a transfer must meet.
import type { Knex } from 'knex';
import { findAsset } from '../chains/assets';
import type { AssetId } from '../chains/assets';
import { findService } from '../jobs/catalog';
import type { JobRow } from '../jobs/jobs';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { AppError } from '../platform/errors';
import { assetAvailability } from './availability';
import type { AmountHolder } from './amount-holds';
import { bindQuote, prepareBinding } from './binding';
import type { PreBinding } from './binding';
import { BindingUnavailable } from './binding-kinds';
import { assetSnapshot, bindingOf } from './terms';
import { QuoteError, createQuote, rateSourceFromEnv } from './pricing';
import type { Quote, RateSource } from './pricing';
import type { PaymentSettings, QuoteRow } from './rows';
import { lateWindowMs } from './verdict';

let rateSource: RateSource | undefined;
const rates = () => (rateSource ??= rateSourceFromEnv());

export interface UnavailableAsset {
  asset: AssetId;
  reason: string;
  detail: string;
}

/** A quote priced for a job not stored yet, with the part of its binding made outside a transaction. */
export type PreparedQuote = Quote & { pre: PreBinding };

export interface PreparedQuotes {
  serviceId: string;
  usdCents: number;
  quotes: PreparedQuote[];
  unavailable: UnavailableAsset[];
}

/**
 * Prices a priced service in every enabled asset, before the job is stored, so a job that could not
 * be paid is never written. Each quote gets the first half of its binding here (a Solana Pay reference
 * key, a Monero subaddress); the rest is fixed with the job (attachQuotes). Undefined for free
 * services and unknown services (createJob reports those). A license never waives the price: its
 * prepaid credit, if any, pays in createJob.
 */
export async function prepareQuotes(
  serviceId: string,
  opts: { now?: Date; rates?: RateSource } = {},
): Promise<PreparedQuotes | undefined> {
  const service = findService(serviceId);
  if (!service || service.priceUsdCents === 0) return undefined;
  const now = opts.now ?? new Date();
  const quotes: PreparedQuote[] = [];
  const unavailable: UnavailableAsset[] = [];
  for (const status of await assetAvailability()) {
    if (!status.enabled) {
      unavailable.push({ asset: status.asset.id, reason: status.reason, detail: status.detail });
      continue;
    }
    const source = opts.rates ?? rates();
    try {
      const quote = await createQuote({
        asset: status.asset,
        usdCents: service.priceUsdCents,
        now,
        ...(source ? { rates: source } : {}),
      });
      quotes.push({ ...quote, pre: await prepareBinding(status.asset, quote.reference) });
    } catch (err) {
      if (!(err instanceof QuoteError) && !(err instanceof BindingUnavailable)) throw err;
      unavailable.push({ asset: status.asset.id, reason: err.code, detail: err.message });
    }
  }
  if (quotes.length === 0) throw noAssetQuoted(unavailable);
  return { serviceId, usdCents: service.priceUsdCents, quotes, unavailable };
}

const noAssetQuoted = (unavailable: UnavailableAsset[]) =>
  new AppError(503, 'payments_unavailable', 'No payment asset can be quoted now; the job was not created.', {
    extra: { unavailable },
  });

/**
 * Stores the quotes of a new awaiting_payment job, inside the job's transaction, finishing each
 * binding (a unique amount reserved on `holder`'s budget, a BIP84 address derived), and sets the job's
 * expiry to theirs. A quote whose binding cannot be made now moves to `prepared.unavailable`; with
 * none left the whole job is refused (503) and nothing is written. A holder already holding its cap
 * of an asset's amounts is refused (429 `too_many_open_quotes`) and nothing is written either.
 */
export async function attachQuotes(
  trx: Knex.Transaction,
  job: JobRow,
  prepared: PreparedQuotes,
  holder: AmountHolder,
  settings: Pick<PaymentSettings, 'QUOTE_LATE_WINDOW_SECONDS'> = env,
): Promise<QuoteRow[]> {
  const rows: Record<string, unknown>[] = [];
  for (const q of prepared.quotes) {
    const asset = findAsset(q.asset)!;
    const expiresAt = new Date(q.expiresAt);
    try {
      const bound = await bindQuote(trx, {
        owner: q.reference,
        holder,
        quote: q,
        asset,
        pre: q.pre,
        openUntil: new Date(expiresAt.getTime() + lateWindowMs(settings)),
        now: new Date(q.createdAt),
      });
      rows.push({
        id: q.reference,
        job_id: job.id,
        asset: q.asset,
        network: q.network,
        decimals: q.decimals,
        contract: q.contract ?? null,
        usd_cents: Number(q.usdCents),
        rate: q.rate ? JSON.stringify(q.rate) : null,
        base_amount: q.amount,
        ...bound,
        created_at: new Date(q.createdAt),
        expires_at: expiresAt,
      });
    } catch (err) {
      if (!(err instanceof BindingUnavailable)) throw err;
      prepared.unavailable.push({ asset: q.asset, reason: err.code, detail: err.message });
    }
  }
  if (rows.length === 0) throw noAssetQuoted(prepared.unavailable);
  const stored = (await trx('quotes').insert(rows).returning('*')) as QuoteRow[];
  const expiresAt = stored.reduce(
    (min, q) => (q.expires_at < min ? q.expires_at : min),
    stored[0]!.expires_at,
  );
  await trx('jobs').where({ id: job.id, status: 'awaiting_payment' }).update({ expires_at: expiresAt });
  job.expires_at = expiresAt;
  return stored;
}

export async function jobQuotes(db: Db | Knex.Transaction, jobId: string): Promise<QuoteRow[]> {
  return (await db('quotes').where({ job_id: jobId }).orderBy('id')) as QuoteRow[];
}

/**
 * One quote's terms exactly as stored, the single reading every consumer shares (views, x402
 * requirements, verification): the asset as it was configured then, base units to pay, where to, from
 * when to when, and what ties a transfer to it.
 */
export function quoteTerms(q: QuoteRow, settings: Pick<PaymentSettings, 'QUOTE_LATE_WINDOW_SECONDS'> = env) {
  const expiresAt = new Date(q.expires_at);
  const binding = bindingOf(q);
  return {
    reference: q.id,
    jobId: q.job_id,
    asset: assetSnapshot(q),
    /** Base units, an integer string. */
    amount: String(q.amount),
    payTo: q.pay_to,
    createdAt: new Date(q.created_at),
    expiresAt,
    /** A transfer made until then still pays (paid_late after expiresAt). */
    watchUntil: new Date(expiresAt.getTime() + lateWindowMs(settings)),
    ...(binding ? { binding } : {}),
  };
}
export type QuoteTerms = ReturnType<typeof quoteTerms>;
