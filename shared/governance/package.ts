// The governance proof package: its schema under each of the three ballot schemes (the first,
// wallet-signed one; anonymous ballots under the service's key; ballots encrypted to the room's
// trustees) and building it with a signer. Loads no configuration; the offline checks are
// package-verify.ts.
import { z } from 'zod';
import type { Signer } from '../platform/crypto';
import { chainGenesis } from '../proofs/chain';
import { envelopeShape, signPackage } from '../proofs/envelope';
import type { Envelope } from '../proofs/envelope';
import { BALLOT_CIPHERTEXT_BYTES, DECIMAL_FIELD, isFieldElement, proposalScope } from './ballot-protocol';
import { HEX64, chainSchema } from '../proofs/records';
import { MAX_TRUSTEES, THRESHOLD_BALLOT_BYTES } from './threshold';
import type { ChainLink } from '../proofs/records';
import { ballotsRoot, byNullifier } from './tally';
import type { PublishedBallot, Tally } from './tally';

const hex64 = z.string().regex(HEX64);
const fieldString = z.string().regex(DECIMAL_FIELD).refine(isFieldElement, 'a BN254 field element');
const b64url = z.string().regex(/^[A-Za-z0-9_-]*$/);
const key32 = b64url.length(43);

export const governanceGenesis = (proposalId: string): string =>
  chainGenesis({ kind: 'governance', subjectId: proposalId, label: 'Proposal' });

export const governanceStages = ['proposal', 'review', 'vote', 'execution', 'proof'] as const;

const g1 = z.array(fieldString).length(3);
const proofSchema = z
  .object({ pi_a: g1, pi_b: z.array(z.array(fieldString).length(2)).length(3), pi_c: g1 })
  .strict();

const anonymousBallotSchema = z
  .object({
    nullifier: fieldString,
    root: fieldString,
    ciphertext: b64url.length(Math.ceil((BALLOT_CIPHERTEXT_BYTES * 4) / 3)),
    proof: proofSchema,
    choice: z.string().max(200).nullable(),
  })
  .strict();

const trusteeIndex = z.number().int().min(1).max(MAX_TRUSTEES);
const decryptionSchema = z
  .object({
    trustee: trusteeIndex,
    share: key32,
    proof: z.object({ c: hex64, z: hex64 }).strict(),
  })
  .strict();

const thresholdBallotSchema = z
  .object({
    nullifier: fieldString,
    root: fieldString,
    ciphertext: b64url.length(Math.ceil((THRESHOLD_BALLOT_BYTES * 4) / 3)),
    proof: proofSchema,
    choice: z.string().max(200).nullable(),
    /** The trustees' partial decryptions that open it (none for a ballot spoiled by its own proof). */
    decryptions: z.array(decryptionSchema).max(MAX_TRUSTEES),
  })
  .strict();

/** The room's trustees and the signed dealings their joint key is the sum of. */
const trusteesSchema = z
  .object({
    threshold: trusteeIndex,
    members: z
      .array(
        z
          .object({ index: trusteeIndex, name: z.string().max(100), publicKey: key32, encryptionKey: key32 })
          .strict(),
      )
      .min(1)
      .max(MAX_TRUSTEES),
    dealings: z
      .array(
        z
          .object({
            trustee: trusteeIndex,
            commitments: z.array(key32).max(MAX_TRUSTEES),
            shares: z.array(b64url.max(400)).max(MAX_TRUSTEES),
            signature: b64url.max(100),
          })
          .strict(),
      )
      .max(MAX_TRUSTEES),
    jointKey: key32,
    /**
     * The trustees whose partial decryptions opened the ballots, each with its signature over its set
     * (threshold.ts decryptionStatement): who decrypted, provable even where no ballot was cast. Absent
     * from packages made before trustees signed their decryptions.
     */
    decrypted: z
      .array(z.object({ trustee: trusteeIndex, signature: b64url.max(100) }).strict())
      .max(MAX_TRUSTEES)
      .optional(),
  })
  .strict();

const legacyBallotSchema = z
  .object({ commitment: hex64, choice: z.string().max(200), salt: hex64, castAt: z.iso.datetime() })
  .strict();

const tallySchema = z
  .object({
    counts: z.record(z.string(), z.number().int().min(0)),
    total: z.number().int().min(0),
    spoiled: z.number().int().min(0).optional(),
    outcome: z.string().max(40),
    winner: z.string().max(200).nullable(),
  })
  .strict();

const subjectSchema = z
  .object({
    proposalId: z.string().max(100),
    roomId: z.string().max(100),
    title: z.string().max(300),
    descriptionHash: hex64.nullable(),
    options: z.array(z.string().max(200)).min(2).max(20),
    quorum: z.number().int().min(0),
    /** Wallet members of the room; identityCount is the tree's size at the close. */
    memberCount: z.number().int().min(0),
    reviewThreshold: z.number().int().min(1),
    votingOpenedAt: z.iso.datetime(),
    votingEndsAt: z.iso.datetime(),
  })
  .strict();

const common = {
  ...envelopeShape,
  kind: z.literal('governance'),
  phase: z.enum(['tallied', 'executed']),
  subject: subjectSchema,
  ballotsRoot: hex64,
  tally: tallySchema,
  chain: chainSchema,
};

const anonymousPackageSchema = z
  .object({
    ...common,
    scheme: z.literal('anonymous'),
    /** The proposal's ballot key pair: voters encrypted to the public half; the close publishes both. */
    ballotKey: z.object({ publicKey: key32, privateKey: key32 }).strict(),
    scope: fieldString,
    /** The member tree: its size at the close and every root a counted ballot was proved against. */
    membership: z
      .object({
        depth: z.number().int().min(1).max(32),
        identityCount: z.number().int().min(0),
        roots: z.array(fieldString).max(64),
      })
      .strict(),
    ballots: z.array(anonymousBallotSchema).max(1024),
  })
  .strict();

/** Ballots encrypted to the room's trustees: no key is published, each ballot carries its decryptions. */
const thresholdPackageSchema = z
  .object({
    ...common,
    scheme: z.literal('threshold'),
    trustees: trusteesSchema,
    scope: fieldString,
    membership: anonymousPackageSchema.shape.membership,
    ballots: z.array(thresholdBallotSchema).max(1024),
  })
  .strict();

const legacyPackageSchema = z
  .object({ ...common, ballots: z.array(legacyBallotSchema).max(100_000) })
  .strict();

export const governancePackageSchema = z
  .union([anonymousPackageSchema, thresholdPackageSchema, legacyPackageSchema])
  .meta({ id: 'GovernancePackage' });
export type AnonymousGovernancePackage = z.infer<typeof anonymousPackageSchema> & Envelope;
export type ThresholdGovernancePackage = z.infer<typeof thresholdPackageSchema> & Envelope;
export type ThresholdBallot = z.infer<typeof thresholdBallotSchema>;
export type PackageTrustees = z.infer<typeof trusteesSchema>;
export type GovernancePackage =
  AnonymousGovernancePackage | ThresholdGovernancePackage | (z.infer<typeof legacyPackageSchema> & Envelope);

export interface BuildGovernanceInput {
  proofId: string;
  phase: 'tallied' | 'executed';
  issuedAt: Date;
  subject: GovernancePackage['subject'];
  ballotKey: { publicKey: string; privateKey: string };
  membership: { depth: number; identityCount: number; roots: string[] };
  ballots: readonly PublishedBallot[];
  tally: Tally;
  genesis: string;
  entries: readonly ChainLink[];
}

/** A ballot as a package publishes it: the cast ballot, its proof's three points, and its vote. */
const publishedBallot = (b: PublishedBallot): PublishedBallot => ({
  nullifier: b.nullifier,
  root: b.root,
  ciphertext: b.ciphertext,
  proof: { pi_a: b.proof.pi_a, pi_b: b.proof.pi_b, pi_c: b.proof.pi_c },
  choice: b.choice,
});

/** What a package of anonymous ballots says under either scheme, its ballots in canonical order. */
function anonymousBody<B extends PublishedBallot>(
  input: Omit<BuildGovernanceInput, 'ballotKey' | 'ballots'>,
  ballots: B[],
) {
  const entries = [...input.entries];
  const head = entries.length ? entries[entries.length - 1]!.entryHash : input.genesis;
  const sorted = ballots.sort(byNullifier);
  return {
    version: 1 as const,
    kind: 'governance' as const,
    proofId: input.proofId,
    issuedAt: input.issuedAt.toISOString(),
    phase: input.phase,
    subject: input.subject,
    scope: String(proposalScope(input.subject.proposalId)),
    membership: { ...input.membership, roots: [...new Set(input.membership.roots)].sort() },
    ballots: sorted,
    ballotsRoot: ballotsRoot(sorted),
    tally: input.tally,
    chain: { genesis: input.genesis, head, entries },
  };
}

export function buildGovernancePackage(input: BuildGovernanceInput, key: Signer): AnonymousGovernancePackage {
  return signPackage<AnonymousGovernancePackage>(
    {
      ...anonymousBody(input, input.ballots.map(publishedBallot)),
      scheme: 'anonymous',
      ballotKey: input.ballotKey,
    },
    key,
  );
}

export interface BuildThresholdInput extends Omit<BuildGovernanceInput, 'ballotKey' | 'ballots'> {
  trustees: PackageTrustees;
  ballots: readonly ThresholdBallot[];
}

export function buildThresholdPackage(input: BuildThresholdInput, key: Signer): ThresholdGovernancePackage {
  const ballots = input.ballots.map((b) => ({
    ...publishedBallot(b),
    decryptions: [...b.decryptions].sort((x, y) => x.trustee - y.trustee),
  }));
  return signPackage<ThresholdGovernancePackage>(
    { ...anonymousBody(input, ballots), scheme: 'threshold', trustees: input.trustees },
    key,
  );
}
