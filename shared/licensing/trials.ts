// Trial challenges: a TRIAL license is claimed with a wallet's ed25519 signature over a text the
// service issued (random nonce, issue and expiry times, the wallet), spent once in the transaction
// that issues the license. One trial per wallet, per organization, and a few per client address a day.
import { createHmac, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { sha256Hex } from '../platform/crypto';
import type { Db } from '../platform/db/knex';
import { AppError } from '../platform/errors';
import { verifyWalletSignature } from '../platform/wallet';
import { purposeKey } from '../platform/sealing';

export const TRIAL_CHALLENGE_TITLE = 'proof-exchange trial license';

export interface TrialProof {
  wallet: string;
  challenge: string;
  signature: string;
}

/** The text a wallet signs: five lines, the nonce making each one unique. */
export const trialChallengeText = (wallet: string, nonce: string, issuedAt: Date, expiresAt: Date) =>
  [
    TRIAL_CHALLENGE_TITLE,
    `Wallet: ${wallet}`,
    `Nonce: ${nonce}`,
    `Issued At: ${issuedAt.toISOString()}`,
    `Expiration Time: ${expiresAt.toISOString()}`,
  ].join('\n');

// Spent and expired challenges are kept this long after expiry (a late replay is told so), then pruned.
const KEEP_AFTER_EXPIRY_MS = 24 * 3600_000;

export async function issueTrialChallenge(
  db: Db,
  wallet: string,
  opts: { ttlSeconds: number; now?: Date },
): Promise<{ challenge: string; nonce: string; issuedAt: Date; expiresAt: Date }> {
  const issuedAt = opts.now ?? new Date();
  const expiresAt = new Date(issuedAt.getTime() + opts.ttlSeconds * 1000);
  const nonce = randomBytes(16).toString('base64url');
  const challenge = trialChallengeText(wallet, nonce, issuedAt, expiresAt);
  await db('trial_challenges')
    .where('expires_at', '<', new Date(issuedAt.getTime() - KEEP_AFTER_EXPIRY_MS))
    .delete();
  await db('trial_challenges').insert({
    nonce,
    wallet,
    text_hash: sha256Hex(challenge),
    issued_at: issuedAt,
    expires_at: expiresAt,
  });
  return { challenge, nonce, issuedAt, expiresAt };
}

/** The client address as a key that counts trials without keeping the address. */
export const trialAddressKey = (address: string): string =>
  createHmac('sha256', purposeKey('trial-address')).update(address).digest('hex');

/** Checks the wallet's signature over the exact text; cheap, so it runs before any write. */
export function checkTrialSignature(proof: TrialProof): void {
  if (!verifyWalletSignature(proof.wallet, proof.challenge, proof.signature)) {
    throw new AppError(
      401,
      'wallet_signature_invalid',
      'The signature is not the wallet’s ed25519 signature over the challenge text.',
    );
  }
}

/**
 * Spends the challenge inside the transaction that issues the trial: issued to this wallet, unaltered,
 * unspent and unexpired. One conditional update decides, so a challenge claims at most one trial.
 */
export async function spendTrialChallenge(
  trx: Knex.Transaction,
  proof: TrialProof,
  now: Date,
): Promise<void> {
  const nonce = /^Nonce: ([A-Za-z0-9_-]{16,64})$/m.exec(proof.challenge)?.[1];
  const hash = sha256Hex(proof.challenge);
  const spent = nonce
    ? await trx('trial_challenges')
        .where({ nonce, wallet: proof.wallet, text_hash: hash })
        .whereNull('used_at')
        .andWhere('expires_at', '>', now)
        .update({ used_at: now })
    : 0;
  if (spent) return;
  const row = nonce
    ? ((await trx('trial_challenges').where({ nonce }).first()) as
        { wallet: string; text_hash: string; used_at: Date | null } | undefined)
    : undefined;
  if (!row || row.wallet !== proof.wallet || row.text_hash !== hash) {
    throw new AppError(
      404,
      'challenge_unknown',
      'This challenge was not issued to this wallet (or was altered); get one from POST /api/v1/commercial/trial/challenge.',
    );
  }
  if (row.used_at)
    throw new AppError(409, 'challenge_used', 'This challenge was already used; get a new one.');
  throw new AppError(409, 'challenge_expired', 'This challenge has expired; get a new one.');
}

/** Refuses a further trial from an address that had its daily share (the lock orders racing claims). */
export async function checkTrialAddress(
  trx: Knex.Transaction,
  addressKey: string,
  perDay: number,
  now: Date,
): Promise<void> {
  await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`trial:${addressKey}`]);
  const [row] = (await trx('trial_claims')
    .where({ address_key: addressKey })
    .andWhere('created_at', '>', new Date(now.getTime() - 86_400_000))
    .count({ n: '*' })) as Array<{ n: string }>;
  if (Number(row?.n ?? 0) >= perDay) {
    throw new AppError(
      429,
      'trial_limit_reached',
      `At most ${perDay} trials a day are issued to one address; try again tomorrow.`,
      { headers: { 'Retry-After': '3600' } },
    );
  }
}
