// The shapes of workflow events, audit entries and stage records, with zod schemas for those that cross
// a boundary (an event posted by a client, rows read back from the database).
import { z } from 'zod';
import { entryFor, leafKey } from '../platform/translog/entry';
import { stageActions } from './templates';

/** A sha256 digest or a hash commitment: 64 hex characters, normalised to lowercase. */
export const commitmentHex = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, 'a 32-byte hash as 64 hex characters')
  .transform((s) => s.toLowerCase());

export const stageActionSchema = z.enum(stageActions);

/**
 * A blind policy proof offered as a stage's evidence, as the prove route returns it. Its public
 * signals are commitments, a policy id and a context: nothing private.
 */
export const policyProofEvidenceSchema = z
  .object({
    policy: z.string().min(1).max(64),
    proof: z.unknown(),
    publicSignals: z.unknown(),
  })
  .strict();
export type PolicyProofEvidence = z.infer<typeof policyProofEvidenceSchema>;

/** What a client posts: only hashes, commitments and public proofs, never documents, notes or identities. */
export const workflowEventSchema = z
  .object({
    workflowId: z.string().min(1).max(100),
    stage: z.string().min(1).max(64),
    action: stageActionSchema,
    actorCommitment: commitmentHex,
    evidenceHash: commitmentHex.optional(),
    policyProof: policyProofEvidenceSchema.optional(),
  })
  .strict();
export type WorkflowEvent = z.infer<typeof workflowEventSchema>;

export const evidenceKinds = ['document', 'blind_policy_proof'] as const;
export type EvidenceKind = (typeof evidenceKinds)[number];

/**
 * One audit-trail entry as hashed into the chain. The evidence hash itself is not here: a salted
 * commitment to it is, so a guessable document cannot be confirmed from a published package.
 */
export const auditEntrySchema = z
  .object({
    seq: z.number().int().nonnegative(),
    stage: z.string().min(1).max(64),
    action: stageActionSchema,
    actorCommitment: z.string().regex(/^[0-9a-f]{64}$/),
    evidenceCommitment: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional(),
    evidenceKind: z.enum(evidenceKinds).optional(),
    at: z.iso.datetime(),
  })
  .strict();
export type AuditEntry = z.infer<typeof auditEntrySchema>;

export const chainedEntrySchema = auditEntrySchema
  .extend({ prevHash: z.string().regex(/^[0-9a-f]{64}$/), entryHash: z.string().regex(/^[0-9a-f]{64}$/) })
  .strict();
export type ChainedEntry = z.infer<typeof chainedEntrySchema>;

export const stageStatuses = [
  'pending',
  'in_progress',
  'changes_requested',
  'completed',
  'rejected',
] as const;
export type StageStatus = (typeof stageStatuses)[number];

export type WorkflowStatus = 'active' | 'completed' | 'rejected';

/** The spec's stage record (status, actor commitment, timestamp, proof hash, audit trail), keyed by stage. */
export const stageRecordSchema = z
  .object({
    stage: z.string().min(1).max(64),
    status: z.enum(stageStatuses),
    actorCommitment: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .nullable(),
    timestamp: z.iso.datetime().nullable(),
    proofHash: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .nullable(),
    auditTrail: z.array(chainedEntrySchema),
  })
  .strict();
export type StageRecord = z.infer<typeof stageRecordSchema>;

/** A closed stage's record as the log holds it: without its trail, which its proof hash commits to. */
export interface StageRecordDocument {
  type: 'proof-exchange/stage-record/v1';
  proofId: string;
  stage: string;
  status: StageStatus;
  timestamp: string | null;
  actorCommitment: string | null;
  proofHash: string | null;
}

export const stageRecordDocument = (
  proofId: string,
  s: Pick<StageRecord, 'stage' | 'status' | 'timestamp' | 'actorCommitment' | 'proofHash'>,
): StageRecordDocument => ({
  type: 'proof-exchange/stage-record/v1',
  proofId,
  stage: s.stage,
  status: s.status,
  timestamp: s.timestamp,
  actorCommitment: s.actorCommitment,
  proofHash: s.proofHash,
});

/**
 * The log entry of a closed stage (kind stage_record, id `<proof id>/<stage key>`) and the key it is
 * queued and logged under. Anyone holding the package recomputes it from the package's stage.
 */
export function stageRecordEntry(
  proofId: string,
  s: Pick<StageRecord, 'stage' | 'status' | 'timestamp' | 'actorCommitment' | 'proofHash'>,
): { key: string; entry: Buffer } {
  const id = `${proofId}/${s.stage}`;
  return {
    key: leafKey('stage_record', id),
    entry: entryFor('stage_record', id, stageRecordDocument(proofId, s)),
  };
}
