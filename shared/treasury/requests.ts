// Treasury coordination: requests (spends and treasury-token mint/burn/transfer) recorded, never
// executed — the service moves no funds; m-of-n signed committee decisions; per-period spending limits
// per asset, held under a row lock so two requests cannot both take the last of an allowance.
import type { Knex } from 'knex';
import { AppError, conflict, notFound, unprocessable } from '../platform/errors';
import { newId } from '../platform/ids';
import { serviceSigningKey } from '../platform/keys';
import { findAsset } from '../chains/assets';
import { approvalMessage } from './commitments';
import { appendEntry, appendPackageToLog, loadEntries } from '../proofs/ledger';
import { assertOwner, committeeOrThrow, roomOrThrow, walletCommitment } from '../governance/rooms';
import { buildTreasuryPackage, requestHash, treasuryGenesis } from './package';
import type { TreasuryOperation, TreasuryPackage, TreasuryTerms } from './package';

export const TOKEN_ASSET = /^token:[A-Z][A-Z0-9]{1,11}$/;

interface RequestRow {
  id: string;
  room_id: string;
  committee: string;
  operation: TreasuryOperation;
  asset: string;
  amount: string;
  recipient: string;
  purpose_hash: string;
  threshold: number;
  committee_size: number;
  status: 'pending' | 'approved' | 'rejected';
  created_at_iso: string;
  chain_genesis: string;
  chain_head: string;
  entry_count: number;
  proof_id: string | null;
  package: TreasuryPackage | null;
  owner: string;
  created_at: Date;
}

interface LimitRow {
  room_id: string;
  asset: string;
  period_seconds: number;
  limit_amount: string;
}

/** Registry assets for spends; treasury tokens (`token:SYMBOL`) for mint and burn; either for transfers. */
function checkAsset(operation: TreasuryOperation, asset: string): void {
  const isToken = TOKEN_ASSET.test(asset);
  const isRegistry = !!findAsset(asset);
  if (!isToken && !isRegistry)
    throw unprocessable(
      'unknown_asset',
      `"${asset}" is neither a payment asset nor a treasury token (token:SYMBOL).`,
    );
  if (operation === 'spend' && !isRegistry)
    throw unprocessable(
      'asset_not_spendable',
      'A spend names a payment asset; use mint, burn or transfer for treasury tokens.',
    );
  if ((operation === 'mint' || operation === 'burn') && !isToken)
    throw unprocessable('not_a_treasury_token', 'Mint and burn apply to treasury tokens (token:SYMBOL).');
}

export async function setSpendingLimit(
  db: Knex,
  input: { roomId: string; asset: string; periodSeconds: number; limit: string },
  owner: string,
) {
  if (!findAsset(input.asset) && !TOKEN_ASSET.test(input.asset))
    throw unprocessable('unknown_asset', `"${input.asset}" is neither a payment asset nor a treasury token.`);
  await roomOrThrow(db, input.roomId, owner);
  await db('spending_limits')
    .insert({
      room_id: input.roomId,
      asset: input.asset,
      period_seconds: input.periodSeconds,
      limit_amount: input.limit,
    })
    .onConflict(['room_id', 'asset'])
    .merge({ period_seconds: input.periodSeconds, limit_amount: input.limit, updated_at: db.fn.now() });
  return allowance(db, input.roomId, input.asset);
}

const periodStartOf = (now: Date, seconds: number) =>
  new Date(Math.floor(now.getTime() / (seconds * 1000)) * seconds * 1000);

export interface Allowance {
  asset: string;
  limit: string;
  periodSeconds: number;
  periodStart: string;
  periodEnd: string;
  /** Pending and approved requests of this period: a pending request holds its amount. */
  committed: string;
  remaining: string;
}

/** The allowance of an asset in the current period; undefined when no limit is set (no limit applies). */
export async function allowance(
  db: Knex | Knex.Transaction,
  roomId: string,
  asset: string,
  now = new Date(),
): Promise<Allowance | undefined> {
  const limit = (await db('spending_limits').where({ room_id: roomId, asset }).first()) as
    LimitRow | undefined;
  if (!limit) return undefined;
  const start = periodStartOf(now, limit.period_seconds);
  const row = (await db('treasury_requests')
    .where({ room_id: roomId, asset })
    .whereIn('status', ['pending', 'approved'])
    .andWhere('created_at', '>=', start)
    .sum({ total: 'amount' })
    .first()) as { total: string | null };
  const committed = BigInt(row.total ?? '0');
  const max = BigInt(limit.limit_amount);
  return {
    asset,
    limit: max.toString(),
    periodSeconds: limit.period_seconds,
    periodStart: start.toISOString(),
    periodEnd: new Date(start.getTime() + limit.period_seconds * 1000).toISOString(),
    committed: committed.toString(),
    remaining: (max > committed ? max - committed : 0n).toString(),
  };
}

export async function listLimits(db: Knex, roomId: string, owner: string) {
  await roomOrThrow(db, roomId, owner);
  const assets = (await db('spending_limits')
    .where('room_id', roomId)
    .orderBy('asset')
    .pluck('asset')) as string[];
  const out: Allowance[] = [];
  for (const a of assets) out.push((await allowance(db, roomId, a))!);
  return { roomId, limits: out };
}

const termsOf = (r: RequestRow): TreasuryTerms => ({
  requestId: r.id,
  roomId: r.room_id,
  committee: r.committee,
  operation: r.operation,
  asset: r.asset,
  amount: String(r.amount),
  recipient: r.recipient,
  purposeHash: r.purpose_hash,
  threshold: r.threshold,
  committeeSize: r.committee_size,
});

export async function createTreasuryRequest(
  db: Knex,
  input: {
    roomId: string;
    committee: string;
    operation: TreasuryOperation;
    asset: string;
    amount: string;
    recipient: string;
    purposeHash: string;
  },
  owner: string,
) {
  checkAsset(input.operation, input.asset);
  return db.transaction(async (trx) => {
    await roomOrThrow(trx, input.roomId, owner);
    const committee = await committeeOrThrow(trx, input.roomId, input.committee);
    // The limit row lock serializes requests against one allowance.
    await trx('spending_limits').where({ room_id: input.roomId, asset: input.asset }).forUpdate().first();
    // Checked and recorded at one instant, taken after the lock: stamped with its transaction's start
    // instead, a request that waited across a period boundary would count in a period it was never checked
    // against.
    const now = new Date();
    const left = await allowance(trx, input.roomId, input.asset, now);
    if (left && BigInt(input.amount) > BigInt(left.remaining))
      throw new AppError(
        422,
        'spending_limit_exceeded',
        `The request is over the ${input.asset} allowance of this period: ${left.remaining} base units remain.`,
        { extra: { allowance: left } },
      );
    const id = newId('treq');
    const genesis = treasuryGenesis(id);
    const createdAt = now.toISOString();
    const row = {
      id,
      room_id: input.roomId,
      committee: committee.slug,
      operation: input.operation,
      asset: input.asset,
      amount: input.amount,
      recipient: input.recipient,
      purpose_hash: input.purposeHash,
      threshold: committee.threshold,
      committee_size: committee.members.length,
      created_at_iso: createdAt,
      created_at: now,
      chain_genesis: genesis,
      chain_head: genesis,
      entry_count: 0,
      owner,
    };
    await trx('treasury_requests').insert(row);
    const terms = termsOf(row as unknown as RequestRow);
    const hash = requestHash(terms);
    await appendEntry(trx, 'treasury_requests', id, row, {
      stage: 'request',
      action: 'created',
      at: createdAt,
      actorCommitment: null,
      data: { requestHash: hash },
    });
    return { requestId: id, status: 'pending' as const, requestHash: hash, terms, allowance: left ?? null };
  });
}

async function requestOrThrow(db: Knex | Knex.Transaction, id: string, lock = false): Promise<RequestRow> {
  const q = db('treasury_requests').where('id', id);
  const row = (await (lock ? q.forUpdate() : q).first()) as RequestRow | undefined;
  if (!row) throw notFound('The treasury request');
  return row;
}

function view(r: RequestRow, decisions: Array<{ member_commitment: string; decision: string; at: string }>) {
  const terms = termsOf(r);
  return {
    requestId: r.id,
    status: r.status,
    terms,
    requestHash: requestHash(terms),
    approvals: decisions.filter((d) => d.decision === 'approve').length,
    rejections: decisions.filter((d) => d.decision === 'reject').length,
    decisions: decisions.map((d) => ({
      memberCommitment: d.member_commitment,
      decision: d.decision,
      at: d.at,
    })),
    proofId: r.proof_id,
    createdAt: r.created_at_iso,
  };
}

export async function treasuryRequestView(db: Knex, id: string, owner: string) {
  const r = await requestOrThrow(db, id);
  assertOwner(owner, r, 'The treasury request');
  const decisions = await db('approvals').where('request_id', id).orderBy('at');
  return view(r, decisions);
}

/** A committee member's signed decision; at m approvals (or once m can no longer be reached) the package is published. */
export async function decideTreasuryRequest(
  db: Knex,
  requestId: string,
  input: { walletPublicKey: string; decision: 'approve' | 'reject'; signature: string },
) {
  return db.transaction(async (trx) => {
    const r = await requestOrThrow(trx, requestId, true);
    const room = await roomOrThrow(trx, r.room_id);
    const terms = termsOf(r);
    const member = walletCommitment(
      room,
      input.walletPublicKey,
      approvalMessage(requestId, requestHash(terms), input.decision),
      input.signature,
    );
    if (r.status !== 'pending') throw conflict('request_decided', `The request is already ${r.status}.`);
    const committee = await committeeOrThrow(trx, r.room_id, r.committee);
    if (!committee.members.includes(member))
      throw new AppError(403, 'not_an_approver', 'This wallet is not on the request’s committee.');
    const at = new Date().toISOString();
    const inserted = (await trx('approvals')
      .insert({ request_id: requestId, member_commitment: member, decision: input.decision, at })
      .onConflict(['request_id', 'member_commitment'])
      .ignore()
      .returning('request_id')) as unknown[];
    if (!inserted.length) throw conflict('already_decided', 'This committee member has already decided.');
    await appendEntry(trx, 'treasury_requests', requestId, r, {
      stage: 'approval',
      action: input.decision,
      at,
      actorCommitment: member,
      data: null,
    });
    const decisions = (await trx('approvals').where('request_id', requestId).orderBy('at')) as Array<{
      member_commitment: string;
      decision: 'approve' | 'reject';
      at: string;
    }>;
    const approvals = decisions.filter((d) => d.decision === 'approve').length;
    const rejections = decisions.length - approvals;
    const outcome =
      approvals >= r.threshold
        ? 'approved'
        : rejections > r.committee_size - r.threshold
          ? 'rejected'
          : undefined;
    if (outcome) {
      await appendEntry(trx, 'treasury_requests', requestId, r, {
        stage: 'proof',
        action: 'decided',
        at: new Date().toISOString(),
        actorCommitment: null,
        data: { outcome, approvals, rejections },
      });
      const entries = await loadEntries(trx, requestId);
      const proofId = newId('prf');
      const pkg = await appendPackageToLog(
        trx,
        buildTreasuryPackage(
          {
            proofId,
            issuedAt: new Date(),
            terms,
            outcome,
            // In chain order, which is the order the decisions were recorded in.
            decisions: entries
              .filter((e) => e.action === 'approve' || e.action === 'reject')
              .map((e) => ({
                memberCommitment: e.actorCommitment!,
                decision: e.action as 'approve' | 'reject',
                at: e.at,
              })),
            genesis: r.chain_genesis,
            entries,
          },
          serviceSigningKey(),
        ),
      );
      await trx('treasury_requests')
        .where({ id: requestId, status: 'pending' })
        .update({
          status: outcome,
          proof_id: proofId,
          package: JSON.stringify(pkg),
          updated_at: trx.fn.now(),
        });
      r.status = outcome;
      r.proof_id = proofId;
    }
    return view(r, decisions);
  });
}

export async function treasuryPackage(db: Knex, requestId: string, owner: string): Promise<TreasuryPackage> {
  const r = await requestOrThrow(db, requestId);
  assertOwner(owner, r, 'The treasury request');
  if (!r.package) throw conflict('not_published', 'The request is still pending; no package yet.');
  return r.package;
}
