// The reveal under the trustees' key: after the close each trustee fetches the ballots, and posts its
// partial decryption of each with a Chaum–Pedersen proof; the service checks every proof against the
// trustee's verification share (so a wrong partial is refused, never counted) and, once `threshold`
// trustees have posted, combines them, opens the ballots, tallies and publishes the package — which
// carries every partial used, so anyone repeats the opening offline.
import type { Knex } from 'knex';
import { systemClock } from '../platform/clock';
import type { Clock } from '../platform/clock';
import { AppError, conflict, notFound, unprocessable } from '../platform/errors';
import { newId } from '../platform/ids';
import { serviceSigningKey } from '../platform/keys';
import type { Groth16ProofJson } from './ballot-protocol';
import { appendEntry, appendPackageToLog } from '../proofs/ledger';
import { buildThresholdPackage } from './package';
import { byNullifier, tallyBallots, tallyHash, ballotsRoot } from './tally';
import type { PackageTrustees, ThresholdBallot } from './package';
import { storeTally, tallyCommon } from './close';
import type { ProposalRow } from './proposal-row';
import {
  DECRYPTION_KIND,
  ballotEphemeral,
  combinePartials,
  decryptionStatement,
  openThresholdVote,
  verifyPartialDecryption,
  verifyTrusteeSignature,
} from './threshold';
import type { PartialDecryption } from './threshold';
import { trusteesOf } from './trustees';
import type { TrusteesRow } from './trustees';

interface BallotRow {
  nullifier: string;
  root: string;
  ciphertext: Buffer;
  proof: Groth16ProofJson;
}

export interface DecryptionInput {
  trustee: number;
  shares: Array<PartialDecryption & { nullifier: string }>;
  /** The trustee's ed25519 signature over its decryption statement (threshold.ts decryptionStatement). */
  signature: string;
}

async function proposalOf(db: Knex | Knex.Transaction, proposalId: string) {
  const p = (await db('proposals').where('id', proposalId).first()) as ProposalRow | undefined;
  if (!p) throw notFound('The proposal');
  return p;
}

const ballotsOf = async (db: Knex | Knex.Transaction, proposalId: string) =>
  ((await db('ballots').where('proposal_id', proposalId)) as BallotRow[]).sort(byNullifier);

/**
 * The closed vote's ballots, for the trustees to decrypt and anyone to see: nullifiers and ciphertexts
 * in canonical order (each trustee checks every proof of knowledge itself). Nothing before the close.
 */
export async function closedBallots(db: Knex, proposalId: string) {
  const p = await proposalOf(db, proposalId);
  if (p.ballot_scheme !== 'threshold')
    throw conflict('not_threshold', 'This proposal’s ballots are opened by the service at the close.');
  if (p.status === 'review' || p.status === 'voting' || p.status === 'rejected')
    throw conflict('voting_not_closed', 'The ballots are listed once the vote has closed.');
  const ballots = await ballotsOf(db, proposalId);
  return {
    proposalId,
    status: p.status,
    ballots: ballots.map((b) => ({
      nullifier: b.nullifier,
      ciphertext: b.ciphertext.toString('base64url'),
    })),
  };
}

/**
 * Takes one trustee's partial decryptions of every ballot that proves itself; refuses the whole set when
 * one proof fails, writing nothing. Cheapest check first: the trustee's signature over the set (only a
 * trustee makes the service spend curve arithmetic, and it names who decrypted where no ballot was cast
 * to prove it), whether it posted already, the count; then the proofs, the first that fails ending it.
 */
export async function submitDecryption(
  db: Knex,
  proposalId: string,
  input: DecryptionInput,
  clock: Clock = systemClock,
) {
  return db.transaction(async (trx) => {
    const p = (await trx('proposals').where('id', proposalId).forUpdate().first()) as ProposalRow | undefined;
    if (!p) throw notFound('The proposal');
    if (p.ballot_scheme !== 'threshold')
      throw conflict('not_threshold', 'This proposal’s ballots are opened by the service at the close.');
    if (p.status !== 'decrypting')
      throw conflict(
        'not_decrypting',
        p.status === 'closed' || p.status === 'executed'
          ? 'The ballots are already opened.'
          : 'The vote has not closed yet: trustees decrypt only after the close.',
      );
    const trustees = (await trusteesOf(trx, p.room_id))!;
    const share = trustees.verification_shares?.[input.trustee - 1];
    const member = trustees.trustees.find((t) => t.index === input.trustee);
    if (!share || !member)
      throw unprocessable(
        'unknown_trustee',
        `Trustees of this room are numbered 1 to ${trustees.trustees.length}.`,
      );
    const statement = decryptionStatement({ proposalId: p.id }, input.shares);
    if (!verifyTrusteeSignature(member, p.room_id, DECRYPTION_KIND, statement, input.signature))
      throw new AppError(
        403,
        'signature_invalid',
        'The signature is not this trustee’s over these decryptions (proof-exchange/governance/trustee/v1, kind decryption).',
      );
    if (await trx('ballot_decryptions').where({ proposal_id: p.id, trustee_index: input.trustee }).first())
      throw conflict('already_decrypted', 'This trustee has already decrypted this vote.');
    const ballots = await ballotsOf(trx, p.id);
    const byNull = new Map(input.shares.map((s) => [s.nullifier, s]));
    if (byNull.size !== input.shares.length)
      throw unprocessable('decryption_invalid', 'A ballot is decrypted twice.');
    // Every ballot of this scheme proved itself made for this proposal when it was cast, so each is
    // decrypted. Counted before any proof is checked: a refusal costs no curve arithmetic, and the first
    // proof that fails ends the check.
    if (byNull.size !== ballots.length || ballots.some((b) => !byNull.has(b.nullifier)))
      throw unprocessable(
        'decryption_incomplete',
        `Give one partial decryption for each of the ${ballots.length} ballots, and no other.`,
      );
    for (const b of ballots) {
      const partial = byNull.get(b.nullifier)!;
      const R = ballotEphemeral(b.ciphertext, p.id);
      if (!R || !verifyPartialDecryption(partial, share, input.trustee, p.id, R))
        throw unprocessable(
          'decryption_invalid',
          `The partial decryption of ballot ${b.nullifier.slice(0, 12)}… does not prove itself against trustee ${input.trustee}'s verification share.`,
        );
    }
    const inserted = (await trx('ballot_decryptions')
      .insert({
        proposal_id: p.id,
        trustee_index: input.trustee,
        shares: JSON.stringify(
          ballots.map((b) => {
            const { share: s, proof } = byNull.get(b.nullifier)!;
            return { nullifier: b.nullifier, share: s, proof };
          }),
        ),
        signature: input.signature,
      })
      .onConflict(['proposal_id', 'trustee_index'])
      .ignore()
      .returning('trustee_index')) as unknown[];
    if (!inserted.length)
      throw conflict('already_decrypted', 'This trustee has already decrypted this vote.');
    const posted = (await trx('ballot_decryptions')
      .where('proposal_id', p.id)
      .orderBy('trustee_index')) as PostedDecryption[];
    if (posted.length >= trustees.threshold)
      await openAndPublish(trx, p, trustees, ballots, posted, clock.now());
    return {
      proposalId: p.id,
      trustee: input.trustee,
      trusteesDecrypted: posted.length,
      trusteesNeeded: trustees.threshold,
    };
  });
}

interface PostedDecryption {
  trustee_index: number;
  shares: Array<PartialDecryption & { nullifier: string }>;
  /** Null for decryptions taken before trustees signed them. */
  signature: string | null;
}

/**
 * What the package says of the trustees: who they are, the qualified dealings, the joint key, and the
 * signed decryption sets that opened the ballots.
 */
async function packageTrustees(
  trx: Knex.Transaction,
  row: TrusteesRow,
  used: readonly PostedDecryption[],
): Promise<PackageTrustees> {
  const dealings = (await trx('trustee_messages')
    .where({ room_id: row.room_id, kind: 'dealing' })
    .whereIn('trustee_index', row.qualified ?? [])
    .orderBy('trustee_index')) as Array<{
    trustee_index: number;
    body: { commitments: string[]; shares: string[] };
    signature: string;
  }>;
  return {
    threshold: row.threshold,
    members: row.trustees.map((t) => ({
      index: t.index,
      name: t.name,
      publicKey: t.publicKey,
      encryptionKey: t.encryptionKey,
    })),
    dealings: dealings.map((d) => ({
      trustee: d.trustee_index,
      commitments: d.body.commitments,
      shares: d.body.shares,
      signature: d.signature,
    })),
    jointKey: row.joint_key!,
    ...(used.every((t) => t.signature)
      ? { decrypted: used.map((t) => ({ trustee: t.trustee_index, signature: t.signature! })) }
      : {}),
  };
}

/** The first `threshold` trustees' partials open every ballot; the tally and package follow, in this transaction. */
async function openAndPublish(
  trx: Knex.Transaction,
  p: ProposalRow,
  trustees: TrusteesRow,
  rows: BallotRow[],
  posted: PostedDecryption[],
  now: Date,
) {
  const used = posted.slice(0, trustees.threshold);
  const ballots: ThresholdBallot[] = rows.map((r) => {
    const base = {
      nullifier: r.nullifier,
      root: r.root,
      ciphertext: r.ciphertext.toString('base64url'),
      proof: { pi_a: r.proof.pi_a, pi_b: r.proof.pi_b, pi_c: r.proof.pi_c },
    };
    if (!ballotEphemeral(r.ciphertext, p.id)) return { ...base, choice: null, decryptions: [] };
    const decryptions = used.map((t) => {
      const s = t.shares.find((x) => x.nullifier === r.nullifier)!;
      return { trustee: t.trustee_index, share: s.share, proof: s.proof };
    });
    const choice = openThresholdVote(
      combinePartials(decryptions.map((d) => ({ index: d.trustee, share: d.share }))),
      p.ballot_public_key!,
      p.id,
      r.ciphertext,
    );
    return { ...base, choice: choice !== null && p.options.includes(choice) ? choice : null, decryptions };
  });
  const tally = tallyBallots(
    p.options,
    ballots.map((b) => b.choice),
    p.quorum,
    true,
  );
  await appendEntry(trx, 'proposals', p.id, p, {
    stage: 'vote',
    action: 'ballots_opened',
    at: now.toISOString(),
    actorCommitment: null,
    data: {
      ballotCount: ballots.length,
      ballotsRoot: ballotsRoot(ballots),
      tallyHash: tallyHash(tally),
      outcome: tally.outcome,
      trustees: used.map((t) => t.trustee_index).join(','),
    },
  });
  const proofId = newId('prf');
  const pkg = await appendPackageToLog(
    trx,
    buildThresholdPackage(
      {
        ...(await tallyCommon(trx, p, proofId, ballots, now)),
        trustees: await packageTrustees(trx, trustees, used),
        ballots,
        tally,
      },
      serviceSigningKey(),
    ),
  );
  await storeTally(trx, p, 'decrypting', proofId, tally, pkg);
}
