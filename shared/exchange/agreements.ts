// Agreements between two agents: terms hashed canonically when proposed, accepted by the counterparty's
// wallet signature over that hash. proposed → accepted | expired | cancelled.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import type { Db } from '../platform/db/knex';
import { AppError, conflict, notFound, unprocessable } from '../platform/errors';
import { newId } from '../platform/ids';
import type { AssetId } from '../chains/assets';
import { findAgent, getAgent } from './agents';
import { verifyWalletSignature } from '../platform/wallet';

export const AGREEMENT_TERMS_TYPE = 'proof-exchange.agreement/v1';
export const agreementStatuses = ['proposed', 'accepted', 'expired', 'cancelled'] as const;
export type AgreementStatus = (typeof agreementStatuses)[number];
/** An offer not accepted within this long expires, unless it names an earlier expiresAt. */
export const DEFAULT_OFFER_SECONDS = 7 * 24 * 3600;

export interface Sla {
  deliveryWithinSeconds?: number | undefined;
  availabilityBps?: number | undefined;
  maxRetries?: number | undefined;
  remedy?: string | undefined;
}

/** Exactly what the terms hash commits to (canonical JSON, sorted keys, timestamps as ISO 8601 UTC). */
export interface AgreementTerms {
  type: typeof AGREEMENT_TERMS_TYPE;
  proposer: { agentId: string; walletPublicKey: string };
  counterparty: { agentId: string; walletPublicKey: string };
  service: string;
  listingId?: string;
  price: { usdCents: number; asset: AssetId };
  deadline: string;
  sla: Sla;
  expiresAt: string;
  nonce: string;
}

export const termsHashOf = (terms: AgreementTerms): string => sha256Hex(canonicalJson(terms));

export interface AgreementRow {
  id: string;
  proposer_agent_id: string;
  counterparty_agent_id: string;
  terms: AgreementTerms;
  terms_hash: string;
  status: AgreementStatus;
  proposer_signature: string | null;
  proposer_key: string | null;
  acceptance_signature: string | null;
  acceptance_key: string | null;
  expires_at: Date;
  created_at: Date;
  updated_at: Date;
  accepted_at: Date | null;
}

export function agreementView(row: AgreementRow) {
  return {
    id: row.id,
    status: row.status,
    terms: row.terms,
    termsHash: row.terms_hash,
    signing: {
      algorithm: 'ed25519' as const,
      message: 'the termsHash as 64 lower-case hex characters (UTF-8)',
      encoding: 'base58',
    },
    signatures: {
      proposer: row.proposer_signature
        ? { agentId: row.proposer_agent_id, publicKey: row.proposer_key!, signature: row.proposer_signature }
        : null,
      counterparty: row.acceptance_signature
        ? {
            agentId: row.counterparty_agent_id,
            publicKey: row.acceptance_key!,
            signature: row.acceptance_signature,
          }
        : null,
    },
    createdAt: new Date(row.created_at).toISOString(),
    expiresAt: new Date(row.expires_at).toISOString(),
    acceptedAt: row.accepted_at ? new Date(row.accepted_at).toISOString() : null,
  };
}
export type AgreementView = ReturnType<typeof agreementView>;

export interface CreateAgreementInput {
  counterpartyAgentId: string;
  service: string;
  listingId?: string | undefined;
  priceUsdCents: number;
  asset: AssetId;
  deadline: string;
  sla: Sla;
  expiresAt?: string | undefined;
  nonce?: string | undefined;
  proposerSignature?: string | undefined;
}

const iso = (s: string) => new Date(s).toISOString();

/** The terms a proposal will be stored with; exported so a client (and the tests) can hash them first. */
export function buildTerms(
  proposer: { id: string; wallet_public_key: string },
  counterparty: { id: string; wallet_public_key: string },
  input: CreateAgreementInput,
  now = new Date(),
): AgreementTerms {
  const deadline = iso(input.deadline);
  const expiresAt = input.expiresAt
    ? iso(input.expiresAt)
    : new Date(Math.min(Date.parse(deadline), now.getTime() + DEFAULT_OFFER_SECONDS * 1000)).toISOString();
  const sla: Sla = Object.fromEntries(Object.entries(input.sla).filter(([, v]) => v !== undefined));
  return {
    type: AGREEMENT_TERMS_TYPE,
    proposer: { agentId: proposer.id, walletPublicKey: proposer.wallet_public_key },
    counterparty: { agentId: counterparty.id, walletPublicKey: counterparty.wallet_public_key },
    service: input.service,
    ...(input.listingId ? { listingId: input.listingId } : {}),
    price: { usdCents: input.priceUsdCents, asset: input.asset },
    deadline,
    sla,
    expiresAt,
    nonce: input.nonce ?? randomBytes(16).toString('base64url'),
  };
}

export async function createAgreement(
  db: Db,
  proposerAgentId: string,
  input: CreateAgreementInput,
  now = new Date(),
): Promise<AgreementRow> {
  if (input.counterpartyAgentId === proposerAgentId) {
    throw unprocessable('invalid_counterparty', 'An agreement needs another agent as the counterparty.');
  }
  if (Date.parse(input.deadline) <= now.getTime())
    throw unprocessable('deadline_passed', 'The deadline must be in the future.');
  if (input.expiresAt && Date.parse(input.expiresAt) <= now.getTime())
    throw unprocessable('invalid_expiry', 'expiresAt must be in the future.');
  if (input.expiresAt && Date.parse(input.expiresAt) > Date.parse(input.deadline))
    throw unprocessable('invalid_expiry', 'expiresAt cannot be after the deadline.');
  const proposer = await getAgent(db, proposerAgentId);
  const counterparty = await findAgent(db, input.counterpartyAgentId);
  if (!counterparty) {
    throw new AppError(422, 'counterparty_not_found', `There is no agent ${input.counterpartyAgentId}.`, {
      errors: [{ path: 'body.counterpartyAgentId', message: 'unknown agent' }],
    });
  }
  if (input.listingId) {
    const listing = await db('listings').where({ id: input.listingId }).first('seller_agent_id');
    if (!listing) throw unprocessable('listing_not_found', `There is no listing ${input.listingId}.`);
  }
  const terms = buildTerms(proposer, counterparty, input, now);
  const termsHash = termsHashOf(terms);
  if (
    input.proposerSignature &&
    !verifyWalletSignature(proposer.wallet_public_key, termsHash, input.proposerSignature)
  ) {
    throw unprocessable(
      'signature_invalid',
      "proposerSignature is not the proposer's wallet signature over the terms hash.",
      { termsHash },
    );
  }
  const [row] = (await db('agreements')
    .insert({
      id: newId('agr'),
      proposer_agent_id: proposer.id,
      counterparty_agent_id: counterparty.id,
      terms: JSON.stringify(terms),
      terms_hash: termsHash,
      proposer_signature: input.proposerSignature ?? null,
      proposer_key: input.proposerSignature ? proposer.wallet_public_key : null,
      expires_at: terms.expiresAt,
    })
    .onConflict('terms_hash')
    .ignore()
    .returning('*')) as AgreementRow[];
  if (!row) throw conflict('agreement_exists', 'An agreement with exactly these terms (and nonce) exists.');
  return row;
}

/** Moves a proposal past its expiry to `expired` (a conditional write: only a stale proposal changes). */
async function expireIfDue(q: Db | Knex.Transaction, row: AgreementRow): Promise<AgreementRow> {
  if (row.status !== 'proposed' || new Date(row.expires_at).getTime() > Date.now()) return row;
  const [updated] = (await q('agreements')
    .where({ id: row.id, status: 'proposed' })
    .andWhere('expires_at', '<=', q.fn.now())
    .update({ status: 'expired', updated_at: q.fn.now() })
    .returning('*')) as AgreementRow[];
  return updated ?? row;
}

/** An agreement, for one of its two parties; anyone else is told it does not exist. */
export async function getAgreement(db: Db, id: string, agentId: string): Promise<AgreementRow> {
  const row = (await db('agreements').where({ id }).first()) as AgreementRow | undefined;
  if (!row || (row.proposer_agent_id !== agentId && row.counterparty_agent_id !== agentId)) {
    throw notFound(`Agreement ${id}`);
  }
  return expireIfDue(db, row);
}

export interface AcceptInput {
  termsHash: string;
  signature: string;
}

type AcceptOutcome = { ok: true; row: AgreementRow } | { ok: false; error: AppError };

export async function acceptAgreement(
  db: Db,
  id: string,
  agentId: string,
  input: AcceptInput,
): Promise<AgreementRow> {
  // An expiry found here is written before the error is raised, so the transaction returns it.
  const outcome = await db.transaction(async (trx): Promise<AcceptOutcome> => {
    const found = (await trx('agreements').where({ id }).forUpdate().first()) as AgreementRow | undefined;
    if (!found) throw notFound(`Agreement ${id}`);
    if (found.counterparty_agent_id !== agentId) {
      throw new AppError(
        403,
        'not_counterparty',
        'Only the counterparty named in the terms can accept them.',
      );
    }
    const row = await expireIfDue(trx, found);
    if (row.status === 'accepted')
      return {
        ok: false,
        error: conflict('agreement_already_accepted', 'This agreement was already accepted.'),
      };
    if (row.status === 'cancelled')
      return { ok: false, error: conflict('agreement_cancelled', 'This agreement was cancelled.') };
    if (row.status === 'expired') {
      return {
        ok: false,
        error: conflict(
          'agreement_expired',
          `This offer expired at ${new Date(row.expires_at).toISOString()}.`,
        ),
      };
    }
    if (termsHashOf(row.terms) !== row.terms_hash || input.termsHash.toLowerCase() !== row.terms_hash) {
      return {
        ok: false,
        error: conflict('terms_hash_mismatch', 'The terms hash does not match the terms of this agreement.', {
          termsHash: row.terms_hash,
        }),
      };
    }
    const counterparty = await getAgent(trx, agentId);
    if (!verifyWalletSignature(counterparty.wallet_public_key, row.terms_hash, input.signature)) {
      return {
        ok: false,
        error: unprocessable(
          'signature_invalid',
          "The signature is not the counterparty's registered wallet key signing the terms hash.",
        ),
      };
    }
    const [accepted] = (await trx('agreements')
      .where({ id, status: 'proposed' })
      .update({
        status: 'accepted',
        acceptance_signature: input.signature,
        acceptance_key: counterparty.wallet_public_key,
        accepted_at: trx.fn.now(),
        updated_at: trx.fn.now(),
      })
      .returning('*')) as AgreementRow[];
    return { ok: true, row: accepted! };
  });
  if (!outcome.ok) throw outcome.error;
  return outcome.row;
}
