// The offline checks of a governance package — verify every ballot's membership proof, open every vote
// with the key the close published (or the trustees' decryptions), recompute the ballots' Merkle root
// and the tally — and a voter's receipt checked against it. Loads no configuration: a verifier needs
// the service's trust root (or public key) and the ballot circuit's verification key. Packages of the
// first, wallet-signed scheme (ballots {commitment, choice, salt, castAt}) still verify.
import { canonicalJson } from '../platform/canonical';
import type { Trust } from '../platform/trust';
import { fromHex, inclusionProof, toHex, verifyInclusion } from '../platform/translog/merkle';
import { verifyChain } from '../proofs/chain';
import { checkEnvelope } from '../proofs/envelope';
import type { EnvelopeCheck, Reason } from '../proofs/envelope';
import type { PackageChecker, PackageFinding } from '../platform/translog/bundle';
import {
  ballotPublicKey,
  ballotSignals,
  ciphertextDigest,
  decryptVote,
  proposalScope,
  verifyBallotProof,
  voteHashOf,
} from './ballot-protocol';
import { legacyBallotCommitment } from './commitments';
import {
  DECRYPTION_KIND,
  ballotEphemeral,
  ceremonyKeys,
  combinePartials,
  dealingCommitments,
  decryptionStatement,
  openThresholdVote,
  verifyPartialDecryption,
  verifyTrusteeSignature,
} from './threshold';
import { governanceGenesis, governancePackageSchema } from './package';
import type {
  AnonymousGovernancePackage,
  GovernancePackage,
  ThresholdBallot,
  ThresholdGovernancePackage,
} from './package';
import { verifyReceipt } from './receipts';
import type { BallotReceipt } from './receipts';
import { anonymousLeaves, ballotsRoot, byNullifier, tallyBallots, tallyHash } from './tally';
import type { PublishedBallot, Tally } from './tally';

export interface GovernanceVerdict {
  valid: boolean;
  signatureValid: boolean;
  inclusionValid?: boolean;
  chainValid: boolean;
  /** Every ballot: a valid membership proof at a listed root, a unique nullifier, its vote opened. */
  ballotsValid: boolean;
  tallyValid: boolean;
  reviewMet: boolean;
  recomputedTally?: Tally;
  reasons: Reason[];
}

/** A trust root (or the service's bare public key), and what else a governance verifier needs. */
export type VerifierKeys = Exclude<Trust, string> & {
  /** The ballot circuit's verification key (circuits/artifacts/ballot.vkey.json, also served at /circuits/). */
  ballotVerificationKey?: unknown;
  /** When the log is known to have recorded the package: holds it against a key revoked since. */
  loggedAt?: string;
};

const fail = (reasons: Reason[], code: string, detail: string): void => {
  reasons.push({ check: 'notAltered', code, detail });
};

const short = (n: string) => `${n.slice(0, 12)}…`;

/** A ballot's vote as its package's scheme opens it: the choice, null (spoiled), or a reason it fails. */
type Opener<B> = (ballot: B, ciphertext: Buffer) => { choice: string | null } | { failure: string };

/** The service-key scheme: the published key pair, checked against the key the vote opened with. */
function serviceKeyOpener(
  pkg: AnonymousGovernancePackage,
  reasons: Reason[],
): Opener<PublishedBallot> | null {
  const privateKey = Buffer.from(pkg.ballotKey.privateKey, 'base64url');
  let keyValid = false;
  try {
    keyValid = ballotPublicKey(privateKey).toString('base64url') === pkg.ballotKey.publicKey;
  } catch {
    keyValid = false;
  }
  const opened = pkg.chain.entries.find((e) => e.action === 'vote_opened');
  if (!keyValid || opened?.data?.ballotPublicKey !== pkg.ballotKey.publicKey) {
    fail(reasons, 'ballot_key_mismatch', 'The published ballot key is not the one the vote opened with.');
    return null;
  }
  return (_b, ciphertext) => ({ choice: decryptVote(privateKey, pkg.subject.proposalId, ciphertext) });
}

/**
 * The trustees' scheme: every qualified dealing signed by its trustee, the joint key their sum and the
 * key the vote opened with; each ballot's proof of knowledge, then `threshold` partial decryptions whose
 * Chaum–Pedersen proofs hold against the trustees' verification shares, combined to open it.
 */
function trusteesOpener(pkg: ThresholdGovernancePackage, reasons: Reason[]): Opener<ThresholdBallot> | null {
  const { trustees, subject } = pkg;
  const members = trustees.members;
  const n = members.length;
  if (members.some((m, i) => m.index !== i + 1) || trustees.threshold > n) {
    fail(
      reasons,
      'trustees_malformed',
      'The trustees are not numbered 1 to n with a threshold of at most n.',
    );
    return null;
  }
  const commitments = [];
  const dealers = new Set<number>();
  for (const d of trustees.dealings) {
    const member = members[d.trustee - 1];
    const points = dealingCommitments(d, trustees.threshold);
    if (
      !member ||
      dealers.has(d.trustee) ||
      !points ||
      !verifyTrusteeSignature(
        member,
        subject.roomId,
        'dealing',
        { commitments: d.commitments, shares: d.shares },
        d.signature,
      )
    ) {
      fail(
        reasons,
        'dealing_invalid',
        `trustee ${d.trustee}'s dealing is not well formed or not signed by it`,
      );
      return null;
    }
    dealers.add(d.trustee);
    commitments.push(points);
  }
  // Fewer qualified dealings than the threshold would let fewer trustees than the threshold know the key.
  if (commitments.length < trustees.threshold) {
    fail(reasons, 'too_few_dealings', 'The joint key rests on fewer dealings than the threshold.');
    return null;
  }
  const keys = ceremonyKeys(commitments, n);
  const opened = pkg.chain.entries.find((e) => e.action === 'vote_opened');
  if (keys.jointKey !== trustees.jointKey || opened?.data?.ballotPublicKey !== trustees.jointKey) {
    fail(
      reasons,
      'ballot_key_mismatch',
      'The joint key is not the sum of the trustees’ dealings, or not the key the vote opened with.',
    );
    return null;
  }
  if (trustees.decrypted && !decryptionsSigned(pkg, reasons)) return null;
  return (b, ciphertext) => {
    const R = ballotEphemeral(ciphertext, subject.proposalId);
    if (!R)
      return b.decryptions.length ? { failure: 'a spoiled ballot carries decryptions' } : { choice: null };
    const seen = new Set<number>();
    for (const d of b.decryptions) {
      const share = keys.verificationShares[d.trustee - 1];
      if (
        seen.has(d.trustee) ||
        !share ||
        !verifyPartialDecryption(d, share, d.trustee, subject.proposalId, R)
      )
        return { failure: `trustee ${d.trustee}'s partial decryption does not prove itself` };
      seen.add(d.trustee);
    }
    if (seen.size < trustees.threshold) return { failure: 'fewer partial decryptions than the threshold' };
    const shared = combinePartials(b.decryptions.map((d) => ({ index: d.trustee, share: d.share })));
    return { choice: openThresholdVote(shared, trustees.jointKey, subject.proposalId, ciphertext) };
  };
}

/**
 * Each trustee named as having decrypted signed the set of partial decryptions the ballots carry for it,
 * and they are the trustees the chain recorded opening the ballots: checked before any curve arithmetic.
 */
function decryptionsSigned(pkg: ThresholdGovernancePackage, reasons: Reason[]): boolean {
  const { trustees, subject } = pkg;
  const decrypted = trustees.decrypted ?? [];
  const opened = pkg.chain.entries.find((e) => e.action === 'ballots_opened');
  const named = decrypted.map((d) => d.trustee);
  if (
    new Set(named).size !== named.length ||
    named.length < trustees.threshold ||
    String(opened?.data?.trustees ?? '') !== named.join(',')
  ) {
    fail(
      reasons,
      'decryptions_unsigned',
      'The trustees said to have decrypted are not the ones the chain recorded opening the ballots.',
    );
    return false;
  }
  const opening = pkg.ballots.filter((b) => b.decryptions.length > 0);
  for (const { trustee, signature } of decrypted) {
    const member = trustees.members[trustee - 1];
    const shares = opening.map((b) => {
      const d = b.decryptions.find((x) => x.trustee === trustee);
      return d ? { nullifier: b.nullifier, share: d.share, proof: d.proof } : null;
    });
    if (
      !member ||
      shares.some((x) => x === null) ||
      !verifyTrusteeSignature(
        member,
        subject.roomId,
        DECRYPTION_KIND,
        decryptionStatement(
          { proposalId: subject.proposalId },
          shares as NonNullable<(typeof shares)[number]>[],
        ),
        signature,
      )
    ) {
      fail(reasons, 'decryptions_unsigned', `trustee ${trustee}'s decryptions are not signed by it`);
      return false;
    }
  }
  return true;
}

/** The anonymous ballots of either scheme: proofs, nullifiers, roots, each vote reopened. */
async function checkAnonymousBallots<B extends PublishedBallot>(
  pkg: {
    subject: GovernancePackage['subject'];
    scope: string;
    membership: { roots: string[] };
    ballots: B[];
    ballotsRoot: string;
  },
  open: Opener<B> | null,
  vkey: unknown,
  reasons: Reason[],
): Promise<boolean> {
  const { subject } = pkg;
  const scope = proposalScope(subject.proposalId);
  if (pkg.scope !== String(scope)) {
    fail(reasons, 'scope_mismatch', 'The scope is not this proposal’s.');
    return false;
  }
  if (!open) return false;
  if (vkey === undefined) {
    fail(reasons, 'no_verification_key', 'The ballot circuit’s verification key was not given.');
    return false;
  }
  const roots = new Set(pkg.membership.roots);
  const seen = new Set<string>();
  for (const b of pkg.ballots) {
    if (seen.has(b.nullifier)) {
      fail(reasons, 'nullifier_repeated', `nullifier ${short(b.nullifier)} is counted twice`);
      return false;
    }
    seen.add(b.nullifier);
    if (!roots.has(b.root)) {
      fail(
        reasons,
        'unknown_root',
        `ballot ${short(b.nullifier)} was proved against a root the package does not list`,
      );
      return false;
    }
    const ciphertext = Buffer.from(b.ciphertext, 'base64url');
    const signals = ballotSignals({
      root: b.root,
      nullifier: b.nullifier,
      scope,
      voteHash: voteHashOf(ciphertext),
    });
    if (!(await verifyBallotProof(vkey, b.proof, signals))) {
      fail(reasons, 'proof_invalid', `ballot ${short(b.nullifier)}: the membership proof does not verify`);
      return false;
    }
    const opened = open(b, ciphertext);
    if ('failure' in opened) {
      fail(reasons, 'decryption_invalid', `ballot ${short(b.nullifier)}: ${opened.failure}`);
      return false;
    }
    const { choice } = opened;
    const counted = choice !== null && subject.options.includes(choice) ? choice : null;
    if (counted !== b.choice) {
      fail(reasons, 'ballot_mismatch', `ballot ${short(b.nullifier)} does not open to its published vote`);
      return false;
    }
  }
  const sorted = [...pkg.ballots].sort(byNullifier);
  if (sorted.some((b, i) => b !== pkg.ballots[i]) || ballotsRoot(pkg.ballots) !== pkg.ballotsRoot) {
    fail(
      reasons,
      'ballots_root_mismatch',
      'The ballots are not in canonical order or do not recompute to the root.',
    );
    return false;
  }
  return true;
}

function checkLegacyBallots(
  pkg: Extract<GovernancePackage, { ballots: Array<{ salt: string }> }>,
  reasons: Reason[],
): boolean {
  const seen = new Set<string>();
  for (const b of pkg.ballots) {
    if (legacyBallotCommitment(b.choice, b.salt, pkg.subject.proposalId) !== b.commitment) {
      fail(reasons, 'ballot_mismatch', `ballot ${short(b.commitment)} does not open to its choice`);
      return false;
    }
    if (seen.has(b.commitment) || !pkg.subject.options.includes(b.choice)) {
      fail(reasons, 'ballot_invalid', `ballot ${short(b.commitment)} is repeated or names no option`);
      return false;
    }
    seen.add(b.commitment);
  }
  const commitments = pkg.ballots.map((b) => b.commitment);
  const sorted = [...commitments].sort();
  if (commitments.some((c, i) => c !== sorted[i]) || ballotsRoot(commitments) !== pkg.ballotsRoot) {
    fail(reasons, 'ballots_root_mismatch', 'The ballots do not recompute to the published root.');
    return false;
  }
  return true;
}

/** A package of anonymous ballots, under the service's key or the trustees'. */
const isAnonymous = (
  pkg: GovernancePackage,
): pkg is AnonymousGovernancePackage | ThresholdGovernancePackage => 'scheme' in pkg;

/**
 * The verdict of a package whose signature or log proof does not hold under the trust root: what the
 * envelope check found, and nothing else checked (ServiceCheck.refused in shared/proofs/service-trust.ts).
 */
export function refusedGovernanceVerdict(envelope: EnvelopeCheck): GovernanceVerdict {
  return {
    valid: false,
    signatureValid: envelope.signatureValid,
    ...(envelope.inclusionValid === undefined ? {} : { inclusionValid: envelope.inclusionValid }),
    chainValid: false,
    ballotsValid: false,
    tallyValid: false,
    reviewMet: false,
    reasons: [...envelope.reasons, notChecked],
  };
}

/** Said of every check a refused envelope leaves unrun. */
export const notChecked: Reason = {
  check: 'notAltered',
  code: 'not_checked',
  detail:
    'The package is not one this service signed and logged, so its other checks (chain, ballots, tally, review) were not run.',
};

/** Recomputes everything a governance package claims, proofs included. Never throws. */
export async function verifyGovernancePackage(
  input: unknown,
  keys: VerifierKeys,
): Promise<GovernanceVerdict> {
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
  const env = checkEnvelope(pkg, keys, keys.loggedAt ? { loggedAt: keys.loggedAt } : {});
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

  const anonymous = isAnonymous(pkg);
  const ballotsValid = !anonymous
    ? checkLegacyBallots(pkg as Parameters<typeof checkLegacyBallots>[0], reasons)
    : pkg.scheme === 'threshold'
      ? await checkAnonymousBallots(pkg, trusteesOpener(pkg, reasons), keys.ballotVerificationKey, reasons)
      : await checkAnonymousBallots(pkg, serviceKeyOpener(pkg, reasons), keys.ballotVerificationKey, reasons);

  const recomputed = tallyBallots(
    subject.options,
    pkg.ballots.map((b) => b.choice),
    subject.quorum,
    anonymous,
  );
  let tallyValid = canonicalJson(recomputed) === canonicalJson(pkg.tally);
  if (!tallyValid) fail(reasons, 'tally_mismatch', 'The published tally is not the count of the ballots.');
  const closed = pkg.chain.entries.find((e) => e.action === 'vote_closed');
  // Under the trustees' key the close fixes the ballots; the tally is recorded once they are opened.
  const tallied =
    anonymous && pkg.scheme === 'threshold'
      ? pkg.chain.entries.find((e) => e.action === 'ballots_opened')
      : closed;
  if (
    !closed ||
    closed.data?.ballotsRoot !== pkg.ballotsRoot ||
    tallied?.data?.tallyHash !== tallyHash(pkg.tally) ||
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
  /** The receipt's ballot is among the package's: false with a valid receipt proves a dropped ballot. */
  included: boolean;
  /** With the voter's own choice: the published vote of their ballot is the one they cast. */
  ballotMatches?: boolean;
  /** The ballot's vote opens to none of the options: published, counted toward nothing. */
  spoiled?: boolean;
  /** Why, in words, when it is spoiled. */
  note?: string;
  /** The ballot's RFC 6962 inclusion path to ballotsRoot, checked. */
  inclusion?: { index: number; path: string[]; valid: boolean };
}

export const SPOILED_NOTE = 'spoiled: choice not among the options';

/** A voter's check: their signed receipt against a published package (and optionally their choice). */
export async function checkReceiptAgainstPackage(
  receipt: unknown,
  pkg: unknown,
  keys: VerifierKeys,
  opening?: { choice: string },
  /** The package's verdict, when the caller already has it (it is not worked out again). */
  known?: Pick<GovernanceVerdict, 'valid'>,
): Promise<ReceiptCheck> {
  const receiptValid = verifyReceipt(receipt, keys);
  const verdict = known ?? (await verifyGovernancePackage(pkg, keys));
  const r = receipt as BallotReceipt;
  if (!verdict.valid || !receiptValid) return { receiptValid, packageValid: verdict.valid, included: false };
  const p = pkg as GovernancePackage;
  if (!isAnonymous(p) || r.proposalId !== p.subject.proposalId)
    return { receiptValid, packageValid: true, included: false };
  const index = p.ballots.findIndex(
    (b) => ciphertextDigest(Buffer.from(b.ciphertext, 'base64url')) === r.ballotDigest,
  );
  if (index < 0) return { receiptValid, packageValid: true, included: false };
  const leaves = anonymousLeaves(p.ballots);
  const path = inclusionProof(leaves, index, leaves.length);
  const valid = verifyInclusion(leaves[index]!, index, leaves.length, path, fromHex(p.ballotsRoot));
  const spoiled = p.ballots[index]!.choice === null;
  return {
    receiptValid,
    packageValid: true,
    included: true,
    spoiled,
    ...(spoiled ? { note: SPOILED_NOTE } : {}),
    ...(opening ? { ballotMatches: p.ballots[index]!.choice === opening.choice } : {}),
    inclusion: { index, path: path.map(toHex), valid },
  };
}

/**
 * The governance verifier as a bundle's package check (shared/platform/translog/bundle.ts), with the
 * ballot circuit's verification key the anonymous ballots are checked with.
 */
export const governancePackageChecker =
  (ballotVerificationKey: () => Promise<unknown>): PackageChecker =>
  async (pkg, keys) =>
    governanceFinding(
      pkg,
      await verifyGovernancePackage(pkg, { ...keys, ballotVerificationKey: await ballotVerificationKey() }),
    );

/** A governance verdict as a bundle's finding says it. */
export function governanceFinding(pkg: unknown, v: GovernanceVerdict): PackageFinding {
  const tally = (pkg as { tally?: { outcome?: unknown } } | null)?.tally;
  return {
    valid: v.valid,
    summary: `governance vote ${String(tally?.outcome)}: ballots ${v.ballotsValid ? 'valid' : 'invalid'}, tally ${v.tallyValid ? 'recomputes' : 'does not recompute'}, review ${v.reviewMet ? 'met' : 'not met'}`,
    reasons: v.reasons.map((r) => `${r.check}: ${r.code}: ${r.detail}`),
    // Every ballot is an anonymous membership proof; the trustees' decryptions are not (they are
    // Chaum–Pedersen proofs, sound under any setup), but the ballots they open are.
    restsOnProofs: true,
  };
}
