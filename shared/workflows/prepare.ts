// Starting a workflow from a template: its stage rows, its genesis, and the commitments of the
// parameters of every stage that needs a blind policy proof.
import type { Db } from '../platform/db/knex';
import { newId } from '../platform/ids';
import { stageContext } from '../zk/context';
import { appenderFor, preparedHead } from './append';
import { fixApproverSets } from './approvers';
import type { FixedApprovers } from './approval-protocol';
import { genesisOf, initialStages } from './engine';
import { templateOrThrow } from './load';
import { commitPolicyParameters } from './policy-gate';
import type { PreparedGate } from './policy-gate';
import type { StageRecord, WorkflowStatus } from './records';
import type { TemplateName, WorkflowTemplate } from './templates';

export interface PreparedWorkflow {
  workflowId: string;
  proofId: string;
  template: TemplateName;
  templateVersion: number;
  status: WorkflowStatus;
  stages: Array<StageRecord & { name: string; requiredApprovals: number; actions: string[] }>;
  /** Per stage that needs a blind policy proof: its policy, parameter commitments and context. */
  policyGates: PreparedGate[];
  /**
   * The approver sets fixed now, per approval stage whose owner has one: the only roots the workflow
   * takes approvals against (absent where no stage has a set).
   */
  approvers?: FixedApprovers;
}

function describeStages(
  template: WorkflowTemplate,
  records: readonly StageRecord[],
): PreparedWorkflow['stages'] {
  return template.stages.map((spec, i) => ({
    ...(records[i] as StageRecord),
    name: spec.name,
    requiredApprovals: spec.requiredApprovals,
    actions: [...spec.actions],
  }));
}

/**
 * Starts a workflow from a template; `owner` is 'operator' or a license id. The parameters of every
 * stage that needs a blind policy proof are fixed here, as commitments (plain ones are committed
 * and dropped; their salts go back to the caller once), and so is the root of the owner's approver set
 * of every approval stage that has one, logged in the same transaction (fixApproverSets).
 */
export async function prepareWorkflow(
  db: Db,
  input: { template: string; owner: string; policyParameters?: Record<string, unknown> | undefined },
): Promise<PreparedWorkflow> {
  const template = templateOrThrow(input.template);
  const committed = await commitPolicyParameters(template, input.policyParameters);
  const workflowId = newId('wf');
  const proofId = newId('prf');
  const records = initialStages(template);
  const gates = new Map(committed.map((g) => [g.index, g]));
  const policyGates: PreparedGate[] = await Promise.all(
    committed.map(async (g) => ({ ...g, context: await stageContext(proofId, g.index) })),
  );
  const approvers = await db.transaction(async (trx) => {
    await trx('workflows').insert({
      id: workflowId,
      proof_id: proofId,
      template: template.name,
      template_version: template.version,
      owner: input.owner,
      chain_head: genesisOf({ template, proofId }),
    });
    await trx('workflow_stages').insert(
      records.map((r, idx) => ({
        workflow_id: workflowId,
        idx,
        stage: r.stage,
        status: r.status,
        policy: gates.get(idx)?.policy ?? null,
        policy_commitments: gates.has(idx) ? JSON.stringify(gates.get(idx)!.commitments) : null,
        policy_plain: gates.get(idx)?.plain ? JSON.stringify(gates.get(idx)!.plain) : null,
      })),
    );
    return fixApproverSets(trx, { id: workflowId, proofId, owner: input.owner, template }, new Date());
  });
  // Its first event needs nothing read back: the head of a new workflow is known.
  appenderFor(db).remember(preparedHead({ id: workflowId, proofId, template, owner: input.owner }));
  return {
    workflowId,
    proofId,
    template: template.name,
    templateVersion: template.version,
    status: 'active',
    stages: describeStages(template, records),
    policyGates,
    ...(approvers ? { approvers } : {}),
  };
}
