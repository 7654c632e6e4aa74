// The sealed auction proof package: every commitment and reveal under two Merkle roots, the outcome,
// and the service's signature and log proof. Verification recomputes all of it from the bids alone.
// Only the winner is named: every other bid shows its commitment, its bidder tag and amount (which
// recompute the commitment) and its fate, never a wallet, a deposit reference or the salt that would let
// anyone confirm a guessed wallet (in a private room, that would be a membership test).
import { z } from 'zod';
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import type { Signer } from '../platform/crypto';
import { leafHash, rootHash, toHex, fromHex } from '../platform/translog/merkle';
import type { Trust } from '../platform/trust';
import { checkEnvelope, envelopeShape, signPackage } from '../proofs/envelope';
import type { Envelope, Reason } from '../proofs/envelope';
import { HEX64 } from '../proofs/records';
import { bidCommitment, bidderTag, legacyBidCommitment } from './commitments';
import { decideAuction, statedRules } from './rules';
import type { AuctionOutcome, AuctionTerms, BidRecord } from './rules';
import type { PackageChecker } from '../platform/translog/bundle';

const hex64 = z.string().regex(HEX64);
const amount = z.string().regex(/^(0|[1-9]\d{0,77})$/);

const bidSchema = z
  .object({
    commitment: hex64,
    bidder: z.string().max(100).nullable(),
    depositRef: z.string().max(200).nullable(),
    committedAt: z.iso.datetime(),
    reveal: z
      .object({ amount, salt: hex64.nullable(), bidderTag: hex64.optional(), revealedAt: z.iso.datetime() })
      .strict()
      .nullable(),
  })
  .strict();

const outcomeSchema = z
  .object({
    winner: z.string().max(100).nullable(),
    winningCommitment: hex64.nullable(),
    price: amount.nullable(),
    reason: z.enum(['highest_bid', 'tie_earliest_commit', 'sole_bidder', 'no_valid_bids']),
    bids: z.array(
      z
        .object({
          commitment: hex64,
          status: z.enum(['valid', 'unrevealed', 'late', 'below_reserve']),
          deposit: z.enum(['applied_to_price', 'refunded', 'forfeited']),
        })
        .strict(),
    ),
    counts: z
      .object({
        bids: z.number().int(),
        valid: z.number().int(),
        unrevealed: z.number().int(),
        late: z.number().int(),
        belowReserve: z.number().int(),
      })
      .strict(),
  })
  .strict();

export const auctionPackageSchema = z
  .object({
    ...envelopeShape,
    kind: z.literal('auction'),
    subject: z
      .object({
        auctionId: z.string().max(100),
        title: z.string().max(300),
        visibility: z.enum(['public', 'private-room']),
        asset: z.string().max(40),
        pricing: z.enum(['first', 'second']),
        reserve: amount,
        biddingEndsAt: z.iso.datetime(),
        revealEndsAt: z.iso.datetime(),
        unrevealedDeposit: z.enum(['refunded', 'forfeited']),
        revealBy: z.literal('trustees').optional(),
        rules: z.record(z.string(), z.string()),
      })
      .strict(),
    bids: z.array(bidSchema).max(100_000),
    commitmentsRoot: hex64,
    revealsRoot: hex64,
    outcome: outcomeSchema,
  })
  .strict()
  .meta({ id: 'AuctionPackage' });
export type AuctionPackage = z.infer<typeof auctionPackageSchema> & Envelope;
export type AuctionSubject = AuctionPackage['subject'];

/** Bids in package order: by commit time, then commitment. */
const ordered = (bids: readonly BidRecord[]) =>
  [...bids].sort((a, b) =>
    a.committedAt !== b.committedAt
      ? a.committedAt < b.committedAt
        ? -1
        : 1
      : a.commitment < b.commitment
        ? -1
        : 1,
  );

export const commitmentsRoot = (bids: readonly BidRecord[]): string =>
  toHex(
    rootHash(
      bids.map((b) => leafHash(fromHex(b.commitment))),
      bids.length,
    ),
  );

export function revealsRoot(bids: readonly BidRecord[]): string {
  const leaves = bids
    .filter((b) => b.reveal)
    .map((b) => leafHash(Buffer.from(canonicalJson({ commitment: b.commitment, ...b.reveal }), 'utf8')));
  return toHex(rootHash(leaves, leaves.length));
}

/**
 * A bid as the package shows it. The winner in full; a bid under the first formula (no bidder tag)
 * in full too, since nothing else can check it; every other bid without wallet, deposit or salt.
 */
function published(b: BidRecord, winning: string | null): BidRecord {
  const reveal = b.reveal;
  const tagged =
    reveal && b.bidder && reveal.salt && bidCommitment(reveal.amount, reveal.salt, b.bidder) === b.commitment;
  const named = b.commitment === winning || (reveal !== null && !tagged);
  return {
    commitment: b.commitment,
    bidder: named ? b.bidder : null,
    depositRef: named ? b.depositRef : null,
    committedAt: b.committedAt,
    reveal: reveal
      ? {
          amount: reveal.amount,
          salt: named ? reveal.salt : null,
          ...(tagged ? { bidderTag: bidderTag(reveal.salt!, b.bidder!) } : {}),
          revealedAt: reveal.revealedAt,
        }
      : null,
  };
}

export function buildAuctionPackage(
  input: { proofId: string; issuedAt: Date; subject: AuctionSubject; bids: readonly BidRecord[] },
  key: Signer,
): AuctionPackage {
  const all = ordered(input.bids);
  const outcome = decideAuction(input.subject, all);
  const bids = all.map((b) => published(b, outcome.winningCommitment));
  return signPackage<AuctionPackage>(
    {
      version: 1,
      kind: 'auction',
      proofId: input.proofId,
      issuedAt: input.issuedAt.toISOString(),
      subject: input.subject,
      bids,
      commitmentsRoot: commitmentsRoot(bids),
      revealsRoot: revealsRoot(bids),
      outcome,
    },
    key,
  );
}

/**
 * A revealed bid against its commitment: with its bidder tag, sha256 [amount, tag] (and, when the bidder
 * is named, the tag from salt and bidder); without one, the first formula, which needs all three.
 */
function opensCommitment(b: BidRecord): boolean {
  const r = b.reveal!;
  if (r.bidderTag) {
    const named = b.bidder !== null || r.salt !== null;
    if (named && (!b.bidder || !r.salt || bidderTag(r.salt, b.bidder) !== r.bidderTag)) return false;
    return sha256Hex(canonicalJson([r.amount, r.bidderTag])) === b.commitment;
  }
  return !!b.bidder && !!r.salt && legacyBidCommitment(r.amount, r.salt, b.bidder) === b.commitment;
}

export interface AuctionVerdict {
  valid: boolean;
  signatureValid: boolean;
  inclusionValid?: boolean;
  revealsValid: boolean;
  rootsValid: boolean;
  outcomeValid: boolean;
  recomputedOutcome?: AuctionOutcome;
  reasons: Reason[];
}

/** Recomputes commitments from reveals, both roots, the stated rules and the outcome. Never throws. */
export function verifyAuctionPackage(
  input: unknown,
  trust: Trust,
  opts: { loggedAt?: string } = {},
): AuctionVerdict {
  const parsed = auctionPackageSchema.safeParse(input);
  if (!parsed.success)
    return {
      valid: false,
      signatureValid: false,
      revealsValid: false,
      rootsValid: false,
      outcomeValid: false,
      reasons: [
        {
          check: 'format',
          code: 'malformed_package',
          detail: parsed.error.issues[0]?.message ?? 'malformed',
        },
      ],
    };
  const pkg = parsed.data as AuctionPackage;
  const env = checkEnvelope(pkg, trust, opts);
  const reasons = [...env.reasons];
  const altered = (code: string, detail: string) => reasons.push({ check: 'notAltered', code, detail });

  let revealsValid = true;
  for (const b of pkg.bids) {
    if (b.reveal && !opensCommitment(b)) {
      revealsValid = false;
      altered('reveal_mismatch', `the reveal of ${b.commitment.slice(0, 12)}… does not open its commitment`);
      break;
    }
  }
  const sorted = ordered(pkg.bids);
  const rootsValid =
    sorted.every((b, i) => b === pkg.bids[i]) &&
    new Set(pkg.bids.map((b) => b.commitment)).size === pkg.bids.length &&
    commitmentsRoot(pkg.bids) === pkg.commitmentsRoot &&
    revealsRoot(pkg.bids) === pkg.revealsRoot;
  if (!rootsValid) altered('root_mismatch', 'The bids do not recompute to the published Merkle roots.');

  const t: AuctionTerms = pkg.subject;
  const recomputed = decideAuction(t, pkg.bids);
  const rules = canonicalJson(pkg.subject.rules);
  const outcomeValid =
    canonicalJson(recomputed) === canonicalJson(pkg.outcome) &&
    (canonicalJson(statedRules(t)) === rules || canonicalJson(statedRules(t, true)) === rules);
  if (!outcomeValid) altered('outcome_mismatch', 'The outcome or stated rules do not follow from the bids.');
  return {
    valid: env.signatureValid && env.inclusionValid !== false && revealsValid && rootsValid && outcomeValid,
    signatureValid: env.signatureValid,
    ...(env.inclusionValid === undefined ? {} : { inclusionValid: env.inclusionValid }),
    revealsValid,
    rootsValid,
    outcomeValid,
    recomputedOutcome: recomputed,
    reasons,
  };
}

/** The auction verifier as a bundle's package check (shared/platform/translog/bundle.ts). */
export const checkAuctionPackage: PackageChecker = async (pkg, keys) => {
  const v = verifyAuctionPackage(pkg, keys);
  return {
    valid: v.valid,
    summary: `auction: reveals ${v.revealsValid ? 'open their commitments' : 'do not open their commitments'}, roots ${v.rootsValid ? 'recompute' : 'do not recompute'}, outcome ${v.outcomeValid ? 'follows from the bids' : 'does not follow'}`,
    reasons: v.reasons.map((r) => `${r.check}: ${r.code}: ${r.detail}`),
  };
};
