// The trustee's side: its keys, its part in the room's key ceremony, and its partial decryptions after a
// vote's close. Everything secret stays here — the trustee's secret, the shares it dealt (kept to answer
// a complaint) and the share it holds; the service receives signed public messages and proofs. Imports
// nothing of the service's state: the CLI and the tests run it as a trustee would.
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import { randomBytes } from 'node:crypto';
import {
  DECRYPTION_KIND,
  auctionOpeningContext,
  ballotEphemeral,
  deal,
  dealingCommitments,
  decryptionStatement,
  newTrusteeSecret,
  openShare,
  partialDecrypt,
  publicShareOf,
  scalarFrom,
  shareHex,
  shareMatches,
  sumShares,
  trusteeKeysFrom,
  trusteeMessage,
} from './threshold';
import type { Dealing, TrusteeKeys } from './threshold';

/** The trustee's file: its secret, and per room the shares it dealt (needed only to answer a complaint). */
export interface TrusteeFile {
  secret: string;
  /** roomId → the plaintext share it dealt to each trustee, hex, in order. */
  dealt?: Record<string, string[]>;
}

export const newTrusteeFile = (): TrusteeFile => ({ secret: newTrusteeSecret() });
export const trusteePublicKeys = (file: TrusteeFile): TrusteeKeys => trusteeKeysFrom(file.secret).keys;

interface CeremonyMessage<B> {
  trustee: number;
  body: B;
  signature: string;
}
export interface Ceremony {
  roomId: string;
  status: 'dealing' | 'ready';
  threshold: number;
  trustees: Array<TrusteeKeys & { index: number; name: string }>;
  dealings: Array<CeremonyMessage<Dealing>>;
  verdicts: Array<CeremonyMessage<{ dealer: number; ok: boolean }>>;
  answers: Array<CeremonyMessage<{ complainer: number; share: string }>>;
  pendingComplaints: Array<{ dealer: number; complainer: number }>;
  qualified: number[];
  jointKey: string | null;
  verificationShares: string[] | null;
}

export class ServiceRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    what: string,
  ) {
    super(`${what}: ${status} ${String(body.code ?? '')}: ${String(body.detail ?? '')}`);
    this.name = 'ServiceRefused';
  }
}

async function call<T>(
  fetchImpl: typeof fetch,
  baseUrl: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<T> {
  const res = await fetchImpl(new URL(path, baseUrl), {
    method,
    headers: {
      accept: 'application/json',
      ...(body === undefined
        ? {}
        : { 'content-type': 'application/json', 'idempotency-key': randomBytes(16).toString('hex') }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new ServiceRefused(res.status, json, `${method} ${path}`);
  return json as T;
}

export const fetchCeremony = (baseUrl: string, roomId: string, fetchImpl: typeof fetch = fetch) =>
  call<Ceremony>(fetchImpl, baseUrl, 'GET', `/api/governance/rooms/${roomId}/trustees`);

/** This trustee's number in the room, from its public key. */
export function trusteeIndexIn(ceremony: Ceremony, file: TrusteeFile): number {
  const { publicKey } = trusteePublicKeys(file);
  const me = ceremony.trustees.find((t) => t.publicKey === publicKey);
  if (!me) throw new Error(`This key is not one of the trustees of room ${ceremony.roomId}.`);
  return me.index;
}

const signed = <B>(file: TrusteeFile, roomId: string, kind: string, trustee: number, body: B) => ({
  trustee,
  body,
  signature: trusteeKeysFrom(file.secret).signer.sign(trusteeMessage(roomId, kind, body)),
});

/** The share a dealer gave this trustee: published in answer to its complaint, else opened from the seal. */
function shareFrom(ceremony: Ceremony, file: TrusteeFile, me: number, dealer: number): bigint | null {
  const answered = ceremony.answers.find((a) => a.trustee === dealer && a.body.complainer === me);
  if (answered) return scalarFrom(answered.body.share);
  const dealing = ceremony.dealings.find((d) => d.trustee === dealer);
  if (!dealing) return null;
  return openShare(
    trusteeKeysFrom(file.secret).box,
    ceremony.roomId,
    dealer,
    me,
    dealing.body.shares[me - 1] ?? '',
  );
}

/**
 * One round of this trustee's part in the ceremony: deal if it has not, judge every dealing it has not
 * judged (a share that does not match its dealer's commitments is a complaint), answer every complaint
 * against its own dealing. Returns what it did and the ceremony after; run again until `ready`.
 * The file gains the shares it dealt: the caller keeps it.
 */
export async function ceremonyRound(
  baseUrl: string,
  roomId: string,
  file: TrusteeFile,
  fetchImpl: typeof fetch = fetch,
): Promise<{ did: string[]; ceremony: Ceremony; file: TrusteeFile }> {
  let ceremony = await fetchCeremony(baseUrl, roomId, fetchImpl);
  const me = trusteeIndexIn(ceremony, file);
  const did: string[] = [];
  const post = async (kind: 'dealings' | 'verdicts' | 'answers', message: unknown) => {
    ceremony = await call<Ceremony>(
      fetchImpl,
      baseUrl,
      'POST',
      `/api/governance/rooms/${roomId}/trustees/${kind}`,
      message,
    );
  };
  if (ceremony.status !== 'dealing') return { did, ceremony, file };
  if (!ceremony.dealings.some((d) => d.trustee === me)) {
    const { dealing, plainShares } = dealWithShares(roomId, me, ceremony);
    file = { ...file, dealt: { ...file.dealt, [roomId]: plainShares } };
    await post('dealings', signed(file, roomId, 'dealing', me, dealing));
    did.push('dealt');
  }
  for (const d of ceremony.dealings) {
    if (ceremony.status !== 'dealing') break;
    if (ceremony.verdicts.some((v) => v.trustee === me && v.body.dealer === d.trustee)) continue;
    const commitments = dealingCommitments(d.body, ceremony.threshold);
    const share = shareFrom(ceremony, file, me, d.trustee);
    const ok = !!commitments && share !== null && shareMatches(commitments, me, share);
    await post('verdicts', signed(file, roomId, 'verdict', me, { dealer: d.trustee, ok }));
    did.push(
      ok ? `accepted trustee ${d.trustee}'s dealing` : `complained about trustee ${d.trustee}'s dealing`,
    );
  }
  for (const c of ceremony.pendingComplaints.filter((p) => p.dealer === me)) {
    if (ceremony.status !== 'dealing') break;
    const share = file.dealt?.[roomId]?.[c.complainer - 1];
    if (!share)
      throw new Error(
        `Trustee ${c.complainer} complained about this dealing, and this file does not hold what was dealt.`,
      );
    await post('answers', signed(file, roomId, 'answer', me, { complainer: c.complainer, share }));
    did.push(`answered trustee ${c.complainer}'s complaint`);
  }
  return { did, ceremony, file };
}

/** A dealing and the plaintext shares behind it (kept by the dealer to answer complaints). */
function dealWithShares(roomId: string, me: number, ceremony: Ceremony) {
  const plainShares: string[] = [];
  const dealing = deal(roomId, me, ceremony.threshold, ceremony.trustees, (j, share) => {
    plainShares[j - 1] = shareHex(share);
  });
  return { dealing, plainShares };
}

/** This trustee's secret share of the joint key, checked against its published verification share. */
export function secretShareOf(ceremony: Ceremony, file: TrusteeFile): { index: number; share: bigint } {
  if (ceremony.status !== 'ready' || !ceremony.verificationShares)
    throw new Error('The key ceremony has not ended yet.');
  const me = trusteeIndexIn(ceremony, file);
  const shares = ceremony.qualified.map((dealer) => {
    const s = shareFrom(ceremony, file, me, dealer);
    if (s === null) throw new Error(`The share trustee ${dealer} dealt to this trustee does not open.`);
    return s;
  });
  const share = sumShares(shares);
  if (publicShareOf(share) !== ceremony.verificationShares[me - 1])
    throw new Error('This trustee’s shares do not add up to its verification share: it cannot decrypt.');
  return { index: me, share };
}

/**
 * This trustee's partial decryptions of a closed vote: refuses before the close (a trustee never helps
 * open a vote early), proves each, and posts them.
 */
export async function decryptVote(
  baseUrl: string,
  proposalId: string,
  file: TrusteeFile,
  fetchImpl: typeof fetch = fetch,
) {
  const state = await call<{ status: string; votingEndsAt?: string }>(
    fetchImpl,
    baseUrl,
    'GET',
    `/api/governance/proposals/${proposalId}`,
  );
  if (state.status !== 'decrypting')
    throw new Error(
      state.status === 'voting' || state.status === 'review'
        ? 'The vote has not closed: a trustee decrypts only after the close.'
        : `Nothing to decrypt: the proposal is ${state.status}.`,
    );
  // The trustee's own clock too: a service that called an open vote closed gets no decryption.
  if (!state.votingEndsAt || Date.parse(state.votingEndsAt) > Date.now())
    throw new Error(
      `The vote ends at ${state.votingEndsAt ?? 'an unknown time'}: a trustee decrypts only after.`,
    );
  const key = await call<{ roomId: string }>(
    fetchImpl,
    baseUrl,
    'GET',
    `/api/governance/proposals/${proposalId}/ballot-key`,
  );
  const ceremony = await fetchCeremony(baseUrl, key.roomId, fetchImpl);
  const { index, share } = secretShareOf(ceremony, file);
  const listed = await call<{
    ballots: Array<{ nullifier: string; ciphertext: string }>;
  }>(fetchImpl, baseUrl, 'GET', `/api/governance/proposals/${proposalId}/ballots`);
  const shares = listed.ballots.flatMap((b) => {
    // The trustee checks each ballot's proof of knowledge itself rather than trusting the listing.
    const R = ballotEphemeral(Buffer.from(b.ciphertext, 'base64url'), proposalId);
    return R ? [{ nullifier: b.nullifier, ...partialDecrypt(share, index, proposalId, R) }] : [];
  });
  const statement = decryptionStatement({ proposalId }, shares);
  return call<{ trusteesDecrypted: number; trusteesNeeded: number }>(
    fetchImpl,
    baseUrl,
    'POST',
    `/api/governance/proposals/${proposalId}/decryptions`,
    {
      trustee: index,
      shares,
      signature: trusteeKeysFrom(file.secret).signer.sign(
        trusteeMessage(key.roomId, DECRYPTION_KIND, statement),
      ),
    },
  );
}

/**
 * This trustee's partial decryptions of a sealed auction's bid openings, after its reveal window: each
 * opening's proof of knowledge checked here, each partial proved. Context as the auction names it.
 */
export async function decryptAuction(
  baseUrl: string,
  auctionId: string,
  file: TrusteeFile,
  fetchImpl: typeof fetch = fetch,
) {
  const auction = await call<{ revealEndsAt: string }>(
    fetchImpl,
    baseUrl,
    'GET',
    `/api/auctions/${auctionId}`,
  );
  // The trustee's own clock too: bids are opened only once the reveal window is over.
  if (Date.parse(auction.revealEndsAt) > Date.now())
    throw new Error(`The reveal window ends at ${auction.revealEndsAt}: a trustee decrypts only after.`);
  const listed = await call<{
    roomId: string;
    bids: Array<{ bidId: string; commitment: string; sealedOpening: string }>;
  }>(fetchImpl, baseUrl, 'GET', `/api/auctions/${auctionId}/sealed-bids`);
  const ceremony = await fetchCeremony(baseUrl, listed.roomId, fetchImpl);
  const { index, share } = secretShareOf(ceremony, file);
  const shares = listed.bids.map((b) => {
    const context = auctionOpeningContext(auctionId, b.commitment);
    const R = ballotEphemeral(Buffer.from(b.sealedOpening, 'base64url'), context);
    if (!R) throw new Error(`Bid ${b.bidId}'s sealed opening does not prove itself for its commitment.`);
    return { bidId: b.bidId, ...partialDecrypt(share, index, context, R) };
  });
  const statement = decryptionStatement({ auctionId }, shares);
  return call<{ trusteesDecrypted: number; trusteesNeeded: number }>(
    fetchImpl,
    baseUrl,
    'POST',
    `/api/auctions/${auctionId}/decryptions`,
    {
      trustee: index,
      shares,
      signature: trusteeKeysFrom(file.secret).signer.sign(
        trusteeMessage(listed.roomId, DECRYPTION_KIND, statement),
      ),
    },
  );
}

/** A short fingerprint of a trustee's public keys, for people to compare out of band. */
export const keyFingerprint = (keys: TrusteeKeys): string => sha256Hex(canonicalJson(keys)).slice(0, 16);
