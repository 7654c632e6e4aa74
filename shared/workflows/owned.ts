// An organization's own workflows, newest first: what its credential may list (the private handle
// included, as prepare gave it), never another owner's.
import { ownedList } from '../proofs/owned-list';
import type { WorkflowStatus } from './records';

interface Row {
  id: string;
  proof_id: string;
  template: string;
  template_version: number;
  status: WorkflowStatus;
  created_at: Date;
  updated_at: Date;
}

export interface OwnedWorkflow {
  workflowId: string;
  proofId: string;
  template: string;
  templateVersion: number;
  status: WorkflowStatus;
  createdAt: string;
  updatedAt: string;
}

/** The workflows `owner` (a license id, or 'operator') started. */
export const listOwnedWorkflows = ownedList<Row, OwnedWorkflow>({
  table: 'workflows',
  list: 'workflows',
  columns: ['id', 'proof_id', 'template', 'template_version', 'status', 'created_at', 'updated_at'],
  view: (r) => ({
    workflowId: r.id,
    proofId: r.proof_id,
    template: r.template,
    templateVersion: r.template_version,
    status: r.status,
    createdAt: new Date(r.created_at).toISOString(),
    updatedAt: new Date(r.updated_at).toISOString(),
  }),
});
