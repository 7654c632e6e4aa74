// An organization's own workflows, newest first: what its credential may list (the private handle
// included, as prepare gave it), never another owner's.
import type { Db } from '../platform/db/knex';
import { decodeListCursor, listPage } from '../platform/paging';
import type { ListPage } from '../platform/paging';
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
export async function listOwnedWorkflows(
  db: Db,
  owner: string,
  opts: { limit: number; cursor?: string | undefined },
): Promise<ListPage<OwnedWorkflow>> {
  const after = decodeListCursor(opts.cursor, 'workflows');
  const q = db('workflows')
    .where({ owner })
    .select('id', 'proof_id', 'template', 'template_version', 'status', 'created_at', 'updated_at')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1);
  if (after) q.where('id', '<', after);
  return listPage((await q) as Row[], opts.limit, 'workflows', (r) => ({
    workflowId: r.id,
    proofId: r.proof_id,
    template: r.template,
    templateVersion: r.template_version,
    status: r.status,
    createdAt: new Date(r.created_at).toISOString(),
    updatedAt: new Date(r.updated_at).toISOString(),
  }));
}
