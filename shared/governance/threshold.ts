// Ballots nobody can open early: the arithmetic of a room's trustees, as trustee, voter, service and
// offline verifier all compute it. A distributed key generation (Pedersen's, over Feldman verifiable
// secret sharing) on ristretto255 gives the trustees a joint public key whose secret no one holds;
// voters encrypt to it; after the close each trustee publishes, per ballot, a partial decryption with a
// Chaum–Pedersen proof, and any `threshold` of them open the ballot. Pure: no configuration, no
// database; @noble/curves for the group, node:crypto for hashing, HKDF, AES-GCM and the sealed shares.
import { ristretto255 } from '@noble/curves/ed25519.js';
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { canonicalJson } from '../platform/canonical';
import { signingKeyFromSeed, sha256Hex, verifyEd25519 } from '../platform/crypto';
import { boxKeyPair, openFrom, sealTo } from '../platform/sealing';
import { VOTE_PLAINTEXT_BYTES, padVote, unpadVote } from './ballot-protocol';

const Point = ristretto255.Point;
type GroupPoint = InstanceType<typeof Point>;
const Fn = Point.Fn;
/** The order of ristretto255: every scalar is taken modulo it. */
export const GROUP_ORDER: bigint = Fn.ORDER;

/** At most this many trustees in a room: the transcript and each ballot's decryptions grow with it. */
export const MAX_TRUSTEES = 16;

// --- Scalars and points

const bytesToBigint = (bytes: Uint8Array): bigint => BigInt(`0x${Buffer.from(bytes).toString('hex') || '0'}`);
const scalarBytes = (k: bigint): Buffer => Buffer.from(k.toString(16).padStart(64, '0'), 'hex');
const scalarHex = (k: bigint): string => k.toString(16).padStart(64, '0');

/** A uniformly random non-zero scalar (64 random bytes reduced: bias below 2^-250). */
export function randomScalar(): bigint {
  for (;;) {
    const k = Fn.create(bytesToBigint(randomBytes(64)));
    if (k !== 0n) return k;
  }
}

/** Fiat–Shamir: sha512 over length-prefixed parts, reduced to a scalar. */
function challenge(domain: string, ...parts: Array<string | Uint8Array>): bigint {
  const h = createHash('sha512');
  for (const part of [domain, ...parts]) {
    const bytes = typeof part === 'string' ? Buffer.from(part, 'utf8') : Buffer.from(part);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(bytes.length);
    h.update(len).update(bytes);
  }
  return Fn.create(bytesToBigint(h.digest()));
}

/** k·P for any scalar, zero included (noble refuses 0 in the constant-time path). */
const mul = (p: GroupPoint, k: bigint): GroupPoint => {
  const s = Fn.create(k);
  return s === 0n ? Point.ZERO : p.multiply(s);
};
/**
 * k·P in variable time, for checks over public values only (commitments, verification shares, ballots'
 * R, proofs' scalars): about a third faster than the constant-time ladder, and much faster for the
 * small scalars (trustee indices) the ceremony's sums multiply by. Never used with a secret.
 */
const mulPublic = (p: GroupPoint, k: bigint): GroupPoint => p.multiplyUnsafe(Fn.create(k));
const G = Point.BASE;

/** A point from its 32-byte canonical encoding (base64url); null when it is not one. */
export function pointFrom(text: string): GroupPoint | null {
  try {
    const bytes = Buffer.from(text, 'base64url');
    if (bytes.length !== 32 || bytes.toString('base64url') !== text) return null;
    return Point.fromBytes(bytes);
  } catch {
    return null;
  }
}
const pointText = (p: GroupPoint): string => Buffer.from(p.toBytes()).toString('base64url');

/** A scalar from 64 lowercase hex characters; null when it is not one below the group order. */
export function scalarFrom(text: string): bigint | null {
  if (!/^[0-9a-f]{64}$/.test(text)) return null;
  const k = BigInt(`0x${text}`);
  return k < GROUP_ORDER ? k : null;
}

// --- Trustees' keys

/** What a trustee publishes: an ed25519 key that signs its messages, an X25519 key its shares are sealed to. */
export interface TrusteeKeys {
  /** ed25519, raw 32 bytes, base64url. */
  publicKey: string;
  /** X25519, raw 32 bytes, base64url. */
  encryptionKey: string;
}

/** A trustee's own secret (kept in its file on its own machine) and the keys derived from it. */
export function trusteeKeysFrom(secret: string) {
  const seed = Buffer.from(
    hkdfSync('sha256', Buffer.from(secret), 'proof-exchange', 'trustee/ed25519/v1', 32),
  );
  const signer = signingKeyFromSeed(seed);
  const box = boxKeyPair(secret, 'trustee');
  return {
    signer,
    box,
    keys: { publicKey: signer.publicKey, encryptionKey: box.publicKey.toString('base64url') } as TrusteeKeys,
  };
}

export const newTrusteeSecret = (): string => randomBytes(32).toString('hex');

/** The text a trustee signs for one message of its room's ceremony or of a proposal's decryption. */
export const trusteeMessage = (roomId: string, kind: string, body: unknown): string =>
  `proof-exchange/governance/trustee/v1\nroom:${roomId}\nkind:${kind}\nsha256:${sha256Hex(canonicalJson(body))}`;

export const verifyTrusteeSignature = (
  keys: TrusteeKeys,
  roomId: string,
  kind: string,
  body: unknown,
  signature: string,
): boolean => verifyEd25519(keys.publicKey, trusteeMessage(roomId, kind, body), signature);

// --- The key generation: each trustee deals a Feldman sharing of a random secret

/** A trustee's dealing: commitments to its polynomial's coefficients, and one sealed share per trustee. */
export interface Dealing {
  /** C_k = a_k·G for k = 0 … threshold−1, base64url points. */
  commitments: string[];
  /** f(j) for trustee j = 1 … n, in order, each sealed to that trustee's encryption key (base64url). */
  shares: string[];
}

const shareAad = (roomId: string, dealer: number, recipient: number) =>
  `proof-exchange/governance/dkg-share/v1\n${roomId}\n${dealer}\n${recipient}`;

/** Evaluates Σ a_k x^k. */
const evaluate = (coefficients: readonly bigint[], x: bigint): bigint =>
  coefficients.reduceRight((acc, a) => Fn.add(Fn.mul(acc, x), a), 0n);

/**
 * Deals a fresh random secret to the trustees (indices 1 … n in the order given). `keep` sees each
 * plaintext share as it is sealed: the dealer keeps them to answer a complaint.
 */
export function deal(
  roomId: string,
  dealer: number,
  threshold: number,
  trustees: readonly TrusteeKeys[],
  keep?: (recipient: number, share: bigint) => void,
): Dealing {
  const coefficients = Array.from({ length: threshold }, randomScalar);
  return {
    commitments: coefficients.map((a) => pointText(mul(G, a))),
    shares: trustees.map((t, i) => {
      const share = evaluate(coefficients, BigInt(i + 1));
      keep?.(i + 1, share);
      return sealTo(
        Buffer.from(t.encryptionKey, 'base64url'),
        shareAad(roomId, dealer, i + 1),
        scalarBytes(share),
      ).toString('base64url');
    }),
  };
}

/**
 * Σ C_k · j^k: what f(j)·G must be, by Horner's rule (((C_{t−1}·j + C_{t−2})·j + …)·j + C_0): t − 1
 * multiplications by the small index j rather than t by its powers, which grow to full-size scalars.
 */
function expectedSharePoint(commitments: readonly GroupPoint[], j: number): GroupPoint {
  const x = BigInt(j);
  let acc = Point.ZERO;
  for (let k = commitments.length - 1; k >= 0; k--) acc = mulPublic(acc, x).add(commitments[k]!);
  return acc;
}

/** Parses a dealing's commitments; null when one is not a point or the count is not the threshold. */
export function dealingCommitments(dealing: Dealing, threshold: number): GroupPoint[] | null {
  if (dealing.commitments.length !== threshold) return null;
  const points = dealing.commitments.map(pointFrom);
  if (points.some((p) => p === null) || points[0]!.equals(Point.ZERO)) return null;
  return points as GroupPoint[];
}

/** Whether a share (hex scalar) is trustee j's point on the dealer's committed polynomial. */
export function shareMatches(commitments: readonly GroupPoint[], j: number, share: bigint): boolean {
  return mul(G, share).equals(expectedSharePoint(commitments, j));
}

/** Opens the share a dealer sealed to this trustee; null when it does not open or is not a scalar. */
export function openShare(
  box: ReturnType<typeof boxKeyPair>,
  roomId: string,
  dealer: number,
  recipient: number,
  sealed: string,
): bigint | null {
  try {
    const bytes = openFrom(box, shareAad(roomId, dealer, recipient), Buffer.from(sealed, 'base64url'));
    return bytes.length === 32 ? scalarFrom(bytes.toString('hex')) : null;
  } catch {
    return null;
  }
}

export const shareHex = scalarHex;

/**
 * The ceremony's result from the qualified dealings: the joint public key Σ C_i0, and each trustee's
 * verification share Σ_i Σ_k C_ik j^k (what its secret share times G must be).
 */
export function ceremonyKeys(qualified: ReadonlyArray<readonly GroupPoint[]>, trusteeCount: number) {
  // The sum is linear in the commitments: the dealings' commitments summed coefficient by coefficient
  // give one polynomial in the exponent, evaluated once per trustee (n·t small multiplications, where
  // evaluating each dealing apart took n·t·d).
  const threshold = qualified[0]?.length ?? 0;
  const summed = Array.from({ length: threshold }, (_, k) =>
    qualified.reduce((acc, c) => acc.add(c[k]!), Point.ZERO),
  );
  const jointKey = summed[0] ?? Point.ZERO;
  const verificationShares = Array.from({ length: trusteeCount }, (_, i) =>
    expectedSharePoint(summed, i + 1),
  );
  return { jointKey: pointText(jointKey), verificationShares: verificationShares.map(pointText) };
}

// --- Ballots encrypted to the joint key

const R_BYTES = 32;
const POK_BYTES = 64;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** R ‖ proof of knowledge of r (c ‖ z) ‖ nonce ‖ padded vote ‖ tag. */
export const THRESHOLD_BALLOT_BYTES = R_BYTES + POK_BYTES + NONCE_BYTES + VOTE_PLAINTEXT_BYTES + TAG_BYTES;

const pokChallenge = (proposalId: string, R: GroupPoint, A: GroupPoint) =>
  challenge('proof-exchange/governance/ballot-pok/v1', proposalId, R.toBytes(), A.toBytes());

function voteKey(shared: GroupPoint, R: GroupPoint, jointKey: GroupPoint, proposalId: string): Buffer {
  return Buffer.from(
    hkdfSync(
      'sha256',
      shared.toBytes(),
      Buffer.concat([R.toBytes(), jointKey.toBytes()]),
      `proof-exchange/governance/vote/v2\n${proposalId}`,
      32,
    ),
  );
}

/**
 * Encrypts a choice to the trustees' joint key: R = r·G, the AES key from r·Y, and a Schnorr proof of
 * knowledge of r bound to this proposal. The proof is what stops a ballot of an open proposal from
 * being copied into one that closes first to have the trustees open it early: its R cannot be proved
 * for another proposal by anyone who does not know r.
 */
export function encryptThresholdVote(jointKeyText: string, proposalId: string, choice: string): Buffer {
  const Y = pointFrom(jointKeyText);
  if (!Y || Y.equals(Point.ZERO)) throw new Error('The ballot key is not a ristretto255 point.');
  const r = randomScalar();
  const R = mul(G, r);
  const k = randomScalar();
  const c = pokChallenge(proposalId, R, mul(G, k));
  const z = Fn.add(k, Fn.mul(c, r));
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', voteKey(mul(Y, r), R, Y, proposalId), nonce);
  cipher.setAAD(Buffer.from(proposalId));
  const body = Buffer.concat([cipher.update(padVote(choice)), cipher.final()]);
  return Buffer.concat([R.toBytes(), scalarBytes(c), scalarBytes(z), nonce, body, cipher.getAuthTag()]);
}

/**
 * The ballot's ephemeral point when its proof of knowledge holds for this proposal; null otherwise (a
 * spoiled ballot, never decrypted by a trustee).
 */
export function ballotEphemeral(ciphertext: Uint8Array, proposalId: string): GroupPoint | null {
  if (ciphertext.length !== THRESHOLD_BALLOT_BYTES) return null;
  try {
    const ct = Buffer.from(ciphertext);
    const R = Point.fromBytes(ct.subarray(0, R_BYTES));
    if (R.equals(Point.ZERO)) return null;
    const c = scalarFrom(ct.subarray(R_BYTES, R_BYTES + 32).toString('hex'));
    const z = scalarFrom(ct.subarray(R_BYTES + 32, R_BYTES + 64).toString('hex'));
    if (c === null || z === null) return null;
    const A = mul(G, z).subtract(mulPublic(R, c));
    return pokChallenge(proposalId, R, A) === c ? R : null;
  } catch {
    return null;
  }
}

/** Opens a ballot with the combined r·Y: the choice, or null when it is not a well-formed vote. Never throws. */
export function openThresholdVote(
  sharedText: string,
  jointKeyText: string,
  proposalId: string,
  ciphertext: Uint8Array,
): string | null {
  try {
    const R = ballotEphemeral(ciphertext, proposalId);
    const S = pointFrom(sharedText);
    const Y = pointFrom(jointKeyText);
    if (!R || !S || !Y) return null;
    const ct = Buffer.from(ciphertext);
    const start = R_BYTES + POK_BYTES;
    const nonce = ct.subarray(start, start + NONCE_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', voteKey(S, R, Y, proposalId), nonce);
    decipher.setAAD(Buffer.from(proposalId));
    decipher.setAuthTag(ct.subarray(ct.length - TAG_BYTES));
    return unpadVote(
      Buffer.concat([
        decipher.update(ct.subarray(start + NONCE_BYTES, ct.length - TAG_BYTES)),
        decipher.final(),
      ]),
    );
  } catch {
    return null;
  }
}

/**
 * The context a sealed auction bid's opening is encrypted under (in place of a proposal id): the auction
 * and the bid's commitment, so a trustee decrypting it can never be made to open a ballot or another bid.
 */
export const auctionOpeningContext = (auctionId: string, commitment: string): string =>
  `auction:${auctionId}:commitment:${commitment}`;

// --- Partial decryptions with Chaum–Pedersen proofs

/** One trustee's partial decryption of one ballot: D = x_i·R, and a proof that log_G(Y_i) = log_R(D). */
export interface PartialDecryption {
  /** D_i, base64url point. */
  share: string;
  /** The Chaum–Pedersen proof (Fiat–Shamir): challenge and response, hex scalars. */
  proof: { c: string; z: string };
}

const dleqChallenge = (
  proposalId: string,
  index: number,
  Yi: GroupPoint,
  R: GroupPoint,
  D: GroupPoint,
  A1: GroupPoint,
  A2: GroupPoint,
) =>
  challenge(
    'proof-exchange/governance/partial-decryption/v1',
    proposalId,
    String(index),
    Yi.toBytes(),
    R.toBytes(),
    D.toBytes(),
    A1.toBytes(),
    A2.toBytes(),
  );

/** A trustee's partial decryption of a ballot's R with its secret share x_i. */
export function partialDecrypt(
  secretShare: bigint,
  index: number,
  proposalId: string,
  R: GroupPoint,
): PartialDecryption {
  const Yi = mul(G, secretShare);
  const D = mul(R, secretShare);
  const k = randomScalar();
  const c = dleqChallenge(proposalId, index, Yi, R, D, mul(G, k), mul(R, k));
  return { share: pointText(D), proof: { c: scalarHex(c), z: scalarHex(Fn.add(k, Fn.mul(c, secretShare))) } };
}

/** Checks a partial decryption against the trustee's verification share. Never throws. */
export function verifyPartialDecryption(
  partial: PartialDecryption,
  verificationShare: string,
  index: number,
  proposalId: string,
  R: GroupPoint,
): boolean {
  const D = pointFrom(partial.share);
  const Yi = pointFrom(verificationShare);
  const c = scalarFrom(partial.proof.c);
  const z = scalarFrom(partial.proof.z);
  if (!D || !Yi || c === null || z === null) return false;
  const A1 = mul(G, z).subtract(mulPublic(Yi, c));
  const A2 = mulPublic(R, z).subtract(mulPublic(D, c));
  return dleqChallenge(proposalId, index, Yi, R, D, A1, A2) === c;
}

/**
 * What a trustee signs when it posts its partial decryptions of a vote (or of an auction's bid
 * openings): the set, ordered by what each opens. The signature is checked before any proof, so only
 * a trustee can make the service spend curve arithmetic, and it names who decrypted even where there
 * was nothing to prove (a vote without ballots). The package carries it, for offline verifiers.
 */
export function decryptionStatement(
  of: { proposalId: string } | { auctionId: string },
  shares: ReadonlyArray<PartialDecryption & ({ nullifier: string } | { bidId: string })>,
) {
  const key = (s: (typeof shares)[number]) => ('nullifier' in s ? s.nullifier : s.bidId);
  return {
    ...of,
    shares: [...shares]
      .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
      .map((s) => ({
        ...('nullifier' in s ? { nullifier: s.nullifier } : { bidId: s.bidId }),
        share: s.share,
        proof: { c: s.proof.c, z: s.proof.z },
      })),
  };
}

/** The message kind a trustee signs its decryptions of a vote (or of an auction) under. */
export const DECRYPTION_KIND = 'decryption';

/** λ_i at 0 for the index set: Π_{j≠i} j / (j − i). */
function lagrangeAtZero(indices: readonly number[], i: number): bigint {
  let num = 1n;
  let den = 1n;
  for (const j of indices) {
    if (j === i) continue;
    num = Fn.mul(num, BigInt(j));
    den = Fn.mul(den, Fn.create(BigInt(j - i)));
  }
  return Fn.mul(num, Fn.inv(den));
}

/** r·Y from the partial decryptions of distinct trustees (exactly `threshold` of them are enough). */
export function combinePartials(partials: ReadonlyArray<{ index: number; share: string }>): string {
  const indices = partials.map((p) => p.index);
  if (new Set(indices).size !== indices.length) throw new Error('a trustee is counted twice');
  const sum = partials.reduce((acc, p) => {
    const D = pointFrom(p.share);
    if (!D) throw new Error('a partial decryption is not a point');
    return acc.add(mulPublic(D, lagrangeAtZero(indices, p.index)));
  }, Point.ZERO);
  return pointText(sum);
}

/** A trustee's secret share: the sum of the shares the qualified dealers gave it. */
export const sumShares = (shares: readonly bigint[]): bigint => shares.reduce((a, s) => Fn.add(a, s), 0n);

/** The verification share of a secret share (x·G), to check a trustee's own sum before it decrypts. */
export const publicShareOf = (secretShare: bigint): string => pointText(mul(G, secretShare));

/** A fresh ephemeral key is all a test needs to make an unrelated R. */
export const randomPoint = (): string => pointText(mul(G, randomScalar()));
