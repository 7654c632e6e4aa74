// Creating a job for a caller: the one path behind createJob (POST /api/jobs) and the A2A send
// message, so referrals, a license's prepaid credit, quotes and webhooks follow the same rules on both.
import type { Request } from 'express';
import type { Knex } from 'knex';
import type { z } from 'zod';
import { attributeJob, referralForJob } from '../../shared/exchange/referrals';
import { createJob } from '../../shared/jobs/jobs';
import type { JobRow } from '../../shared/jobs/jobs';
import { attachQuotes } from '../../shared/payments/payments';
import type { JobPaymentView } from '../../shared/payments/payments';
import type { AppDeps } from '../deps';
import type { Principal } from '../http/auth';
import type { jobWebhookSchema } from './payments';
import { checkJobWebhook, newJobPayment, quoteForNewJob, subscribeJobWebhook } from './payments';

export interface NewJobRequest {
  service: string;
  input: Record<string, unknown>;
  webhook?: { url: string } | undefined;
  referralCode?: string | undefined;
}

export interface NewJob {
  row: JobRow;
  /** A priced job left unpaid: its quotes and x402 requirements. */
  payment: JobPaymentView | undefined;
  webhook: z.infer<typeof jobWebhookSchema> | undefined;
}

/**
 * Validates, prices and stores a job for the caller; `also` runs in the job's transaction, so what a
 * protocol keeps beside the job is written with it or not at all. Nothing is written when the job
 * could not be paid for: a license never makes a priced job free, only its prepaid credit pays it.
 */
export async function createJobFor(
  req: Request,
  deps: AppDeps,
  auth: Principal,
  request: NewJobRequest,
  also?: (trx: Knex.Transaction, row: JobRow) => Promise<void>,
): Promise<NewJob> {
  const agentId = auth.kind === 'agent' ? auth.agentId : null;
  const referral = await referralForJob(deps.db, request.referralCode, agentId);
  // A license never makes a priced job free: its prepaid credit (if any) pays it in the same
  // transaction, else the job is quoted like anyone's.
  const prepaidLicenseId = auth.kind === 'license' ? auth.licenseId : undefined;
  const quoting = quoteForNewJob(request.service);
  const prepared = prepaidLicenseId ? await quoting.catch(() => undefined) : await quoting;
  await checkJobWebhook(request.webhook);
  let webhook: z.infer<typeof jobWebhookSchema> | undefined;
  const row = await createJob(
    deps.db,
    deps.queues,
    { service: request.service, input: request.input, agentId, prepaidLicenseId },
    referral || prepared || request.webhook || prepaidLicenseId || also
      ? async (trx, created) => {
          // Credit did not cover it and it cannot be quoted either: nothing is written.
          if (created.status === 'awaiting_payment' && !prepared) await quoting;
          if (referral) await attributeJob(trx, created.id, referral.id);
          if (prepared && created.status === 'awaiting_payment') await attachQuotes(trx, created, prepared);
          if (request.webhook) webhook = await subscribeJobWebhook(trx, created, request.webhook, req, deps);
          await also?.(trx, created);
        }
      : undefined,
  );
  const payment = await newJobPayment(row, prepared, req, deps);
  return { row, payment, webhook };
}
