// A workflow's rows and how they are read: the workflow, its stages and trail rebuilt as stage records,
// its package row, and its template.
import type { Knex } from 'knex';
import type { Db } from '../platform/db/knex';
import { AppError } from '../platform/errors';
import type { WorkflowPackage } from './package';
import type { ChainedEntry, EvidenceKind, StageRecord, WorkflowStatus } from './records';
import { findTemplate, workflowTemplates } from './templates';
import type { TemplateName, WorkflowTemplate } from './templates';

export type Conn = Db | Knex.Transaction;

export interface WorkflowRow {
  id: string;
  proof_id: string;
  template: TemplateName;
  template_version: number;
  status: WorkflowStatus;
  owner: string;
  chain_head: string;
  entry_count: number;
  created_at: Date;
  updated_at: Date;
}

interface StageRow {
  workflow_id: string;
  idx: number;
  stage: string;
  status: StageRecord['status'];
  actor_commitment: string | null;
  timestamp: string | null;
  proof_hash: string | null;
}

interface EntryRow {
  workflow_id: string;
  seq: number;
  stage: string;
  action: ChainedEntry['action'];
  actor_commitment: string;
  evidence_commitment: string | null;
  evidence_kind: EvidenceKind | null;
  at: string;
  prev_hash: string;
  entry_hash: string;
}

export interface PackageRow {
  id: string;
  workflow_id: string;
  status: 'pending' | 'logged' | 'failed';
  package: WorkflowPackage | null;
  leaf_index: string | null;
  error: string | null;
}

export function templateOrThrow(name: string): WorkflowTemplate {
  const template = findTemplate(name);
  if (!template) {
    throw new AppError(422, 'unknown_template', `There is no template '${name}'.`, {
      extra: { templates: workflowTemplates.map((t) => t.name) },
    });
  }
  return template;
}

function entryOf(r: EntryRow): ChainedEntry {
  return {
    seq: r.seq,
    stage: r.stage,
    action: r.action,
    actorCommitment: r.actor_commitment,
    ...(r.evidence_commitment !== null ? { evidenceCommitment: r.evidence_commitment } : {}),
    ...(r.evidence_kind !== null ? { evidenceKind: r.evidence_kind } : {}),
    at: r.at,
    prevHash: r.prev_hash,
    entryHash: r.entry_hash,
  };
}

/** The stage records of a workflow rebuilt from its rows, in template order, with the exact hashed strings. */
export async function loadRecords(db: Conn, workflowId: string): Promise<StageRecord[]> {
  const [stages, entries] = await Promise.all([
    db('workflow_stages').where('workflow_id', workflowId).orderBy('idx') as Promise<StageRow[]>,
    db('audit_entries').where('workflow_id', workflowId).orderBy('seq') as Promise<EntryRow[]>,
  ]);
  return stages.map((s) => ({
    stage: s.stage,
    status: s.status,
    actorCommitment: s.actor_commitment,
    timestamp: s.timestamp,
    proofHash: s.proof_hash,
    auditTrail: entries.filter((e) => e.stage === s.stage).map(entryOf),
  }));
}

export async function workflowByProofId(db: Conn, proofId: string): Promise<WorkflowRow | undefined> {
  return (await db('workflows').where('proof_id', proofId).first()) as WorkflowRow | undefined;
}

export async function packageRow(db: Conn, proofId: string): Promise<PackageRow | undefined> {
  return (await db('proof_packages').where('id', proofId).first()) as PackageRow | undefined;
}
