// A room's trustees and their key ceremony, as the service keeps it: the owner names the trustees and a
// threshold; each trustee posts its signed dealing, its verdict on every dealing, and answers to
// complaints against its own; the ceremony ends with the joint key once every message is in (or when the
// owner ends it with at least `threshold` qualified dealings). The service only relays and checks: it
// holds no share, and nothing it keeps opens a ballot.
import type { Knex } from 'knex';
import { AppError, conflict, notFound, unprocessable } from '../platform/errors';
import { assertOwner, roomOrThrow } from './rooms';
import {
  MAX_TRUSTEES,
  ceremonyKeys,
  dealingCommitments,
  scalarFrom,
  shareMatches,
  verifyTrusteeSignature,
} from './threshold';
import type { Dealing, TrusteeKeys } from './threshold';

type Conn = Knex | Knex.Transaction;

export interface Trustee extends TrusteeKeys {
  index: number;
  name: string;
}

export interface TrusteesRow {
  room_id: string;
  threshold: number;
  trustees: Trustee[];
  status: 'dealing' | 'ready';
  qualified: number[] | null;
  joint_key: string | null;
  verification_shares: string[] | null;
  finalized_at: Date | null;
}

interface MessageRow {
  trustee_index: number;
  kind: 'dealing' | 'verdict' | 'answer';
  about: number;
  body: Record<string, unknown>;
  signature: string;
}

export interface VerdictBody {
  dealer: number;
  ok: boolean;
}
export interface AnswerBody {
  complainer: number;
  /** The share the dealer sealed to the complainer, now in the open (hex scalar). */
  share: string;
}

const notTrustees = () => notFound('The room’s trustees');

export async function trusteesOf(db: Conn, roomId: string): Promise<TrusteesRow | undefined> {
  return (await db('room_trustees').where('room_id', roomId).first()) as TrusteesRow | undefined;
}

/** The owner names the room's trustees and the threshold t of n that opens a ballot. Once. */
export async function appointTrustees(
  db: Knex,
  roomId: string,
  input: { threshold: number; trustees: Array<{ name: string } & TrusteeKeys> },
  owner: string,
) {
  const n = input.trustees.length;
  if (n < 1 || n > MAX_TRUSTEES)
    throw unprocessable('trustee_count', `A room has 1 to ${MAX_TRUSTEES} trustees.`);
  if (input.threshold < 1 || input.threshold > n)
    throw unprocessable(
      'threshold_too_high',
      `The threshold (${input.threshold}) must be between 1 and the number of trustees (${n}).`,
    );
  const keys = input.trustees.flatMap((t) => [t.publicKey, t.encryptionKey]);
  if (new Set(keys).size !== keys.length)
    throw unprocessable('duplicate_trustee', 'Every trustee must have keys of its own.');
  return db.transaction(async (trx) => {
    await roomOrThrow(trx, roomId, owner);
    if (await trusteesOf(trx, roomId))
      throw conflict('trustees_exist', 'This room has trustees already; they are named once.');
    const trustees: Trustee[] = input.trustees.map((t, i) => ({
      index: i + 1,
      name: t.name,
      publicKey: t.publicKey,
      encryptionKey: t.encryptionKey,
    }));
    await trx('room_trustees').insert({
      room_id: roomId,
      threshold: input.threshold,
      trustees: JSON.stringify(trustees),
    });
    return ceremonyView(trx, roomId);
  });
}

async function messagesOf(db: Conn, roomId: string): Promise<MessageRow[]> {
  return (await db('trustee_messages')
    .where('room_id', roomId)
    .orderBy(['kind', 'trustee_index', 'about'])
    .select('trustee_index', 'kind', 'about', 'body', 'signature')) as MessageRow[];
}

/**
 * Which dealings qualify, from the messages: a dealing (well formed: checked when it was posted) every
 * complaint against which is answered (each answer matched its dealing's commitments when it was
 * posted, or it was refused). `pending` names the complaints still unanswered; `complete` says every
 * trustee has dealt and judged every dealing. Bookkeeping only, no curve arithmetic: every message was
 * checked once, as it came in, so reading the ceremony costs what reading its rows costs.
 */
export function ceremonyState(
  row: Pick<TrusteesRow, 'threshold' | 'trustees'>,
  messages: readonly MessageRow[],
) {
  const n = row.trustees.length;
  const dealings = new Map<number, Dealing>();
  for (const m of messages)
    if (m.kind === 'dealing') dealings.set(m.trustee_index, m.body as unknown as Dealing);
  const answered = new Set<string>();
  for (const m of messages) if (m.kind === 'answer') answered.add(`${m.trustee_index}:${m.about}`);
  const unanswered = new Set<number>();
  const pending: Array<{ dealer: number; complainer: number }> = [];
  for (const m of messages) {
    if (m.kind !== 'verdict' || (m.body as unknown as VerdictBody).ok) continue;
    if (answered.has(`${m.about}:${m.trustee_index}`)) continue;
    pending.push({ dealer: m.about, complainer: m.trustee_index });
    unanswered.add(m.about);
  }
  pending.sort((a, b) => a.dealer - b.dealer || a.complainer - b.complainer);
  const qualified = [...dealings.keys()].filter((d) => !unanswered.has(d)).sort((a, b) => a - b);
  const verdicts = messages.filter((m) => m.kind === 'verdict').length;
  const complete = dealings.size === n && verdicts === n * n && pending.length === 0;
  return { dealings, qualified, pending, complete };
}

/** Ends the ceremony: the joint key of the qualified dealings and each trustee's verification share. */
async function finalize(
  trx: Knex.Transaction,
  row: TrusteesRow,
  qualified: number[],
  dealings: Map<number, Dealing>,
) {
  const keys = ceremonyKeys(
    qualified.map((i) => dealingCommitments(dealings.get(i)!, row.threshold)!),
    row.trustees.length,
  );
  await trx('room_trustees')
    .where({ room_id: row.room_id, status: 'dealing' })
    .update({
      status: 'ready',
      qualified: JSON.stringify(qualified),
      joint_key: keys.jointKey,
      verification_shares: JSON.stringify(keys.verificationShares),
      finalized_at: trx.fn.now(),
    });
}

const ceremonyOver = () =>
  conflict('ceremony_closed', 'The trustees’ key ceremony of this room has ended; nothing more is taken.');

/** Takes one signed ceremony message of a trustee; ends the ceremony when it was the last one needed. */
export async function postTrusteeMessage(
  db: Knex,
  roomId: string,
  kind: 'dealing' | 'verdict' | 'answer',
  input: { trustee: number; body: Dealing | VerdictBody | AnswerBody; signature: string },
) {
  return db.transaction(async (trx) => {
    const row = (await trx('room_trustees').where('room_id', roomId).forUpdate().first()) as
      TrusteesRow | undefined;
    if (!row) throw notTrustees();
    if (row.status !== 'dealing') throw ceremonyOver();
    const n = row.trustees.length;
    const trustee = row.trustees.find((t) => t.index === input.trustee);
    if (!trustee) throw unprocessable('unknown_trustee', `Trustees of this room are numbered 1 to ${n}.`);
    if (!verifyTrusteeSignature(trustee, roomId, kind, input.body, input.signature))
      throw new AppError(403, 'signature_invalid', 'The signature is not this trustee’s over this message.');
    const messages = await messagesOf(trx, roomId);
    let about = 0;
    if (kind === 'dealing') {
      const d = input.body as Dealing;
      if (!dealingCommitments(d, row.threshold) || d.shares.length !== n)
        throw unprocessable(
          'invalid_dealing',
          `A dealing commits to ${row.threshold} coefficients (ristretto255 points, the first not the identity) and seals one share to each of the ${n} trustees.`,
        );
    } else if (kind === 'verdict') {
      const v = input.body as VerdictBody;
      about = v.dealer;
      if (!messages.some((m) => m.kind === 'dealing' && m.trustee_index === v.dealer))
        throw unprocessable('no_such_dealing', `Trustee ${v.dealer} has not dealt yet.`);
    } else {
      const a = input.body as AnswerBody;
      about = a.complainer;
      const complained = messages.some(
        (m) =>
          m.kind === 'verdict' &&
          m.trustee_index === a.complainer &&
          m.about === input.trustee &&
          !(m.body as unknown as VerdictBody).ok,
      );
      if (!complained)
        throw unprocessable('no_complaint', `Trustee ${a.complainer} has not complained about this dealing.`);
      const dealing = messages.find((m) => m.kind === 'dealing' && m.trustee_index === input.trustee);
      const commitments = dealingCommitments(dealing!.body as unknown as Dealing, row.threshold)!;
      const share = scalarFrom(a.share);
      if (share === null || !shareMatches(commitments, a.complainer, share))
        throw unprocessable('answer_invalid', 'The share does not match the dealing’s commitments.');
    }
    const inserted = (await trx('trustee_messages')
      .insert({
        room_id: roomId,
        trustee_index: input.trustee,
        kind,
        about,
        body: JSON.stringify(input.body),
        signature: input.signature,
      })
      .onConflict(['room_id', 'trustee_index', 'kind', 'about'])
      .ignore()
      .returning('kind')) as unknown[];
    if (!inserted.length) throw conflict('already_posted', 'This trustee has already posted this message.');
    const state = ceremonyState(row, await messagesOf(trx, roomId));
    if (state.complete && state.qualified.length >= row.threshold)
      await finalize(trx, row, state.qualified, state.dealings);
    return ceremonyView(trx, roomId);
  });
}

/**
 * The owner ends a ceremony a trustee does not finish: dealings with an unanswered complaint, or never
 * made, do not count. Needs at least `threshold` qualified dealings: fewer would let fewer trustees than
 * the threshold know the whole secret.
 */
export async function endCeremony(db: Knex, roomId: string, owner: string) {
  return db.transaction(async (trx) => {
    const row = (await trx('room_trustees').where('room_id', roomId).forUpdate().first()) as
      TrusteesRow | undefined;
    if (!row) throw notTrustees();
    const room = await roomOrThrow(trx, roomId);
    assertOwner(owner, room, 'The room');
    if (row.status !== 'dealing') throw ceremonyOver();
    const state = ceremonyState(row, await messagesOf(trx, roomId));
    if (state.qualified.length < row.threshold)
      throw conflict(
        'too_few_dealings',
        `${state.qualified.length} qualified dealings; the ceremony needs at least ${row.threshold}.`,
      );
    await finalize(trx, row, state.qualified, state.dealings);
    return ceremonyView(trx, roomId);
  });
}

/** The ceremony in the open: trustees, every signed message, and its result once ended. Public. */
export async function ceremonyView(db: Conn, roomId: string) {
  const row = await trusteesOf(db, roomId);
  if (!row) throw notTrustees();
  const messages = await messagesOf(db, roomId);
  // Once ended, the stored result is the ceremony's: nothing more is taken, so nothing is recomputed.
  const state = row.status === 'ready' ? null : ceremonyState(row, messages);
  const of = (kind: MessageRow['kind']) =>
    messages
      .filter((m) => m.kind === kind)
      .map((m) => ({ trustee: m.trustee_index, body: m.body, signature: m.signature }));
  return {
    roomId,
    status: row.status,
    threshold: row.threshold,
    trustees: row.trustees,
    dealings: of('dealing'),
    verdicts: of('verdict'),
    answers: of('answer'),
    pendingComplaints: state?.pending ?? [],
    qualified: row.qualified ?? state?.qualified ?? [],
    jointKey: row.joint_key,
    verificationShares: row.verification_shares,
  };
}

export type CeremonyView = Awaited<ReturnType<typeof ceremonyView>>;
