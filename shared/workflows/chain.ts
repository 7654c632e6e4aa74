// A workflow's chain: its stage proof hashes and evidence commitments over the audit hash chain
// (../proofs/chain), with the recomputation that finds the first altered entry or stage.
import { randomBytes } from 'node:crypto';
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import { verifyChain } from '../proofs/chain';
import type { ChainedEntry, StageRecord, StageStatus } from './records';

/** A fresh salt for an evidence commitment; kept with the private row, never published. */
export const newEvidenceSalt = (): string => randomBytes(16).toString('hex');

/** sha256 over the evidence hash and a salt: public, yet it confirms nothing about a guessable document. */
export function evidenceCommitment(evidenceHash: string, salt: string): string {
  return sha256Hex(
    canonicalJson({ type: 'proof-exchange/evidence/v1', evidenceHash: evidenceHash.toLowerCase(), salt }),
  );
}

export interface StageHashInput {
  index: number;
  stage: string;
  status: StageStatus;
  timestamp: string | null;
  actorCommitment: string | null;
  entryHashes: readonly string[];
  prevStageHash: string;
}

/** A closed stage's proof hash: its entries, its outcome and the previous stage's hash (genesis for the first). */
export function stageProofHash(input: StageHashInput): string {
  return sha256Hex(
    canonicalJson({
      type: 'proof-exchange/stage/v1',
      index: input.index,
      stage: input.stage,
      status: input.status,
      timestamp: input.timestamp,
      actorCommitment: input.actorCommitment,
      entries: input.entryHashes,
      prevStageHash: input.prevStageHash,
    }),
  );
}

export const isClosed = (status: StageStatus): boolean => status === 'completed' || status === 'rejected';

/** The proof hash a record should carry, given the proof hash of the stage before it. */
export function recordProofHash(record: StageRecord, index: number, prevStageHash: string): string {
  return stageProofHash({
    index,
    stage: record.stage,
    status: record.status,
    timestamp: record.timestamp,
    actorCommitment: record.actorCommitment,
    entryHashes: record.auditTrail.map((e) => e.entryHash),
    prevStageHash,
  });
}

/** All entries of a workflow in chain order. */
export function flattenTrail(records: readonly StageRecord[]): ChainedEntry[] {
  return records.flatMap((r) => r.auditTrail).sort((a, b) => a.seq - b.seq);
}

/** The head of a workflow's chain (the genesis while it has no entries). */
export function chainHead(genesis: string, records: readonly StageRecord[]): string {
  const trail = flattenTrail(records);
  return trail.length === 0 ? genesis : (trail[trail.length - 1] as ChainedEntry).entryHash;
}

export interface Alteration {
  stage: string;
  seq?: number;
  code:
    | 'stage_order'
    | 'sequence_gap'
    | 'entry_misplaced'
    | 'chain_broken'
    | 'entry_hash_mismatch'
    | 'stage_hash_mismatch'
    | 'stage_hash_missing';
  detail: string;
}

export type RecordsCheck =
  { ok: true; head: string; length: number; stageHashes: string[] } | { ok: false; altered: Alteration };

/**
 * Recomputes a workflow's chain and stage hashes from its records (template order) and reports the
 * first entry or stage that does not match what was recorded.
 */
export function checkRecords(
  genesis: string,
  stageKeys: readonly string[],
  records: readonly StageRecord[],
): RecordsCheck {
  for (const [i, key] of stageKeys.entries()) {
    const record = records[i];
    if (!record || record.stage !== key || records.length !== stageKeys.length) {
      return {
        ok: false,
        altered: {
          stage: record?.stage ?? key,
          code: 'stage_order',
          detail: `the records do not follow the template at stage ${key}`,
        },
      };
    }
  }
  const trail = flattenTrail(records);
  for (const [i, entry] of trail.entries()) {
    if (entry.seq !== i) {
      return {
        ok: false,
        altered: {
          stage: entry.stage,
          seq: entry.seq,
          code: 'sequence_gap',
          detail: `entry ${i} is missing`,
        },
      };
    }
  }
  for (const record of records) {
    const stray = record.auditTrail.find((e) => e.stage !== record.stage);
    if (stray) {
      return {
        ok: false,
        altered: {
          stage: record.stage,
          seq: stray.seq,
          code: 'entry_misplaced',
          detail: `entry ${stray.seq} names another stage`,
        },
      };
    }
  }
  const chain = verifyChain(genesis, trail);
  if (!chain.ok) {
    const bad = trail[chain.index] as ChainedEntry;
    return { ok: false, altered: { stage: bad.stage, seq: bad.seq, code: chain.code, detail: chain.detail } };
  }
  const stageHashes: string[] = [];
  let prevStageHash = genesis;
  for (const [i, record] of records.entries()) {
    if (!isClosed(record.status)) {
      if (record.proofHash !== null) {
        return {
          ok: false,
          altered: {
            stage: record.stage,
            code: 'stage_hash_mismatch',
            detail: `open stage ${record.stage} carries a proof hash`,
          },
        };
      }
      continue;
    }
    if (record.proofHash === null) {
      return {
        ok: false,
        altered: {
          stage: record.stage,
          code: 'stage_hash_missing',
          detail: `closed stage ${record.stage} has no proof hash`,
        },
      };
    }
    const expected = recordProofHash(record, i, prevStageHash);
    if (expected !== record.proofHash) {
      return {
        ok: false,
        altered: {
          stage: record.stage,
          code: 'stage_hash_mismatch',
          detail: `stage ${record.stage} does not match its proof hash`,
        },
      };
    }
    stageHashes.push(expected);
    prevStageHash = expected;
  }
  return { ok: true, head: chain.head, length: chain.length, stageHashes };
}
