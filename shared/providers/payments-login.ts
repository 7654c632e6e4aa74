// Login challenges of the private-payments hand-off: the service issues and records each text (with a
// random nonce in its title); the provider, authenticated by a shared secret, redeems it here once,
// before it expires, after checking the wallet's signature, which the service checks again.
import { randomBytes } from 'node:crypto';
import { canonicalJson } from '../platform/canonical';
import { hmacSha256Hex, safeEqual, sha256Hex } from '../platform/crypto';
import type { Db } from '../platform/db/knex';
import { AppError } from '../platform/errors';
import { verifyWalletSignature } from '../platform/wallet';

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

/** 128 random bits, base64url: a challenge is unguessable and unique without relying on the clock. */
const newNonce = () => randomBytes(16).toString('base64url');

/**
 * Issues and records a challenge for a wallet. The spec allows a title line, a Timestamp line and a
 * User line, nothing more, so the nonce goes in the title: `<title> nonce:<22 base64url chars>`.
 */
export async function issueLoginChallenge(
  db: Db,
  wallet: string,
  opts: { title: string; ttlSeconds: number; now?: Date },
): Promise<{ challenge: string; issuedAt: Date; expiresAt: Date }> {
  const issuedAt = opts.now ?? new Date();
  const expiresAt = new Date(issuedAt.getTime() + opts.ttlSeconds * 1000);
  await db('login_challenges')
    .where('expires_at', '<', new Date(issuedAt.getTime() - KEEP_AFTER_EXPIRY_MS))
    .delete();
  const challenge = challengeText(`${opts.title} nonce:${newNonce()}`, wallet, issuedAt);
  await db('login_challenges').insert({
    challenge_hash: sha256Hex(challenge),
    wallet,
    issued_at: issuedAt,
    expires_at: expiresAt,
  });
  return { challenge, issuedAt, expiresAt };
}

// ---------------------------------------------------------------------------------------------------
// The provider's authentication: an HMAC-SHA256 under PAYMENTS_PROVIDER_SECRET over a timestamp and
// the canonical JSON of the redemption, sent as `X-Provider-Signature: t=<unix seconds>,v1=<hex>`.
// Holding a signed challenge text is not enough to spend it: only the provider holds the secret.

export const PROVIDER_SIGNATURE_HEADER = 'x-provider-signature';
/** A signed redemption is accepted this long either side of the service's clock. */
export const PROVIDER_SIGNATURE_TOLERANCE_SECONDS = 300;

const redeemMac = (secret: string, t: number, body: unknown) =>
  hmacSha256Hex(secret, `proof-exchange/challenge-redeem/v1\n${t}\n${canonicalJson(body)}`);

/** The header value a provider sends with a redemption (`body` exactly as it posts it). */
export function signRedemption(secret: string, body: unknown, nowMs = Date.now()): string {
  const t = Math.floor(nowMs / 1000);
  return `t=${t},v1=${redeemMac(secret, t, body)}`;
}

/**
 * Checks a redemption's provider signature. Unconfigured: 503 (nobody can redeem); missing, stale,
 * malformed or wrong: 401 `provider_unauthenticated`, before the challenge is even looked at.
 */
export function authenticateProvider(
  secret: string | undefined,
  header: string | undefined,
  body: unknown,
  nowMs = Date.now(),
): void {
  if (!secret) {
    throw new AppError(
      503,
      'payments_provider_secret_unset',
      'PAYMENTS_PROVIDER_SECRET is not configured: no provider can redeem a login challenge.',
    );
  }
  const refuse = (why: string) =>
    new AppError(
      401,
      'provider_unauthenticated',
      `Only the configured provider can redeem a challenge: ${why}.`,
      {
        headers: { 'WWW-Authenticate': 'X-Provider-Signature' },
      },
    );
  const m = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(header?.trim() ?? '');
  if (!m) throw refuse(`send ${PROVIDER_SIGNATURE_HEADER}: t=<unix seconds>,v1=<hex HMAC-SHA256>`);
  const t = Number(m[1]);
  if (Math.abs(nowMs / 1000 - t) > PROVIDER_SIGNATURE_TOLERANCE_SECONDS)
    throw refuse('the signature is stale');
  if (!safeEqual(m[2]!, redeemMac(secret, t, body))) throw refuse('the signature does not match');
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
