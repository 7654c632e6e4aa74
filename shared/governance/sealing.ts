// Ballot secrecy at rest: a random AES-256-GCM key per proposal, wrapped under the service ballot key
// (BALLOT_KEY, else derived from the signing key); each ballot sealed with its proposal and ballot ids
// as associated data, so a ciphertext opens only in its own row.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { env } from '../env';
import { serviceSigningKey } from '../keys';

const VERSION = 1;
let serviceBallotKey: Buffer | undefined;

function decodeKey(text: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (key.length !== 32) throw new Error('BALLOT_KEY: expected 32 bytes, hex or base64');
  return key;
}

/**
 * ed25519 signatures are deterministic, so the signature over a fixed label is a secret every process
 * holding the signing key computes alike; HKDF separates it from every other use of that key.
 */
function ballotKey(): Buffer {
  if (!serviceBallotKey) {
    const ikm = env.BALLOT_KEY
      ? decodeKey(env.BALLOT_KEY)
      : Buffer.from(serviceSigningKey().sign('proof-exchange/ballot-key/v1'), 'base64url');
    serviceBallotKey = Buffer.from(
      hkdfSync('sha256', ikm, 'proof-exchange', 'ballot-key/aes-256-gcm/v1', 32),
    );
  }
  return serviceBallotKey;
}

/** A key for HMACs the governance routes issue (membership challenges); separate from the wrap key. */
export function challengeKey(): Buffer {
  return Buffer.from(hkdfSync('sha256', ballotKey(), 'proof-exchange', 'governance-challenge/v1', 32));
}

function seal(key: Buffer, aad: string, plain: Buffer): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
}

function open(key: Buffer, aad: string, sealed: Buffer): Buffer {
  if (sealed.length < 29 || sealed[0] !== VERSION) throw new Error('unknown sealed format');
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 13));
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(sealed.subarray(13, 29));
  return Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()]);
}

/** A fresh per-proposal key, returned wrapped for storage. */
export const newWrappedProposalKey = (proposalId: string): Buffer =>
  seal(ballotKey(), `proposal-key:${proposalId}`, randomBytes(32));

const unwrap = (proposalId: string, wrapped: Buffer): Buffer =>
  open(ballotKey(), `proposal-key:${proposalId}`, wrapped);

export interface SealedBallot {
  choice: string;
  salt: string;
}

export function sealBallot(
  proposalId: string,
  wrappedKey: Buffer,
  ballotId: string,
  b: SealedBallot,
): Buffer {
  return seal(
    unwrap(proposalId, wrappedKey),
    `ballot:${proposalId}:${ballotId}`,
    Buffer.from(JSON.stringify({ choice: b.choice, salt: b.salt })),
  );
}

/** Opens every ballot of a proposal with one unwrap of its key (only the close calls this). */
export function ballotOpener(
  proposalId: string,
  wrappedKey: Buffer,
): (ballotId: string, sealed: Buffer) => SealedBallot {
  const key = unwrap(proposalId, wrappedKey);
  return (ballotId, sealed) =>
    JSON.parse(open(key, `ballot:${proposalId}:${ballotId}`, sealed).toString('utf8')) as SealedBallot;
}
