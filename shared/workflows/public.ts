// What anyone may read of workflows: the templates, global totals, and a workflow's public state.
import { chainHead, flattenTrail } from './chain';
import { genesisOf } from './engine';
import { loadRecords, packageRow, templateOrThrow, workflowByProofId } from './load';
import type { Conn, PackageRow } from './load';
import { publicTimeline } from './package';
import type { PublicStage } from './package';
import type { WorkflowStatus } from './records';
import { stageRequirements, workflowTemplates } from './templates';
import type { TemplateName } from './templates';

export interface TemplateSummary {
  key: string;
  name: TemplateName;
  version: number;
  description: string;
  stages: Array<ReturnType<typeof stageRequirements>[number] & { policy: string | null }>;
}

export interface WorkflowTotals {
  active: number;
  completed: number;
  rejected: number;
  total: number;
}

/**
 * The six templates with their stages. No count per template: on a service with few organizations, how
 * many workflows of a template run says what one of them is doing (an organization lists its own).
 */
export function templateSummaries(): TemplateSummary[] {
  return workflowTemplates.map((t) => ({
    key: t.key,
    name: t.name,
    version: t.version,
    description: t.description,
    stages: stageRequirements(t).map((r, i) => ({ ...r, policy: t.stages[i]?.policy ?? null })),
  }));
}

/** How many workflows are in each state, across every template and organization: one global figure. */
export async function workflowTotals(db: Conn): Promise<WorkflowTotals> {
  const rows = (await db('workflows').select('status').count('* as n').groupBy('status')) as Array<{
    status: WorkflowStatus;
    n: string | number;
  }>;
  const totals = { active: 0, completed: 0, rejected: 0, total: 0 };
  for (const r of rows) {
    totals[r.status] += Number(r.n);
    totals.total += Number(r.n);
  }
  return totals;
}

export interface PublicWorkflowState {
  proofId: string;
  template: TemplateName;
  templateVersion: number;
  status: WorkflowStatus;
  stages: PublicStage[];
  chain: { genesis: string; head: string; length: number };
  package: { status: PackageRow['status']; leafIndex: number | null } | null;
}

/** What anyone may see of a workflow: never its private handle, salts or evidence. */
export async function publicState(db: Conn, proofId: string): Promise<PublicWorkflowState | undefined> {
  const wf = await workflowByProofId(db, proofId);
  if (!wf) return undefined;
  const template = templateOrThrow(wf.template);
  const [records, pkg] = await Promise.all([loadRecords(db, wf.id), packageRow(db, proofId)]);
  const genesis = genesisOf({ template, proofId });
  return {
    proofId,
    template: template.name,
    templateVersion: wf.template_version,
    status: wf.status,
    stages: publicTimeline(template, records),
    chain: { genesis, head: chainHead(genesis, records), length: flattenTrail(records).length },
    package: pkg
      ? { status: pkg.status, leafIndex: pkg.leaf_index === null ? null : Number(pkg.leaf_index) }
      : null,
  };
}
