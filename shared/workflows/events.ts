// Recording a workflow event: its policy proof checked against the stage's gate, the event appended
// through the workflow's appender, and a closed workflow's package queued.
import type { Db } from '../platform/db/knex';
import { AppError, notFound } from '../platform/errors';
import { logger } from '../platform/log';
import type { Queues } from '../platform/queues';
import { appenderFor } from './append';
import {
  APPROVAL_PROOF_REQUIRED,
  approvalEvent,
  checkApproval,
  claimApproval,
  stageHasApproverSet,
} from './approvers';
import type { ApprovalBody } from './approvers';
import type { GatedProof, Principal, RecordedEvent } from './append';
import { templateOrThrow } from './load';
import type { WorkflowRow } from './load';
import { checkCredentialGate } from './credential-proofs';
import { checkPolicyProof, loadStageGates } from './policy-gate';
import { WORKFLOW_PACKAGE_KIND } from './publish';
import type { WorkflowEvent } from './records';

/**
 * The gate for an event carrying a policy proof, decided before the row lock is taken: the gate's
 * parameters never change after prepare, and the pairing check should not hold the lock.
 */
async function gatePolicyProof(
  db: Db,
  event: WorkflowEvent,
  principal: Principal,
): Promise<GatedProof | undefined> {
  if (!event.policyProof) return undefined;
  const wf = (await db('workflows').where('id', event.workflowId).first()) as WorkflowRow | undefined;
  if (!wf || (!principal.operator && wf.owner !== principal.owner))
    throw notFound(`Workflow ${event.workflowId}`);
  const template = templateOrThrow(wf.template);
  const stageIndex = template.stages.findIndex((s) => s.key === event.stage);
  // An unknown stage is the engine's to refuse, with its own code.
  if (stageIndex < 0) return undefined;
  const gate = (await loadStageGates(db, wf.id)).get(stageIndex);
  const accepted = await checkPolicyProof(
    gate,
    {
      proofId: wf.proof_id,
      stage: event.stage,
      stageRequiresProof: template.stages[stageIndex]!.requiresBlindPolicyProof === true,
    },
    event.policyProof,
  );
  const requirement = template.stages[stageIndex]!.credential;
  if (gate?.policy === 'credential' && requirement) {
    const publicSignals = event.policyProof.publicSignals as string[];
    accepted.credential = {
      proof: event.policyProof.proof,
      publicSignals,
      accepted: await checkCredentialGate(db, {
        owner: wf.owner,
        requirement,
        plain: gate.plain,
        publicSignals,
        at: new Date(),
      }),
    };
  }
  return { accepted, stageIndex };
}

/**
 * Records one event: a policy proof is checked against its stage's gate first (no lock held), then the
 * workflow's appender decides the event against the workflow's head and advances it (see append.ts).
 * When only the Proof stage is left, the service finalizes it in the same write; a closed workflow gets
 * its package row in that write and a `proofs` job after commit.
 */
export async function recordEvent(
  db: Db,
  queues: Queues,
  event: WorkflowEvent,
  principal: Principal,
): Promise<RecordedEvent> {
  if (event.policyProof && event.evidenceHash !== undefined) {
    throw new AppError(400, 'validation_failed', 'Send evidenceHash or policyProof, not both.', {
      errors: [{ path: 'policyProof', message: 'not with evidenceHash' }],
    });
  }
  // A stage with an approver set takes only proven approvals (recordApproval): a bare commitment
  // would be an approver anyone holding the owner's key could invent.
  if (
    event.action === 'approve' &&
    (await stageHasApproverSet(db, event.workflowId, event.stage, principal))
  ) {
    throw new AppError(
      409,
      APPROVAL_PROOF_REQUIRED,
      `Stage '${event.stage}' takes approvals only as membership proofs of its approver set (POST /api/proof-workflows/approvals).`,
    );
  }
  const gated = await gatePolicyProof(db, event, principal);
  const result = await appenderFor(db).append(event, principal, gated);
  if (result.workflowStatus !== 'active') await enqueuePackage(queues, result.proofId);
  return result;
}

/**
 * Records a proven approval: checked without a lock (checkApproval), appended as an `approve` entry
 * whose actor is the nullifier, and claimed in that entry's transaction (claimApproval). No credential:
 * the proof is the approver's authority, and it names nobody.
 */
export async function recordApproval(db: Db, queues: Queues, body: ApprovalBody): Promise<RecordedEvent> {
  const checked = await checkApproval(db, body);
  const result = await appenderFor(db).append(
    approvalEvent(checked),
    { owner: checked.workflow.owner, operator: false },
    undefined,
    (trx, entry) => claimApproval(trx, checked, entry),
  );
  if (result.workflowStatus !== 'active') await enqueuePackage(queues, result.proofId);
  return result;
}

/** Enqueues a package build; a Redis failure is logged, not thrown: the sweeper re-enqueues from Postgres. */
export async function enqueuePackage(queues: Queues, proofId: string): Promise<boolean> {
  try {
    await queues.enqueue('proofs', { proofId, kind: WORKFLOW_PACKAGE_KIND });
    return true;
  } catch (err) {
    logger.warn(
      { proofId, err: (err as Error).message },
      'enqueue failed; the sweeper will retry from Postgres',
    );
    return false;
  }
}
