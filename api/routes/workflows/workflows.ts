// The site table, proof workflows: templates and public state, prepare, events, verify.
import { z } from 'zod';
import { notFound } from '../../../shared/platform/errors';
import { signedTreeHeadSchema } from '../../../shared/platform/translog/tree-head';
import { idPattern } from '../../../shared/platform/ids';
import { APPROVAL_PROOF_REQUIRED } from '../../../shared/workflows/approvers';
import { ruleCodes } from '../../../shared/workflows/engine';
import { policyGateCodes } from '../../../shared/workflows/policy-gate';
import { stageRecordSchema, stageStatuses, workflowEventSchema } from '../../../shared/workflows/records';
import { servicePublicKey } from '../../../shared/proofs/seal';
import { prepareWorkflow } from '../../../shared/workflows/prepare';
import { publicState, templateSummaries, workflowTotals } from '../../../shared/workflows/public';
import { recordEvent } from '../../../shared/workflows/events';
import { verifyGivenPackage, verifyStored } from '../../../shared/workflows/verify';
import { templateNames } from '../../../shared/workflows/templates';
import { circuitSetup } from '../../../shared/zk/setup';
import type { Principal } from '../../http/auth';
import type { RouteTable } from '../../http/route';
import { circuitSetupSchema } from '../../views/circuit-setup';

const tags = ['Proof workflows'];
const proofIdSchema = z.string().regex(idPattern('prf'), 'a proof id (prf_…)');
const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

const publicStageSchema = z.object({
  key: z.string(),
  name: z.string(),
  status: z.enum(stageStatuses),
  timestamp: z.string().nullable(),
  proofHash: hex64.nullable(),
  actorCommitment: hex64.nullable(),
  actorCommitments: z.array(hex64),
  approvals: z.number().int(),
});

const chainSchema = z.object({ genesis: hex64, head: hex64, length: z.number().int() });

const publicStateSchema = z
  .object({
    proofId: z.string(),
    template: z.enum(templateNames),
    templateVersion: z.number().int(),
    status: z.enum(['active', 'completed', 'rejected']),
    stages: z.array(publicStageSchema),
    chain: chainSchema,
    package: z
      .object({ status: z.enum(['pending', 'logged', 'failed']), leafIndex: z.number().int().nullable() })
      .nullable(),
  })
  .meta({ id: 'WorkflowPublicState' });

const templateSummarySchema = z.object({
  key: z.string(),
  name: z.enum(templateNames),
  version: z.number().int(),
  description: z.string(),
  stages: z.array(
    z.object({
      key: z.string(),
      name: z.string(),
      phase: z.string(),
      requiredApprovals: z.number().int(),
      actions: z.array(z.string()),
      evidenceRequired: z.boolean(),
      requiresBlindPolicyProof: z.boolean(),
      policy: z.string().nullable().describe('The policy a stage’s blind policy proof must be of'),
    }),
  ),
});

const totalsSchema = z
  .object({
    active: z.number().int(),
    completed: z.number().int(),
    rejected: z.number().int(),
    total: z.number().int(),
  })
  .describe(
    'Workflows in each state across every template and organization: no figure per template or tenant',
  );

const reasonSchema = z.object({
  check: z.string(),
  code: z.string(),
  detail: z.string(),
  stage: z.string().optional(),
});

const verificationSchema = z
  .object({
    proofId: z.string().nullable(),
    existed: z.boolean(),
    completed: z.boolean(),
    approvalsMet: z.boolean(),
    sequenceRespected: z.boolean(),
    notAltered: z.boolean(),
    signatureValid: z.boolean().optional(),
    inclusionValid: z.boolean().optional(),
    altered: z
      .object({ stage: z.string(), seq: z.number().int().optional(), code: z.string(), detail: z.string() })
      .optional(),
    reasons: z.array(reasonSchema),
    template: z.string().optional(),
    status: z.string().optional(),
    chain: chainSchema.optional(),
    stages: z.array(publicStageSchema).optional(),
    package: z.record(z.string(), z.unknown()).optional(),
    packageStatus: z.string().optional(),
    latestTreeHead: signedTreeHeadSchema.optional(),
    signingKey: z.object({ keyId: z.string(), publicKey: z.string() }),
    approvals: z
      .enum(['proven', 'asserted', 'none'])
      .optional()
      .describe(
        'proven: every approval that counts is a valid membership proof of its stage’s approver set (and each closed stage met its count with proofs alone); asserted: some rest on bare actor commitments, which anyone holding the owner’s key could invent; none: no approvals',
      ),
    approvalStages: z
      .array(
        z.object({
          stage: z.string(),
          required: z.number().int(),
          counted: z.number().int(),
          proven: z.number().int(),
        }),
      )
      .optional(),
    approvalReasons: z
      .array(z.object({ code: z.string(), detail: z.string(), stage: z.string() }))
      .optional(),
    credentials: z
      .array(
        z.object({
          stage: z.string(),
          proven: z.boolean(),
          what: z.string().describe('The credential in words: "a credit report"'),
          issuer: z.object({ name: z.string(), keyId: z.string(), acceptedSince: z.string() }),
          at: z.string().describe('The proof’s time: valid and unrevoked then'),
          revocationPublishedAt: z.string(),
          terms: z.array(z.string()).describe('The query in words; the parameters stay hidden'),
          subject: z.string().describe('The applicant’s subject commitment the credential is about'),
          reasons: z.array(z.string()),
        }),
      )
      .optional()
      .describe(
        'The credential query proofs of the package, each checked as `npm run verify` checks it (docs/credentials.md)',
      ),
    insecureSetup: z
      .boolean()
      .describe(
        'The blind policy proofs this service accepts are checked with keys from the insecure development setup (forgeable)',
      ),
  })
  .meta({ id: 'WorkflowVerification' });

const preparedSchema = z
  .object({
    workflowId: z.string(),
    proofId: z.string(),
    template: z.enum(templateNames),
    templateVersion: z.number().int(),
    status: z.literal('active'),
    stages: z.array(z.record(z.string(), z.unknown())),
    policyGates: z.array(
      z.object({
        index: z.number().int(),
        stage: z.string(),
        policy: z.string(),
        commitments: z.record(z.string(), z.string()),
        context: z.string(),
        salts: z
          .record(z.string(), z.string())
          .optional()
          .describe('Only for parameters the service committed: returned once, stored nowhere'),
        plain: z
          .record(z.string(), z.record(z.string(), z.unknown()))
          .optional()
          .describe(
            'A credential stage whose parameters the organization published: each, by field, as the page and the package show it (committed with salt 0)',
          ),
      }),
    ),
    approvers: z
      .object({
        fixedAt: z.string(),
        leafIndex: z.number().int(),
        sets: z.array(
          z.object({
            stage: z.string(),
            setId: z.string(),
            rootSeq: z.number().int(),
            root: z.string(),
            size: z.number().int(),
            rootStatement: z.string(),
          }),
        ),
      })
      .optional()
      .describe(
        'The approver sets fixed now, per approval stage the owner registered one for: the only roots this workflow takes approvals against, logged (kind workflow_approvers) before its first event. Absent where no stage has a set.',
      ),
  })
  .meta({ id: 'PreparedWorkflow' });

const eventBody = z
  .strictObject({
    workflowId: z.string().regex(idPattern('wf'), 'a workflow id (wf_…)'),
    stage: workflowEventSchema.shape.stage,
    action: workflowEventSchema.shape.action,
    actorCommitment: workflowEventSchema.shape.actorCommitment,
    evidenceHash: workflowEventSchema.shape.evidenceHash,
    policyProof: workflowEventSchema.shape.policyProof.describe(
      'A blind policy proof for a stage that needs one: { policy, proof, publicSignals } as the prove route returns them, made for this stage (see policyGates at prepare)',
    ),
  })
  .meta({
    id: 'WorkflowEventRequest',
    description: 'Only hashes, commitments and public proofs: never documents, notes or identities.',
  });

const recordedSchema = z
  .object({
    workflowId: z.string(),
    proofId: z.string(),
    workflowStatus: z.enum(['active', 'completed', 'rejected']),
    stage: stageRecordSchema.describe(
      'The event’s stage record after the event; its auditTrail holds the entries this event added (the whole trail is in the proof package)',
    ),
    entry: z.record(z.string(), z.unknown()),
    chainHead: hex64,
    currentStage: z.string().nullable(),
    policyProof: z
      .object({
        policy: z.string(),
        context: z.string(),
        verified: z.literal(true),
        insecureSetup: z.boolean(),
      })
      .optional(),
  })
  .meta({ id: 'RecordedWorkflowEvent' });

const verifyBody = z
  .union([
    z.strictObject({ proofId: proofIdSchema }),
    z.strictObject({ package: z.record(z.string(), z.unknown()) }),
  ])
  .meta({ id: 'WorkflowVerifyRequest', description: 'A proof id, or a proof package as published.' });

const ownerOf = (auth: Principal): { owner: string; operator: boolean } =>
  auth.kind === 'license'
    ? { owner: auth.licenseId, operator: false }
    : { owner: 'operator', operator: true };

const signingKey = () => {
  const k = servicePublicKey();
  return { keyId: k.keyId, publicKey: k.publicKey };
};

export function proofWorkflowRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'get',
      path: '/api/proof-workflows/status',
      operationId: 'proofWorkflowStatus',
      summary:
        'The six workflow templates with their stages and global totals, or one workflow’s public state',
      tags,
      query: z.strictObject({ proofId: proofIdSchema.optional() }),
      responses: {
        200: {
          description: 'Templates and global totals, or (with proofId) the workflow’s public state',
          schema: z.union([
            z.object({
              templates: z.array(templateSummarySchema),
              totals: totalsSchema,
              signingKey: z.object({ keyId: z.string(), publicKey: z.string() }),
              circuitSetup: circuitSetupSchema,
            }),
            z.object({ workflow: publicStateSchema }),
          ]),
        },
      },
      problems: { 404: ['not_found'] },
      handler: async ({ query, deps }) => {
        if (query.proofId) {
          const state = await publicState(deps.db, query.proofId);
          if (!state) throw notFound(`Proof ${query.proofId}`);
          return { status: 200, body: { workflow: state } };
        }
        return {
          status: 200,
          body: {
            templates: templateSummaries(),
            totals: await workflowTotals(deps.db),
            signingKey: signingKey(),
            circuitSetup: circuitSetup(),
          },
        };
      },
    })
    .add({
      method: 'post',
      path: '/api/proof-workflows/prepare',
      operationId: 'prepareProofWorkflow',
      summary: 'Start a workflow from a template',
      description:
        'Returns the private `workflowId` (needed to post events; keep it) and the public `proofId`. A template with stages that need a blind policy proof (Underwriting’s risk_assessment: threshold) needs `policyParameters` for each: the commitments (`{ thresholdCommitment }`), or the plain parameters (`{ threshold, thresholdSalt? }`) for the service to commit — it keeps only the commitments and returns the salts once. `policyGates` gives, per such stage, the policy, the commitments and the context a proof for it must carry. A stage prepared for a credential takes `{ credential: { subject, parameters, plain? } }`: `plain: true`, where the template allows it (Underwriting’s risk_assessment does), publishes the parameters on the verify page and in the package (“score ≥ 700”) instead of committing them behind salts; they take no salt. Missing parameters are 422 policy_parameters_required.',
      tags,
      auth: 'operator-or-license',
      product: 'workflows',
      quota: true,
      body: z.strictObject({
        template: z.string().min(1).max(100).describe('One of the six template names'),
        policyParameters: z
          .record(z.string(), z.unknown())
          .optional()
          .describe(
            'Per policy stage key: its parameter commitments, or its plain parameters (never stored)',
          ),
      }),
      responses: {
        201: { description: 'The workflow with its stages, all pending', schema: preparedSchema },
      },
      problems: { 422: ['unknown_template', 'policy_parameters_required'] },
      handler: async ({ body, auth, deps }) => {
        const prepared = await prepareWorkflow(deps.db, {
          template: body.template,
          owner: ownerOf(auth).owner,
          policyParameters: body.policyParameters,
        });
        return { status: 201, headers: { 'Cache-Control': 'no-store' }, body: prepared };
      },
    })
    .add({
      method: 'post',
      path: '/api/proof-workflows/event',
      operationId: 'recordProofWorkflowEvent',
      summary: 'Record a stage event (hashes and commitments only)',
      description: `Enforces the stage sequence and approvals; a broken rule is a 409 whose code names it (${ruleCodes
        .filter((c) => c !== 'unknown_stage')
        .join(
          ', ',
        )}). An unknown stage is 422 unknown_stage. A \`policyProof\` counts as the stage's blind policy proof only when it is of the stage's policy, commits to the parameters fixed at prepare, carries this stage's context, verifies, and was never used before; otherwise 409 (${policyGateCodes.join(', ')}) or 400 invalid_proof_format, and nothing is recorded. An \`approve\` at a stage whose owner registered an approver set is 409 ${APPROVAL_PROOF_REQUIRED}: approvals there are membership proofs (POST /api/proof-workflows/approvals).`,
      tags,
      auth: 'operator-or-license',
      product: 'workflows',
      body: eventBody,
      responses: {
        200: { description: 'The stage record after the event and the chain head', schema: recordedSchema },
      },
      problems: {
        400: ['invalid_proof_format'],
        404: ['not_found'],
        // The engine's rules (unknown_stage is the 422) and the blind-policy gate's refusals.
        409: [...ruleCodes.filter((c) => c !== 'unknown_stage'), ...policyGateCodes, APPROVAL_PROOF_REQUIRED],
        422: ['unknown_stage'],
      },
      handler: async ({ body, auth, deps }) => {
        const recorded = await recordEvent(deps.db, deps.queues, body, ownerOf(auth));
        return { status: 200, body: recorded };
      },
    })
    .add({
      method: 'post',
      path: '/api/proof-workflows/verify',
      operationId: 'verifyProofWorkflow',
      bodyLimit: 'large',
      summary: 'Verify a workflow by proof id, or a proof package',
      description:
        'Confirms exactly: existed, completed, required approvals met, sequence respected, not altered — with a reason for each false.',
      tags,
      body: verifyBody,
      responses: { 200: { description: 'The public verdict', schema: verificationSchema } },
      handler: async ({ body, deps }) => {
        const verdict =
          'proofId' in body
            ? await verifyStored(deps.db, body.proofId)
            : await verifyGivenPackage(deps.db, body.package);
        return {
          status: 200,
          body: { ...verdict, signingKey: signingKey(), insecureSetup: circuitSetup().insecure },
        };
      },
    });
}
