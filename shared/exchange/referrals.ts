// Referral codes: an agent hands out a code; a job created with it by another party is attributed to
// the agent, and the job's confirmed revenue shows under it in the revenue summary. Credit needs a
// payer that is provably someone else: an authenticated agent that is not the referrer, holds another
// wallet and was registered from another network.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { AppError, conflict } from '../platform/errors';
import { newId } from '../platform/ids';

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
      'a code is credited only on jobs created by another registered agent (an Authorization: Bearer ak_… key): not the referrer, not an agent registered with its wallet, not one registered from its network',
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

/** Who creates a job with a referral code: an authenticated agent and the network it registered from. */
export interface ReferralPayer {
  agentId: string;
  /** The tag of the client network that registered it (null for agents registered before it was kept). */
  network: string | null;
}

const selfReferral = (detail: string) =>
  new AppError(422, 'self_referral', detail, { errors: [{ path: 'ref', message: 'own referral code' }] });

/**
 * The referral a new job is created under, checked before the job is stored (undefined: none given).
 * Only an authenticated agent other than the referrer earns the referrer credit: an anonymous or
 * license-created job could be the referrer itself (it takes no key to send one), and a second agent
 * with the referrer's wallet, or registered from its network, is the referrer as far as credit goes.
 */
export async function referralForJob(
  db: Db,
  code: string | undefined,
  payer: ReferralPayer | null,
): Promise<ReferralRow | undefined> {
  if (code === undefined || code === '') return undefined;
  const referral = await resolveReferral(db, code);
  if (!payer) {
    throw new AppError(
      422,
      'referral_needs_agent',
      'A referral code is credited only on a job created by a registered agent: send the job with your agent key (Authorization: Bearer ak_…), or without the code.',
      { errors: [{ path: 'ref', message: 'needs an agent key' }] },
    );
  }
  if (referral.agent_id === payer.agentId) throw selfReferral('An agent cannot refer its own jobs.');
  const parties = (await db('agents')
    .whereIn('id', [payer.agentId, referral.agent_id])
    .select('id', 'wallet_public_key', 'registered_network')) as Array<{
    id: string;
    wallet_public_key: string;
    registered_network: string | null;
  }>;
  const referrer = parties.find((a) => a.id === referral.agent_id);
  const creator = parties.find((a) => a.id === payer.agentId);
  // One wallet is one party.
  if (referrer && creator && referrer.wallet_public_key === creator.wallet_public_key) {
    throw selfReferral('An agent cannot refer the jobs of an agent registered with its wallet.');
  }
  // Agents are free to make: one registered from the referrer's network counts as the referrer.
  if (payer.network !== null && payer.network === referrer?.registered_network) {
    throw selfReferral('An agent cannot refer the jobs of an agent registered from its own network.');
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
