// Login challenges of the private-payments hand-off: the service issues and records each text; the
// provider, after checking the wallet's signature, redeems it here once, before it expires.
import { sha256Hex } from '../crypto';
import type { Db } from '../db/knex';
import { AppError } from '../errors';
import { verifyWalletSignature } from '../exchange/wallet';

export interface ChallengeParts {
  title: string;
  timestamp: Date;
  wallet: string;
}

/** The spec's three lines, nothing else: title, `Timestamp: <ISO 8601>`, `User: <wallet>`. */
export const challengeText = (title: string, wallet: string, at: Date) =>
  `${title}\nTimestamp: ${at.toISOString()}\nUser: ${wallet}`;

/** Reads a challenge text back into its parts; undefined when it is not exactly the three lines. */
export function parseChallenge(text: string): ChallengeParts | undefined {
  const lines = text.split('\n');
  if (lines.length !== 3) return undefined;
  const [title, stamp, user] = lines as [string, string, string];
  const at = /^Timestamp: (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z)$/.exec(stamp)?.[1];
  const wallet = /^User: ([1-9A-HJ-NP-Za-km-z]{32,44})$/.exec(user)?.[1];
  const timestamp = at ? new Date(at) : undefined;
  if (!title.trim() || !wallet || !timestamp || Number.isNaN(timestamp.getTime())) return undefined;
  return { title, timestamp, wallet };
}

interface ChallengeRow {
  challenge_hash: string;
  wallet: string;
  issued_at: Date;
  expires_at: Date;
  redeemed_at: Date | null;
}

// Redeemed and expired rows are kept this long after expiry, so a late replay is answered as such
// rather than as unknown; then they are pruned when the next challenge is issued.
const KEEP_AFTER_EXPIRY_MS = 60 * 60_000;

/**
 * Issues and records a challenge for a wallet. Title, timestamp and wallet make the text unique: a
 * second challenge for the same wallet in the same millisecond is stamped one millisecond later.
 */
export async function issueLoginChallenge(
  db: Db,
  wallet: string,
  opts: { title: string; ttlSeconds: number; now?: Date },
): Promise<{ challenge: string; issuedAt: Date; expiresAt: Date }> {
  const base = (opts.now ?? new Date()).getTime();
  await db('login_challenges')
    .where('expires_at', '<', new Date(base - KEEP_AFTER_EXPIRY_MS))
    .delete();
  for (let step = 0; step < 16; step++) {
    const issuedAt = new Date(base + step);
    const expiresAt = new Date(issuedAt.getTime() + opts.ttlSeconds * 1000);
    const challenge = challengeText(opts.title, wallet, issuedAt);
    const inserted = await db('login_challenges')
      .insert({
        challenge_hash: sha256Hex(challenge),
        wallet,
        issued_at: issuedAt,
        expires_at: expiresAt,
      })
      .onConflict('challenge_hash')
      .ignore()
      .returning('challenge_hash');
    if (inserted.length) return { challenge, issuedAt, expiresAt };
  }
  throw new AppError(503, 'challenge_busy', 'Too many challenges for this wallet at once; try again.');
}

export interface RedeemedChallenge {
  wallet: string;
  issuedAt: string;
  expiresAt: string;
  redeemedAt: string;
}

/**
 * Redeems an issued challenge once: the wallet's signature over the exact text must verify, the text
 * must be one the service issued to that wallet, unredeemed and unexpired. One conditional update
 * decides, so of two concurrent redemptions exactly one succeeds.
 */
export async function redeemLoginChallenge(
  db: Db,
  input: { wallet: string; challenge: string; signature: string },
  now = new Date(),
): Promise<RedeemedChallenge> {
  if (!verifyWalletSignature(input.wallet, input.challenge, input.signature)) {
    throw new AppError(
      401,
      'challenge_signature_invalid',
      'The signature is not the wallet’s ed25519 signature over the challenge text.',
    );
  }
  const hash = sha256Hex(input.challenge);
  const [row] = (await db('login_challenges')
    .where({ challenge_hash: hash, wallet: input.wallet })
    .whereNull('redeemed_at')
    .where('expires_at', '>', now)
    .update({ redeemed_at: now })
    .returning('*')) as ChallengeRow[];
  if (row) {
    return {
      wallet: row.wallet,
      issuedAt: row.issued_at.toISOString(),
      expiresAt: row.expires_at.toISOString(),
      redeemedAt: now.toISOString(),
    };
  }
  const existing = (await db('login_challenges').where({ challenge_hash: hash }).first()) as
    ChallengeRow | undefined;
  if (!existing || existing.wallet !== input.wallet) {
    throw new AppError(
      404,
      'challenge_unknown',
      'This challenge was not issued to this wallet (or was altered after issue).',
    );
  }
  if (existing.redeemed_at) {
    throw new AppError(409, 'challenge_used', 'This challenge was already used to log in; get a new one.');
  }
  throw new AppError(409, 'challenge_expired', 'This challenge has expired; get a new one.');
}
