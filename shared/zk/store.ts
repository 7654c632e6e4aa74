// Blind policy proofs as rows: create (checked, sealed, enqueued), prove a stored row once, read, and
// the sealing of the private circuit input that travels from the web process to the prover.
import { performance } from 'node:perf_hooks';
import { UnrecoverableError } from 'bullmq';
import type { Db } from '../db/knex';
import { env } from '../env';
import { AppError, notFound } from '../errors';
import { newId } from '../ids';
import { logger } from '../log';
import type { Queues } from '../queues';
import { open, purposeKey, seal } from '../sealing';
import type { ProverBackend } from './backends';
import { expectedPublicSignals } from './backends';
import { getPolicy, preparePolicyInput } from './policies';
import type { CircuitInput, PolicyId } from './policies';
import type { Groth16Proof } from './verify';
import { verifyPolicyProof } from './verify';

export const BLIND_POLICY_KIND = 'blind_policy';
export const proofStatuses = ['held', 'queued', 'running', 'succeeded', 'failed'] as const;
export type ProofStatus = (typeof proofStatuses)[number];
/** How long a held proof (awaiting a paid exchange job) keeps its sealed input. */
export const HOLD_TTL_MS = 2 * 3600 * 1000;

export interface ProofRow {
  id: string;
  policy: PolicyId;
  status: ProofStatus;
  commitments: Record<string, string>;
  public_signals: string[] | null;
  proof: Groth16Proof | null;
  backend: string | null;
  witness_ms: number | null;
  proving_ms: number | null;
  total_ms: number | null;
  queue_ms: number | null;
  progress: number;
  progress_stage: string | null;
  attempts: number;
  error: { code: string; message: string } | null;
  agent_id: string | null;
  job_id: string | null;
  input_sealed: Buffer | null;
  hold_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

// --- Sealing: AES-256-GCM, the row id as associated data, so a sealed input opens only for its row.

const inputKey = (): Buffer =>
  purposeKey('proof-input-key', { name: 'PROOF_INPUT_KEY', value: env.PROOF_INPUT_KEY });

export function sealInput(proofId: string, circuitInput: CircuitInput): Buffer {
  return seal(inputKey(), proofId, JSON.stringify(circuitInput));
}

export function openInput(proofId: string, sealed: Buffer): CircuitInput {
  return JSON.parse(open(inputKey(), proofId, sealed).toString('utf8')) as CircuitInput;
}

// --- Creation

export interface CreateProofRequest {
  policy: string;
  inputs: unknown;
  /** Keep the proof held until a paid `zk.blind_policy` exchange job releases it. */
  hold?: boolean;
  agentId?: string | null;
  /** The context the proof binds to (a workflow stage's); default 0, bound to nothing. */
  context?: bigint;
  /**
   * Commitments the proof must carry (a workflow stage's parameters): a mismatch is refused before
   * anything is written, rather than proved and refused at the stage.
   */
  expectCommitments?: Record<string, string>;
}

/**
 * Validates and checks the private inputs (400/422 before anything is written), stores the row with
 * the circuit input sealed, and enqueues it unless held. The salts are for the caller only.
 */
export async function createPolicyProof(
  db: Db,
  queues: Queues,
  req: CreateProofRequest,
): Promise<{ row: ProofRow; salts: Record<string, string> }> {
  const policy = getPolicy(req.policy);
  const prepared = await preparePolicyInput(policy.id, req.inputs, { context: req.context ?? 0n });
  const differing = Object.entries(req.expectCommitments ?? {})
    .filter(([name, value]) => prepared.commitments[name] !== value)
    .map(([name]) => name);
  if (differing.length > 0) {
    throw new AppError(
      422,
      'policy_parameters_mismatch',
      `The inputs commit to another ${differing.join(', ')} than the stage fixed: use the parameters and salts the workflow owner holds.`,
    );
  }
  const id = newId('prf');
  const hold = req.hold === true;
  const [row] = (await db('proofs')
    .insert({
      id,
      policy: policy.id,
      status: hold ? 'held' : 'queued',
      commitments: JSON.stringify(prepared.commitments),
      input_sealed: sealInput(id, prepared.circuitInput),
      agent_id: req.agentId ?? null,
      hold_expires_at: hold ? new Date(Date.now() + HOLD_TTL_MS) : null,
    })
    .returning('*')) as ProofRow[];
  if (!hold) await enqueueProof(queues, id);
  return { row: row!, salts: prepared.salts };
}

/** A Redis failure is logged, not thrown: the sweeper enqueues rows left queued. */
export async function enqueueProof(queues: Queues, proofId: string): Promise<boolean> {
  try {
    await queues.enqueue('proofs', { proofId, kind: BLIND_POLICY_KIND });
    return true;
  } catch (err) {
    logger.warn({ proofId, err: (err as Error).message }, 'proof enqueue failed; the sweeper will retry');
    return false;
  }
}

// --- Reads

export async function findProof(db: Db, id: string): Promise<ProofRow | undefined> {
  return (await db('proofs').where({ id }).first()) as ProofRow | undefined;
}

export async function getProof(db: Db, id: string): Promise<ProofRow> {
  const row = await findProof(db, id);
  if (!row) throw notFound(`Proof ${id}`);
  return row;
}

export interface ProofTimings {
  witnessMs: number | null;
  provingMs: number | null;
  totalMs: number | null;
  queueMs: number | null;
}

export interface ProofView {
  id: string;
  policy: PolicyId;
  status: ProofStatus;
  progress: number;
  stage: string | null;
  commitments: Record<string, string>;
  publicSignals: string[] | null;
  proof: Groth16Proof | null;
  backend: string | null;
  timings: ProofTimings;
  attempts: number;
  error: { code: string; message: string } | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  holdExpiresAt: string | null;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

/** The public face of a row: never the sealed input. */
export function proofView(row: ProofRow): ProofView {
  return {
    id: row.id,
    policy: row.policy,
    status: row.status,
    progress: row.progress,
    stage: row.progress_stage,
    commitments: row.commitments,
    publicSignals: row.public_signals,
    proof: row.proof,
    backend: row.backend,
    timings: {
      witnessMs: row.witness_ms,
      provingMs: row.proving_ms,
      totalMs: row.total_ms,
      queueMs: row.queue_ms,
    },
    attempts: row.attempts,
    error: row.error,
    createdAt: iso(row.created_at)!,
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    holdExpiresAt: iso(row.hold_expires_at),
  };
}

export interface TimingStats {
  p50: number | null;
  p95: number | null;
}

export interface PolicyTimingStats {
  policy: string;
  count: number;
  totalMs: TimingStats;
  witnessMs: TimingStats;
  provingMs: TimingStats;
  queueMs: TimingStats;
}

/** p50/p95 of the last `limit` succeeded proofs, by policy. */
export async function provingStats(db: Db, limit = 200): Promise<PolicyTimingStats[]> {
  const pct = (col: string, p: number) => `percentile_cont(${p}) within group (order by ${col})`;
  const cols = ['total_ms', 'witness_ms', 'proving_ms', 'queue_ms'];
  const { rows } = await db.raw(
    `select policy, count(*)::int as count, ${cols
      .flatMap((c) => [`${pct(c, 0.5)} as ${c}_p50`, `${pct(c, 0.95)} as ${c}_p95`])
      .join(', ')}
     from (select * from proofs where status = 'succeeded' order by finished_at desc limit ?) recent
     group by policy order by policy`,
    [limit],
  );
  const round = (v: unknown) => (v === null || v === undefined ? null : Math.round(Number(v) * 100) / 100);
  return (rows as Array<Record<string, unknown>>).map((r) => {
    const stat = (c: string) => ({ p50: round(r[`${c}_p50`]), p95: round(r[`${c}_p95`]) });
    return {
      policy: String(r.policy),
      count: Number(r.count),
      totalMs: stat('total_ms'),
      witnessMs: stat('witness_ms'),
      provingMs: stat('proving_ms'),
      queueMs: stat('queue_ms'),
    };
  });
}

// --- State changes: each one conditional, so a duplicate delivery or a late writer changes nothing.

/** Claims a row for proving; undefined when it already ended (or is held): nothing to do. */
export async function claimProof(db: Db, id: string): Promise<ProofRow | undefined> {
  const { rows } = await db.raw(
    `update proofs set status = 'running', attempts = attempts + 1,
       queue_ms = case when started_at is null
         then round(extract(epoch from (now() - updated_at)) * 100000) / 100 else queue_ms end,
       started_at = coalesce(started_at, now()), progress_stage = 'claimed', updated_at = now()
     where id = ? and status in ('queued', 'running') returning *`,
    [id],
  );
  return rows[0] as ProofRow | undefined;
}

export async function recordProofProgress(db: Db, id: string, percent: number, stage: string): Promise<void> {
  await db('proofs')
    .where({ id, status: 'running' })
    .update({
      progress: Math.max(0, Math.min(100, Math.round(percent))),
      progress_stage: stage,
      updated_at: db.fn.now(),
    });
}

export interface StoredProof {
  proof: Groth16Proof;
  publicSignals: string[];
  backend: string;
  witnessMs: number;
  provingMs: number;
  totalMs: number;
}

/** Stores the proof and wipes the sealed input in the same statement; undefined if already ended. */
export async function completeProof(db: Db, id: string, p: StoredProof): Promise<ProofRow | undefined> {
  const [row] = (await db('proofs')
    .where({ id })
    .whereIn('status', ['queued', 'running'])
    .update({
      status: 'succeeded',
      proof: JSON.stringify(p.proof),
      public_signals: JSON.stringify(p.publicSignals),
      backend: p.backend,
      witness_ms: p.witnessMs,
      proving_ms: p.provingMs,
      total_ms: p.totalMs,
      progress: 100,
      progress_stage: 'done',
      error: null,
      input_sealed: null,
      finished_at: db.fn.now(),
      updated_at: db.fn.now(),
    })
    .returning('*')) as ProofRow[];
  return row;
}

/** Ends a row as failed for good; the sealed input is wiped with it. */
export async function failProof(
  db: Db,
  id: string,
  code: string,
  message: string,
): Promise<ProofRow | undefined> {
  const [row] = (await db('proofs')
    .where({ id })
    .whereIn('status', ['held', 'queued', 'running'])
    .update({
      status: 'failed',
      error: JSON.stringify({ code, message }),
      input_sealed: null,
      progress_stage: 'failed',
      finished_at: db.fn.now(),
      updated_at: db.fn.now(),
    })
    .returning('*')) as ProofRow[];
  return row;
}

/** A failed attempt that will be retried: back to queued, input kept, last error noted. */
export async function requeueProof(db: Db, id: string, message: string): Promise<void> {
  await db('proofs')
    .where({ id, status: 'running' })
    .update({
      status: 'queued',
      error: JSON.stringify({ code: 'attempt_failed', message }),
      progress_stage: 'retry_scheduled',
      updated_at: db.fn.now(),
    });
}

/** Held proofs nobody paid for in time lose their input. */
export async function expireHeldProofs(db: Db): Promise<number> {
  return db('proofs')
    .where('status', 'held')
    .andWhere('hold_expires_at', '<', db.fn.now())
    .update({
      status: 'failed',
      error: JSON.stringify({ code: 'hold_expired', message: 'No exchange job released the proof in time.' }),
      input_sealed: null,
      progress_stage: 'failed',
      finished_at: db.fn.now(),
      updated_at: db.fn.now(),
    });
}

/**
 * Releases a held proof to the queue for the exchange job `jobId`. A retry of the same job finds its
 * proof again; anything else (unknown, expired, taken by another job) is a permanent failure.
 */
export async function releaseHeldProof(db: Db, queues: Queues, id: string, jobId: string): Promise<ProofRow> {
  const [released] = (await db('proofs')
    .where({ id, status: 'held' })
    .andWhere('hold_expires_at', '>', db.fn.now())
    .update({ status: 'queued', job_id: jobId, hold_expires_at: null, updated_at: db.fn.now() })
    .returning('*')) as ProofRow[];
  const row = released ?? (await findProof(db, id));
  if (!row) throw new UnrecoverableError(`There is no proof ${id}.`);
  if (row.job_id !== jobId) {
    if (row.status === 'held') {
      await failProof(db, id, 'hold_expired', 'No exchange job released the proof in time.');
      throw new UnrecoverableError(`Proof ${id} was held too long; prove again.`);
    }
    throw new UnrecoverableError(`Proof ${id} is not held for an exchange job.`);
  }
  if (row.status === 'queued') await enqueueProof(queues, id);
  return row;
}

/** Polls a row until it ends (the prover is another process; Postgres is the meeting point). */
export async function awaitProof(
  db: Db,
  id: string,
  opts: { timeoutMs: number; everyMs?: number; onProgress?: (row: ProofRow) => Promise<void> },
): Promise<ProofRow> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastProgress = -1;
  for (;;) {
    const row = await getProof(db, id);
    if (row.status === 'succeeded' || row.status === 'failed') return row;
    if (row.progress !== lastProgress) {
      lastProgress = row.progress;
      await opts.onProgress?.(row);
    }
    if (Date.now() > deadline) throw new Error(`Proof ${id} is still ${row.status}.`);
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 200));
  }
}

// --- Proving a stored row

/** A failure no retry can fix: the row is failed at once. */
export class ProofRefused extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Backends that check their own output (signals and verification) before returning it. */
const selfVerifying = new Set(['rapidsnark', 'native']);

const elapsed = (start: number) => Math.round((performance.now() - start) * 100) / 100;

/**
 * Proves the row `id` once: claim, open the sealed input, witness and proof with `backend`, check
 * the signals and the proof, store them and wipe the input in one conditional update. Skips a row
 * that already ended. Throws ProofRefused when retrying cannot help; other errors are retryable.
 */
export async function proveStoredProof(
  db: Db,
  id: string,
  backend: ProverBackend,
  onProgress?: (percent: number, stage: string) => Promise<void>,
): Promise<{ outcome: 'succeeded' | 'skipped'; row?: ProofRow }> {
  const started = performance.now();
  const row = await claimProof(db, id);
  if (!row) return { outcome: 'skipped' };
  if (!row.input_sealed) throw new ProofRefused('input_missing', 'The proof input is no longer stored.');
  let circuitInput: CircuitInput;
  try {
    circuitInput = openInput(row.id, row.input_sealed);
  } catch {
    throw new ProofRefused('input_unreadable', 'The sealed proof input cannot be opened with this key.');
  }
  const policy = getPolicy(row.policy);
  const writes: Promise<unknown>[] = [];
  const report = (percent: number, stage: string) => {
    writes.push(
      recordProofProgress(db, id, percent, stage),
      onProgress?.(percent, stage) ?? Promise.resolve(),
    );
  };
  let output;
  try {
    output = await backend.prove(policy.id, circuitInput, (e) => {
      if (e.stage !== 'done') report(e.percent, e.stage);
    });
  } catch (err) {
    if (err instanceof AppError && err.status < 500) throw new ProofRefused(err.code, err.message);
    throw err;
  } finally {
    await Promise.allSettled(writes);
  }
  if (output.publicSignals.join() !== expectedPublicSignals(policy.id, circuitInput).join()) {
    throw new Error(`The ${backend.name} prover returned public signals that do not match the input.`);
  }
  const provedBy = output.provedBy ?? backend.name;
  if (!selfVerifying.has(provedBy)) {
    report(90, 'verifying');
    const check = await verifyPolicyProof(policy.id, output.proof, output.publicSignals);
    if (!check.valid) throw new Error(`The ${backend.name} prover returned a proof that does not verify.`);
  }
  await Promise.allSettled(writes);
  const done = await completeProof(db, id, {
    proof: output.proof,
    publicSignals: output.publicSignals,
    backend: provedBy,
    witnessMs: output.timings.witnessMs,
    provingMs: output.timings.provingMs,
    totalMs: elapsed(started),
  });
  return done ? { outcome: 'succeeded', row: done } : { outcome: 'skipped' };
}
