// The anonymous ballot protocol, as voter, service and offline verifier all compute it: identities and
// nullifiers (Poseidon, as circuits/ballot.circom), the room's member tree, the proposal scope, the
// vote's encryption to the proposal key and the hash that binds it to a proof. Pure: no configuration,
// no database; node:crypto, Poseidon (shared/platform/field), and the Groth16 gate (the native verifier when built, else snarkjs).
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  createCipheriv,
  createDecipheriv,
  randomBytes,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import {
  ANONYMITY_CIRCUIT,
  ANONYMITY_PUBLIC_SIGNALS,
  ANONYMITY_TREE_DEPTH,
  MAX_TREE_IDENTITIES,
  fieldHash,
  membershipSignals,
  verifyMembershipProof,
} from '../zk/anonymity';
import type { Groth16ProofJson } from '../zk/anonymity';

// Identities, the member tree and nullifiers are the anonymous-membership core in shared/zk, which
// workflow approvals share; they are re-exported here under the names governance has always used.
export {
  DECIMAL_FIELD,
  createIdentity,
  identityFromSecret,
  isFieldElement,
  memberPath,
  memberTreeLevels,
  memberTreeRoot,
  nullifierOf,
  zeroHashes,
} from '../zk/anonymity';
export type { Groth16ProofJson, Identity } from '../zk/anonymity';

export const BALLOT_CIRCUIT = ANONYMITY_CIRCUIT;
/** Depth of the member tree in the circuit: rooms of up to 2^10 = 1024 identities. */
export const BALLOT_TREE_DEPTH = ANONYMITY_TREE_DEPTH;
export const MAX_ROOM_IDENTITIES = MAX_TREE_IDENTITIES;
/** The circuit's public signals, in order (outputs first). */
export const BALLOT_PUBLIC_SIGNALS = ANONYMITY_PUBLIC_SIGNALS;

/**
 * Every vote is padded to this many bytes before encryption, so a ciphertext's length says nothing of
 * the option chosen: 2 length bytes, the choice in UTF-8 (at most 200 characters, 800 bytes), zeros.
 */
export const VOTE_PLAINTEXT_BYTES = 1024;
const EPHEMERAL_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const BALLOT_CIPHERTEXT_BYTES = EPHEMERAL_BYTES + NONCE_BYTES + VOTE_PLAINTEXT_BYTES + TAG_BYTES;

/** The proposal as the circuit's scope: a member's nullifier differs from one proposal to the next. */
export const proposalScope = (proposalId: string): bigint =>
  fieldHash(`proof-exchange/governance/ballot-scope/v1\n${proposalId}`);

/** The vote hash a ballot proof commits to: the ciphertext, byte for byte. */
export const voteHashOf = (ciphertext: Uint8Array): bigint => fieldHash(ciphertext);

/** sha256 of the ciphertext, hex: how receipts and packages name a ballot's content. */
export const ciphertextDigest = (ciphertext: Uint8Array): string =>
  createHash('sha256').update(ciphertext).digest('hex');

// --- The vote's encryption: X25519 to the proposal key, HKDF-SHA256, AES-256-GCM

const X25519_PKCS8 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const X25519_SPKI = Buffer.from('302a300506032b656e032100', 'hex');

const x25519Private = (raw: Uint8Array): KeyObject =>
  createPrivateKey({ key: Buffer.concat([X25519_PKCS8, raw]), format: 'der', type: 'pkcs8' });
const x25519Public = (raw: Uint8Array): KeyObject =>
  createPublicKey({ key: Buffer.concat([X25519_SPKI, raw]), format: 'der', type: 'spki' });
const rawPublic = (key: KeyObject): Buffer =>
  Buffer.from(key.export({ format: 'der', type: 'spki' })).subarray(X25519_SPKI.length);

/** The proposal's X25519 public key (32 bytes) from its private key. */
export const ballotPublicKey = (privateKey: Uint8Array): Buffer =>
  rawPublic(createPublicKey(x25519Private(privateKey)));

function voteKey(shared: Buffer, ephemeral: Uint8Array, recipient: Uint8Array, proposalId: string): Buffer {
  return Buffer.from(
    hkdfSync(
      'sha256',
      shared,
      Buffer.concat([ephemeral, recipient]),
      `proof-exchange/governance/vote/v1\n${proposalId}`,
      32,
    ),
  );
}

/** The vote padded to VOTE_PLAINTEXT_BYTES: 2 length bytes, the choice in UTF-8, zeros. */
export function padVote(choice: string): Buffer {
  const bytes = Buffer.from(choice, 'utf8');
  if (bytes.length === 0 || bytes.length > VOTE_PLAINTEXT_BYTES - 2)
    throw new Error('A choice is 1 to 200 characters.');
  const plain = Buffer.alloc(VOTE_PLAINTEXT_BYTES);
  plain.writeUInt16BE(bytes.length, 0);
  bytes.copy(plain, 2);
  return plain;
}

/** Encrypts a choice to the proposal's public key: ephemeral key ‖ nonce ‖ padded vote ‖ tag. */
export function encryptVote(proposalPublicKey: Uint8Array, proposalId: string, choice: string): Buffer {
  const ephemeral = generateKeyPairSync('x25519');
  const ephemeralRaw = rawPublic(ephemeral.publicKey);
  const shared = diffieHellman({
    privateKey: ephemeral.privateKey,
    publicKey: x25519Public(proposalPublicKey),
  });
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv(
    'aes-256-gcm',
    voteKey(shared, ephemeralRaw, proposalPublicKey, proposalId),
    nonce,
  );
  cipher.setAAD(Buffer.from(proposalId));
  const body = Buffer.concat([cipher.update(padVote(choice)), cipher.final()]);
  return Buffer.concat([ephemeralRaw, nonce, body, cipher.getAuthTag()]);
}

/**
 * Opens a ballot with the proposal's private key: the choice, or null when the ciphertext is not a
 * well-formed vote for this proposal (a spoiled ballot). Never throws.
 */
export function decryptVote(
  proposalPrivateKey: Uint8Array,
  proposalId: string,
  ciphertext: Uint8Array,
): string | null {
  try {
    if (ciphertext.length !== BALLOT_CIPHERTEXT_BYTES) return null;
    const ct = Buffer.from(ciphertext);
    const ephemeral = ct.subarray(0, EPHEMERAL_BYTES);
    const nonce = ct.subarray(EPHEMERAL_BYTES, EPHEMERAL_BYTES + NONCE_BYTES);
    const body = ct.subarray(EPHEMERAL_BYTES + NONCE_BYTES, ct.length - TAG_BYTES);
    const shared = diffieHellman({
      privateKey: x25519Private(proposalPrivateKey),
      publicKey: x25519Public(ephemeral),
    });
    const recipient = ballotPublicKey(proposalPrivateKey);
    const decipher = createDecipheriv(
      'aes-256-gcm',
      voteKey(shared, ephemeral, recipient, proposalId),
      nonce,
    );
    decipher.setAAD(Buffer.from(proposalId));
    decipher.setAuthTag(ct.subarray(ct.length - TAG_BYTES));
    return unpadVote(Buffer.concat([decipher.update(body), decipher.final()]));
  } catch {
    return null;
  }
}

/** The choice of a padded vote; null when the padding or the UTF-8 is not well formed. Never throws. */
export function unpadVote(plain: Buffer): string | null {
  try {
    if (plain.length !== VOTE_PLAINTEXT_BYTES) return null;
    const length = plain.readUInt16BE(0);
    if (length === 0 || length > VOTE_PLAINTEXT_BYTES - 2 || plain.subarray(2 + length).some((b) => b !== 0))
      return null;
    return new TextDecoder('utf-8', { fatal: true }).decode(plain.subarray(2, 2 + length));
  } catch {
    return null;
  }
}

// --- Proofs

/** The public signals a ballot proof must verify against, in circuit order. */
export const ballotSignals = (s: {
  root: string;
  nullifier: string;
  scope: bigint;
  voteHash: bigint;
}): string[] =>
  membershipSignals({ root: s.root, nullifier: s.nullifier, scope: s.scope, message: s.voteHash });

/** Groth16 verification against the ballot circuit's verification key. Never throws. */
export const verifyBallotProof = (
  vkey: unknown,
  proof: Groth16ProofJson,
  publicSignals: string[],
): Promise<boolean> => verifyMembershipProof(vkey, proof, publicSignals);
