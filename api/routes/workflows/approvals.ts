// The site table, anonymous approvals: an organization's approver set per template stage (identity
// commitments its approvers made themselves, every root logged), what an approver proves against, and
// the approval itself, posted as a membership proof with no credential: the proof is the authority.
import { z } from 'zod';
import { DECIMAL_FIELD } from '../../../shared/zk/anonymity';
import { idPattern } from '../../../shared/platform/ids';
import {
  APPROVAL_PROOF_REQUIRED,
  approvalBodySchema,
  approvalCodes,
  approvalTarget,
  approverCredentialInputSchema,
  approverSetTree,
  registerApprovers,
} from '../../../shared/workflows/approvers';
import { approverCredentialSchema } from '../../../shared/workflows/approval-protocol';
import { credentialGateCodes } from '../../../shared/workflows/credential-proofs';
import { ruleCodes } from '../../../shared/workflows/engine';
import { recordApproval } from '../../../shared/workflows/events';
import { stageRecordSchema } from '../../../shared/workflows/records';
import { ownerOf } from '../../http/callers';
import type { RouteTable } from '../../http/route';

const tags = ['Proof workflows'];
const fieldSchema = z.string().regex(DECIMAL_FIELD, 'a BN254 field element, decimal');
const identitySchema = fieldSchema.describe('An identity commitment: Poseidon(identity secret), decimal');
const setIdSchema = z.string().regex(idPattern('aps'), 'an approver set id (aps_…)');

const registeredSchema = z
  .object({
    setId: z.string(),
    template: z.string(),
    stage: z.string(),
    seq: z.number().int(),
    root: z.string(),
    size: z.number().int(),
    added: z.number().int(),
    leafIndex: z.number().int().optional().describe('Where the new root’s statement sits in the log'),
    credential: approverCredentialSchema
      .optional()
      .describe('What each approver must hold, in the root statement (absent: nothing)'),
  })
  .meta({ id: 'ApproverSetRegistered' });

const treeSchema = z
  .object({
    setId: z.string(),
    template: z.string(),
    stage: z.string(),
    depth: z.number().int(),
    identityCommitments: z.array(z.string()),
    root: z.string().nullable(),
    roots: z
      .array(z.object({ seq: z.number().int(), root: z.string(), size: z.number().int(), at: z.string() }))
      .describe(
        'The latest roots (at most 100), newest first: each a tree of the first `size` commitments, and when it was made',
      ),
    credential: approverCredentialSchema
      .nullable()
      .describe('What each approver must hold under the latest root (null: nothing)'),
  })
  .meta({ id: 'ApproverSetTree' });

const targetSchema = z
  .object({
    proofId: z.string(),
    stage: z.string(),
    setId: z.string(),
    scope: z.string(),
    contentHash: z.string(),
    message: z.string(),
    members: z.array(z.string()).describe('The set’s members as the workflow fixed it at prepare'),
    root: z.string().describe('The only root the workflow takes approvals of this stage against'),
    rootSeq: z.number().int(),
    size: z.number().int(),
    fixedAt: z.string().describe('When the workflow was prepared and fixed the set'),
    credential: approverCredentialSchema
      .nullable()
      .describe('What each approver must hold, proven inside the approval (null: nothing)'),
    circuit: z.enum(['ballot', 'approval']).describe('The circuit an approval of this stage is proven with'),
  })
  .meta({ id: 'ApprovalTarget' });

const recordedSchema = z
  .object({
    workflowId: z.string(),
    proofId: z.string(),
    workflowStatus: z.enum(['active', 'completed', 'rejected']),
    stage: stageRecordSchema,
    entry: z.record(z.string(), z.unknown()),
    chainHead: z.string(),
    currentStage: z.string().nullable(),
  })
  .meta({ id: 'RecordedApproval' });

export function approvalRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'post',
      path: '/api/proof-workflows/approver-sets',
      operationId: 'registerWorkflowApprovers',
      bodyLimit: 'large',
      summary: 'Add approvers’ identity commitments to the approver set of a template stage',
      description: `Each approver makes an identity (\`npm run approve -- identity\`) and hands over only its commitment, Poseidon(secret). The set (one per owner, template and stage; depth 10, up to 1024 identities) gets a new root, logged on the transparency log (entry kind approver_set) with its time, in the same transaction. An admin action: the license key or an admin-scope organization key. Every workflow of that template the owner prepares from then on fixes the set's root at prepare (logged, entry kind workflow_approvers) and takes approvals at that stage only as membership proofs against it (POST /api/proof-workflows/approvals): members added later never count for a workflow already prepared, and a bare approve event there is 409 ${APPROVAL_PROOF_REQUIRED}.`,
      tags,
      auth: 'operator-or-license',
      product: 'workflows',
      scope: 'admin',
      body: z.strictObject({
        template: z.string().min(1).max(100),
        stage: z.string().min(1).max(64),
        identityCommitments: z.array(identitySchema).min(1).max(1024),
        credential: approverCredentialInputSchema
          .optional()
          .describe(
            'What each approver must hold from then on, proven inside each approval: a schema the service knows (staff-role, credit-report) and up to two terms with public parameters, e.g. [{"field":"role","op":"eq","value":"underwriter"}]. Issuers are those the organization accepts for the schema. Changing it makes a new root.',
          ),
      }),
      responses: {
        201: {
          description: 'The set’s new root (or its root, when nothing was new)',
          schema: registeredSchema,
        },
      },
      problems: {
        422: [
          'unknown_template',
          'unknown_stage',
          'not_an_approval_stage',
          'duplicate_identity',
          'invalid_identity',
          'approver_set_full',
          'unknown_schema',
        ],
      },
      handler: async ({ body, auth, deps }) => ({
        status: 201,
        body: await registerApprovers(deps.db, { ...body, owner: ownerOf(auth) }),
      }),
    })
    .add({
      method: 'get',
      path: '/api/proof-workflows/approver-sets/{setId}',
      operationId: 'getWorkflowApproverSet',
      summary: 'An approver set’s public tree: its identity commitments and accepted roots',
      tags,
      params: z.strictObject({ setId: setIdSchema }),
      responses: { 200: { description: 'The set’s tree', schema: treeSchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps }) => ({
        status: 200,
        body: await approverSetTree(deps.db, params.setId),
      }),
    })
    .add({
      method: 'get',
      path: '/api/proof-workflows/approvals/target',
      operationId: 'getWorkflowApprovalTarget',
      summary: 'What an approver proves against: the stage’s scope, the content it approves now, its set',
      description:
        'All public: the whole member list (an approver never asks for its own path, which would say who is about to approve).',
      tags,
      query: z.strictObject({
        proofId: z.string().regex(idPattern('prf'), 'a proof id (prf_…)'),
        stage: z.string().min(1).max(64),
      }),
      responses: { 200: { description: 'The approval target', schema: targetSchema } },
      problems: {
        404: ['not_found'],
        409: ['approver_set_missing'],
        422: ['unknown_stage', 'not_an_approval_stage'],
      },
      handler: async ({ query, deps }) => ({
        status: 200,
        headers: { 'Cache-Control': 'no-store' },
        body: await approvalTarget(deps.db, query.proofId, query.stage),
      }),
    })
    .add({
      method: 'post',
      path: '/api/proof-workflows/approvals',
      operationId: 'recordWorkflowApproval',
      summary: 'Approve a stage anonymously with a membership proof of its approver set',
      description: `No credential: the proof is the authority, and it names nobody. publicSignals are [root, nullifier, scope, message] as \`npm run approve -- prove\` makes them; where the stage's set requires a credential, the approval circuit's fifteen (the same four, then issuerAx, issuerAy, schemaId, now, revocationRoot, fields[2], ops[2], parameterCommitments[2]), and the issuer must be one the organization accepts for the schema, its revocation root logged and recent (${credentialGateCodes.join(', ')}). Recorded as an approve entry whose actor commitment is the nullifier (64 hex). Refusals write nothing: 400 invalid_proof_format, 404, 422 unknown_stage, 409 ${approvalCodes.join(', ')}, or an engine rule (${ruleCodes.filter((c) => c !== 'unknown_stage').join(', ')}).`,
      tags,
      body: approvalBodySchema.meta({ id: 'WorkflowApprovalRequest' }),
      responses: { 200: { description: 'The stage record after the approval', schema: recordedSchema } },
      problems: {
        400: ['invalid_proof_format'],
        404: ['not_found'],
        409: [...approvalCodes, ...credentialGateCodes, ...ruleCodes.filter((c) => c !== 'unknown_stage')],
        422: ['unknown_stage', 'not_an_approval_stage'],
      },
      handler: async ({ body, deps }) => ({
        status: 200,
        body: await recordApproval(deps.db, deps.queues, body),
      }),
    });
}
