// Ordering a job on the agent exchange: the one path behind createJob (POST /api/jobs) and the A2A
// SendMessage, so referral credit, a license's prepaid credit, quotes and webhooks follow the same
// rules on both. Nothing is written when the job cannot be paid for: a license never makes a priced
// job free, only its prepaid credit pays it.
import type { Knex } from 'knex';
import { checkWebhookTarget, registerJobWebhook, webhookEventNames } from '../deliveries/webhooks';
import { createJob } from '../jobs/jobs';
import type { JobRow } from '../jobs/jobs';
import { creditPrepayment } from '../licensing/entitlements';
import { holdGrant } from '../licensing/grants';
import type { Grantor } from '../licensing/grants';
import type { AmountHolder } from '../payments/amount-holds';
import { attachQuotes, prepareQuotes } from '../payments/quotes';
import { jobPayment } from '../payments/job-payment';
import type { JobPaymentView } from '../payments/views';
import type { Db } from '../platform/db/knex';
import type { Queues } from '../platform/queues';
import { attributeJob, referralForJob } from './referrals';

export interface JobOrder {
  service: string;
  input: Record<string, unknown>;
  webhook?: { url: string } | undefined;
  referralCode?: string | undefined;
  /** The job's id, minted ahead (an A2A conversation's task id); a new one when absent. */
  id?: string | undefined;
}

/** Who orders: an agent (with the network that registered it), a license, or neither. */
export interface OrderingCaller {
  agent: { agentId: string; network: string | null } | null;
  licenseId: string | null;
  /**
   * The license's credential that orders (the license key of its generation, or an organization key):
   * the job's capability is minted under it and dies with it (shared/licensing/grants.ts).
   */
  grantor: Grantor | null;
  /** Whose budget the job's unique amounts are held on (`amountHolder`). */
  holder: AmountHolder;
  /** The service's address the caller reached, for the job's links and its x402 requirements. */
  base: string;
}

export interface OrderedJob {
  row: JobRow;
  /** The job's capability (jt_…): shown to the creator in this one reply, never again. */
  accessToken: string;
  /** A priced job left unpaid: its quotes and x402 requirements. */
  payment: JobPaymentView | undefined;
  /** The job's webhook subscription, its signing secret shown this once. */
  webhook: { url: string; secret: string; events: string[] } | undefined;
}

/**
 * Validates, prices and stores a job for the caller; `also` runs in the job's transaction, so what a
 * protocol keeps beside the job is written with it or not at all.
 */
export async function orderJob(
  db: Db,
  queues: Queues,
  caller: OrderingCaller,
  order: JobOrder,
  also?: (trx: Knex.Transaction, row: JobRow) => Promise<void>,
): Promise<OrderedJob> {
  const referral = await referralForJob(db, order.referralCode, caller.agent);
  // A license's prepaid credit (if any) pays a priced job in the same transaction, else the job is
  // quoted like anyone's.
  const licenseId = caller.licenseId ?? undefined;
  const quoting = prepareQuotes(order.service);
  const prepared = licenseId ? await quoting.catch(() => undefined) : await quoting;
  if (order.webhook) await checkWebhookTarget(order.webhook.url);
  let webhook: OrderedJob['webhook'];
  const { row, accessToken } = await createJob(
    db,
    queues,
    {
      service: order.service,
      input: order.input,
      agentId: caller.agent?.agentId ?? null,
      licenseId,
      organizationKeyId: caller.grantor?.keyId ?? null,
      prepayment: licenseId ? creditPrepayment(licenseId) : undefined,
      id: order.id,
    },
    referral || prepared || order.webhook || licenseId || caller.grantor || also
      ? async (trx, created) => {
          // A credential rotated or revoked since this request was authenticated mints nothing: the
          // job is not written (and one written before the revocation has its capability revoked).
          if (caller.grantor) await holdGrant(trx, caller.grantor);
          // Credit did not cover it and it cannot be quoted either: nothing is written.
          if (created.status === 'awaiting_payment' && !prepared) await quoting;
          if (referral) await attributeJob(trx, created.id, referral.id);
          if (prepared && created.status === 'awaiting_payment')
            await attachQuotes(trx, created, prepared, caller.holder);
          if (order.webhook) {
            const jobUrl = `${caller.base}/api/jobs/${created.id}`;
            const subscribed = await registerJobWebhook(trx, created, { url: order.webhook.url, jobUrl });
            webhook = { ...subscribed, events: [...webhookEventNames] };
          }
          await also?.(trx, created);
        }
      : undefined,
  );
  const payment =
    prepared && row.status === 'awaiting_payment'
      ? await jobPayment(db, row, caller.base, { unavailable: prepared.unavailable })
      : undefined;
  return { row, accessToken, payment, webhook };
}
