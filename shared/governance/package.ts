// The governance proof package and ballot receipts: building (with a signer), and the offline checks —
// recompute every ballot commitment, the ballots' Merkle root and the tally; check a voter's receipt
// against the package. Loads no configuration: a verifier needs only the service's public key.
import { z } from 'zod';
import { canonicalJson } from '../canonical';
import { sha256Hex, verifyEd25519 } from '../crypto';
import type { Signer } from '../crypto';
import { fromHex, inclusionProof, leafHash, rootHash, toHex, verifyInclusion } from '../translog/merkle';
import { chainGenesis, verifyChain } from '../workflows/chain';
import { checkEnvelope, envelopeShape, signPackage } from '../workflows/envelope';
import type { Envelope, Reason } from '../workflows/envelope';
import { HEX64, ballotCommitment } from './commitments';
import { chainSchema } from './records';
import type { ChainLink } from './records';

const hex64 = z.string().regex(HEX64);

export const governanceGenesis = (proposalId: string): string =>
  chainGenesis({ kind: 'governance', subjectId: proposalId, label: 'Proposal' });

// --- Tally

export interface OpenedBallot {
  commitment: string;
  choice: string;
  salt: string;
  castAt: string;
}

export interface Tally {
  counts: Record<string, number>;
  total: number;
  /** The option with the most ballots; 'tie', 'no_quorum' or 'no_ballots' when none wins. */
  outcome: string;
  winner: string | null;
}

/** Plurality: one option with strictly the most ballots wins, when at least `quorum` ballots were cast. */
export function tallyBallots(options: readonly string[], choices: readonly string[], quorum: number): Tally {
  const counts = Object.fromEntries(options.map((o) => [o, 0])) as Record<string, number>;
  for (const c of choices) if (c in counts) counts[c] = (counts[c] ?? 0) + 1;
  const total = choices.length;
  if (total === 0) return { counts, total, outcome: 'no_ballots', winner: null };
  if (total < quorum) return { counts, total, outcome: 'no_quorum', winner: null };
  const top = Math.max(...Object.values(counts));
  const leaders = options.filter((o) => counts[o] === top);
  if (leaders.length !== 1) return { counts, total, outcome: 'tie', winner: null };
  return { counts, total, outcome: 'passed', winner: leaders[0]! };
}

export const tallyHash = (tally: Tally): string =>
  sha256Hex(canonicalJson({ type: 'proof-exchange/tally/v1', ...tally }));

const commitmentLeaves = (commitments: readonly string[]) => commitments.map((c) => leafHash(fromHex(c)));

/** RFC 6962 root over the ballot commitments in package order (sorted), each leaf the 32 commitment bytes. */
export const ballotsRoot = (commitments: readonly string[]): string =>
  toHex(rootHash(commitmentLeaves(commitments), commitments.length));

// --- Receipts

export const receiptSchema = z
  .object({
    type: z.literal('proof-exchange/ballot-receipt/v1'),
    receiptId: z.string().max(100),
    proposalId: z.string().max(100),
    ballotCommitment: hex64,
    castAt: z.iso.datetime(),
    keyId: z.string().regex(/^[0-9a-f]{16}$/),
    signature: z.string().regex(/^[A-Za-z0-9_-]{86}$/),
  })
  .strict()
  .meta({
    id: 'BallotReceipt',
    description: 'Signed by the service: binds a ballot commitment and its time.',
  });
export type BallotReceipt = z.infer<typeof receiptSchema>;

const receiptMessage = (r: Omit<BallotReceipt, 'signature'>): string =>
  `proof-exchange/ballot-receipt/v1\n${canonicalJson(r)}`;

export function signReceipt(
  body: Omit<BallotReceipt, 'signature' | 'keyId' | 'type'>,
  key: Signer,
): BallotReceipt {
  const unsigned = { type: 'proof-exchange/ballot-receipt/v1' as const, ...body, keyId: key.keyId };
  return { ...unsigned, signature: key.sign(receiptMessage(unsigned)) };
}

export function verifyReceipt(receipt: unknown, publicKey: string): boolean {
  const parsed = receiptSchema.safeParse(receipt);
  if (!parsed.success) return false;
  const { signature, ...body } = parsed.data;
  return verifyEd25519(publicKey, receiptMessage(body), signature);
}

// --- Package

export const governanceStages = ['proposal', 'review', 'vote', 'execution', 'proof'] as const;

const publishedBallotSchema = z
  .object({ commitment: hex64, choice: z.string().max(200), salt: hex64, castAt: z.iso.datetime() })
  .strict();

const tallySchema = z
  .object({
    counts: z.record(z.string(), z.number().int().min(0)),
    total: z.number().int().min(0),
    outcome: z.string().max(40),
    winner: z.string().max(200).nullable(),
  })
  .strict();

export const governancePackageSchema = z
  .object({
    ...envelopeShape,
    kind: z.literal('governance'),
    phase: z.enum(['tallied', 'executed']),
    subject: z
      .object({
        proposalId: z.string().max(100),
        roomId: z.string().max(100),
        title: z.string().max(300),
        descriptionHash: hex64.nullable(),
        options: z.array(z.string().max(200)).min(2).max(20),
        quorum: z.number().int().min(0),
        memberCount: z.number().int().min(0),
        reviewThreshold: z.number().int().min(1),
        votingOpenedAt: z.iso.datetime(),
        votingEndsAt: z.iso.datetime(),
      })
      .strict(),
    ballots: z.array(publishedBallotSchema).max(100_000),
    ballotsRoot: hex64,
    tally: tallySchema,
    chain: chainSchema,
  })
  .strict()
  .meta({ id: 'GovernancePackage' });
export type GovernancePackage = z.infer<typeof governancePackageSchema> & Envelope;

export interface BuildGovernanceInput {
  proofId: string;
  phase: 'tallied' | 'executed';
  issuedAt: Date;
  subject: GovernancePackage['subject'];
  ballots: readonly OpenedBallot[];
  tally: Tally;
  genesis: string;
  entries: readonly ChainLink[];
}

export function buildGovernancePackage(input: BuildGovernanceInput, key: Signer): GovernancePackage {
  const ballots = [...input.ballots]
    .sort((a, b) => (a.commitment < b.commitment ? -1 : 1))
    .map((b) => ({ commitment: b.commitment, choice: b.choice, salt: b.salt, castAt: b.castAt }));
  const entries = [...input.entries];
  const head = entries.length ? entries[entries.length - 1]!.entryHash : input.genesis;
  return signPackage<GovernancePackage>(
    {
      version: 1,
      kind: 'governance',
      proofId: input.proofId,
      issuedAt: input.issuedAt.toISOString(),
      phase: input.phase,
      subject: input.subject,
      ballots,
      ballotsRoot: ballotsRoot(ballots.map((b) => b.commitment)),
      tally: input.tally,
      chain: { genesis: input.genesis, head, entries },
    },
    key,
  );
}

export interface GovernanceVerdict {
  valid: boolean;
  signatureValid: boolean;
  inclusionValid?: boolean;
  chainValid: boolean;
  ballotsValid: boolean;
  tallyValid: boolean;
  reviewMet: boolean;
  recomputedTally?: Tally;
  reasons: Reason[];
}

const fail = (reasons: Reason[], code: string, detail: string): void => {
  reasons.push({ check: 'notAltered', code, detail });
};

/** Recomputes everything a governance package claims. Never throws. */
export function verifyGovernancePackage(
  input: unknown,
  keys: { publicKey: string; logPublicKey?: string },
): GovernanceVerdict {
  const parsed = governancePackageSchema.safeParse(input);
  if (!parsed.success) {
    return {
      valid: false,
      signatureValid: false,
      chainValid: false,
      ballotsValid: false,
      tallyValid: false,
      reviewMet: false,
      reasons: [
        {
          check: 'format',
          code: 'malformed_package',
          detail: parsed.error.issues
            .slice(0, 3)
            .map((i) => `${i.path.join('.')}: ${i.message}`)
            .join('; '),
        },
      ],
    };
  }
  const pkg = parsed.data as GovernancePackage;
  const env = checkEnvelope(pkg, keys);
  const reasons = [...env.reasons];
  const { subject } = pkg;

  let chainValid = true;
  if (pkg.chain.genesis !== governanceGenesis(subject.proposalId)) {
    chainValid = false;
    fail(reasons, 'wrong_genesis', 'The audit chain does not start at this proposal.');
  } else {
    const chain = verifyChain(pkg.chain.genesis, pkg.chain.entries);
    if (!chain.ok) {
      chainValid = false;
      fail(reasons, chain.code, chain.detail);
    } else if (chain.head !== pkg.chain.head || pkg.chain.entries.some((e, i) => e.seq !== i)) {
      chainValid = false;
      fail(reasons, 'chain_head_mismatch', 'The chain head or sequence does not match its entries.');
    }
  }

  let ballotsValid = true;
  const seen = new Set<string>();
  for (const b of pkg.ballots) {
    if (ballotCommitment(b.choice, b.salt, subject.proposalId) !== b.commitment) {
      ballotsValid = false;
      fail(reasons, 'ballot_mismatch', `ballot ${b.commitment.slice(0, 12)}… does not open to its choice`);
      break;
    }
    if (seen.has(b.commitment) || !subject.options.includes(b.choice)) {
      ballotsValid = false;
      fail(reasons, 'ballot_invalid', `ballot ${b.commitment.slice(0, 12)}… is repeated or names no option`);
      break;
    }
    seen.add(b.commitment);
  }
  const commitments = pkg.ballots.map((b) => b.commitment);
  const sorted = [...commitments].sort();
  if (commitments.some((c, i) => c !== sorted[i]) || ballotsRoot(commitments) !== pkg.ballotsRoot) {
    ballotsValid = false;
    fail(reasons, 'ballots_root_mismatch', 'The ballots do not recompute to the published root.');
  }

  const recomputed = tallyBallots(
    subject.options,
    pkg.ballots.map((b) => b.choice),
    subject.quorum,
  );
  let tallyValid = canonicalJson(recomputed) === canonicalJson(pkg.tally);
  if (!tallyValid) fail(reasons, 'tally_mismatch', 'The published tally is not the count of the ballots.');
  const closed = pkg.chain.entries.find((e) => e.action === 'vote_closed');
  if (
    !closed ||
    closed.data?.ballotsRoot !== pkg.ballotsRoot ||
    closed.data?.tallyHash !== tallyHash(pkg.tally) ||
    closed.data?.ballotCount !== pkg.ballots.length
  ) {
    tallyValid = false;
    fail(
      reasons,
      'close_entry_mismatch',
      'The audit chain did not record this tally and these ballots at close.',
    );
  }

  const approvals = new Set(
    pkg.chain.entries.filter((e) => e.action === 'review_approve').map((e) => e.actorCommitment),
  );
  const opened = pkg.chain.entries.findIndex((e) => e.action === 'vote_opened');
  const reviewMet =
    approvals.size >= subject.reviewThreshold &&
    opened > 0 &&
    pkg.chain.entries.slice(opened).every((e) => e.stage !== 'review' && e.stage !== 'proposal');
  if (!reviewMet)
    reasons.push({
      check: 'approvalsMet',
      code: 'review_not_met',
      detail: 'The vote opened without the required review approvals.',
    });
  if (pkg.phase === 'executed' && !pkg.chain.entries.some((e) => e.action === 'executed'))
    reasons.push({
      check: 'completed',
      code: 'not_executed',
      detail: 'The package claims an execution it does not record.',
    });

  const valid =
    env.signatureValid &&
    env.inclusionValid !== false &&
    chainValid &&
    ballotsValid &&
    tallyValid &&
    reviewMet &&
    reasons.length === 0;
  return {
    valid,
    signatureValid: env.signatureValid,
    ...(env.inclusionValid === undefined ? {} : { inclusionValid: env.inclusionValid }),
    chainValid,
    ballotsValid,
    tallyValid,
    reviewMet,
    recomputedTally: recomputed,
    reasons,
  };
}

export interface ReceiptCheck {
  receiptValid: boolean;
  packageValid: boolean;
  /** The receipt's commitment is among the package's ballots: false with a valid receipt proves a dropped ballot. */
  included: boolean;
  /** With the voter's own choice and salt: the published ballot is the one they cast. */
  ballotMatches?: boolean;
  /** The commitment's RFC 6962 inclusion path to ballotsRoot, checked. */
  inclusion?: { index: number; path: string[]; valid: boolean };
}

/** A voter's check: their signed receipt against a published package (and optionally their own opening). */
export function checkReceiptAgainstPackage(
  receipt: unknown,
  pkg: unknown,
  keys: { publicKey: string; logPublicKey?: string },
  opening?: { choice: string; salt: string },
): ReceiptCheck {
  const receiptValid = verifyReceipt(receipt, keys.publicKey);
  const verdict = verifyGovernancePackage(pkg, keys);
  const r = receipt as BallotReceipt;
  if (!verdict.valid || !receiptValid) return { receiptValid, packageValid: verdict.valid, included: false };
  const p = pkg as GovernancePackage;
  if (r.proposalId !== p.subject.proposalId) return { receiptValid, packageValid: true, included: false };
  const commitments = p.ballots.map((b) => b.commitment);
  const index = commitments.indexOf(r.ballotCommitment);
  if (index < 0) return { receiptValid, packageValid: true, included: false };
  const leaves = commitmentLeaves(commitments);
  const path = inclusionProof(leaves, index, leaves.length);
  const valid = verifyInclusion(leaves[index]!, index, leaves.length, path, fromHex(p.ballotsRoot));
  const published = p.ballots[index]!;
  return {
    receiptValid,
    packageValid: true,
    included: true,
    ...(opening
      ? {
          ballotMatches:
            published.choice === opening.choice &&
            published.salt === opening.salt &&
            ballotCommitment(opening.choice, opening.salt, p.subject.proposalId) === r.ballotCommitment,
        }
      : {}),
    inclusion: { index, path: path.map(toHex), valid },
  };
}
