// Referral codes: an agent hands out a code; a job created with it is attributed to the agent, and the
// job's confirmed revenue shows under the referral in the revenue summary.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../db/knex';
import { env } from '../env';
import { AppError, conflict } from '../errors';
import { newId } from '../ids';

export const referralCodePattern = /^[A-Za-z0-9][A-Za-z0-9_-]{3,39}$/;
// Codes are case-insensitive: stored upper-case, so "acme-10" and "ACME-10" are one code.
const normalize = (code: string) => code.toUpperCase();
// Crockford base32 without I, L, O, U: nothing to misread when a code is typed.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

function generatedCode(): string {
  const bytes = randomBytes(10);
  return Array.from(bytes, (b) => ALPHABET[b & 31]).join('');
}

export interface ReferralRow {
  id: string;
  code: string;
  agent_id: string;
  commission_bps: number;
  note: string | null;
  created_at: Date;
}

export function referralTerms() {
  return {
    commissionBps: env.REFERRAL_COMMISSION_BPS,
    basis: 'confirmed payments of jobs created with the code (receipts), in USD cents at the quoted price',
    attribution: 'createJob with ?ref=CODE or the X-Referral-Code header; the first code on a job holds',
    selfReferral:
      'a referrer cannot be credited for its own jobs, nor for jobs of an agent registered with the same wallet',
  };
}

export async function createReferral(
  db: Db,
  agentId: string,
  input: { code?: string | undefined; note?: string | undefined },
): Promise<ReferralRow> {
  const code = normalize(input.code ?? generatedCode());
  const [row] = (await db('referrals')
    .insert({
      id: newId('ref'),
      code,
      agent_id: agentId,
      commission_bps: env.REFERRAL_COMMISSION_BPS,
      note: input.note ?? null,
    })
    .onConflict('code')
    .ignore()
    .returning('*')) as ReferralRow[];
  if (!row) throw conflict('referral_code_taken', `The referral code ${code} is already in use.`);
  return row;
}

/** The referral a code names; unknown codes are refused so a mistyped code is not silently lost. */
export async function resolveReferral(db: Db, code: string): Promise<ReferralRow> {
  const row = referralCodePattern.test(code)
    ? ((await db('referrals').where('code', normalize(code)).first()) as ReferralRow | undefined)
    : undefined;
  if (!row) {
    throw new AppError(422, 'unknown_referral', `There is no referral code ${code}.`, {
      errors: [{ path: 'ref', message: 'unknown referral code' }],
    });
  }
  return row;
}

/** The referral a new job is created under, checked before the job is stored (undefined: none given). */
export async function referralForJob(
  db: Db,
  code: string | undefined,
  agentId: string | null,
): Promise<ReferralRow | undefined> {
  if (code === undefined || code === '') return undefined;
  const referral = await resolveReferral(db, code);
  // One wallet is one party: a second agent registered with the referrer's wallet is the referrer.
  const sameWallet =
    agentId !== null &&
    referral.agent_id !== agentId &&
    !!(await db('agents as a')
      .join('agents as b', 'a.wallet_public_key', 'b.wallet_public_key')
      .where('a.id', agentId)
      .andWhere('b.id', referral.agent_id)
      .first('a.id'));
  if (referral.agent_id === agentId || sameWallet) {
    throw new AppError(
      422,
      'self_referral',
      'An agent cannot refer its own jobs (or those of an agent with its wallet).',
      {
        errors: [{ path: 'ref', message: 'own referral code' }],
      },
    );
  }
  return referral;
}

/** Ties a just-created job to its referral; the first attribution holds. */
export async function attributeJob(
  db: Db | Knex.Transaction,
  jobId: string,
  referralId: string,
): Promise<void> {
  await db('jobs').where({ id: jobId }).whereNull('referral_id').update({ referral_id: referralId });
}
