// Proving a stored row once (the prover): claim it, open its sealed input, prove and check, store the
// proof and wipe the input. Every state change is conditional, so a duplicate delivery or a late
// writer changes nothing.
import { performance } from 'node:perf_hooks';
import type { Db } from '../platform/db/knex';
import { AppError } from '../platform/errors';
import type { ProverBackend } from './backends';
import { expectedPublicSignals } from './backends';
import { getPolicy } from './policies';
import type { CircuitInput } from './policies';
import type { ProofRow } from './rows';
import { openInput } from './sealed-input';
import type { Groth16Proof } from './verify';
import { verifyPolicyProof } from './verify';

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

/** A failure no retry can fix: the row is failed at once. */
export class ProofRefused extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** How long a proof runs before its stages are written (on the row and its job): shorter ones write none. */
export const PROGRESS_AFTER_MS = 200;

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
  { progressAfterMs = PROGRESS_AFTER_MS }: { progressAfterMs?: number } = {},
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
  const write = (percent: number, stage: string) => {
    writes.push(
      recordProofProgress(db, id, percent, stage),
      onProgress?.(percent, stage) ?? Promise.resolve(),
    );
  };
  // A proof that ends within progressAfterMs writes no stage: its end is what a poller sees next, and
  // the writes would only delay it. A longer one writes the stage it is in then, and each after.
  let pending: [number, string] | undefined;
  let reporting = false;
  const progressTimer = setTimeout(() => {
    reporting = true;
    if (pending) write(...pending);
  }, progressAfterMs);
  const report = (percent: number, stage: string) => {
    if (reporting) write(percent, stage);
    else pending = [percent, stage];
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
    clearTimeout(progressTimer);
    await Promise.allSettled(writes);
  }
  if (output.publicSignals.join() !== expectedPublicSignals(policy.id, circuitInput).join()) {
    throw new Error(`The ${backend.name} prover returned public signals that do not match the input.`);
  }
  const provedBy = output.provedBy ?? backend.name;
  if (!selfVerifying.has(provedBy)) {
    if (reporting) write(90, 'verifying');
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
