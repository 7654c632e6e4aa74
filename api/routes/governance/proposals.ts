// The site table, proposals (Proposal → Review → Vote → Execution → Proof): creation, the public and the
// administrator's state, committee review, anonymous ballots, close, execution and the package.
import { z } from 'zod';
import { walletPublicKeySchema, walletSignatureSchema } from '../../../shared/platform/wallet';
import { BALLOT_CIPHERTEXT_BYTES } from '../../../shared/governance/ballot-protocol';
import { THRESHOLD_BALLOT_BYTES } from '../../../shared/governance/threshold';
import { governancePackageSchema } from '../../../shared/governance/package';
import { receiptSchema } from '../../../shared/governance/receipts';
import {
  adminProposal,
  closeProposalNow,
  createProposal,
  proposalPackage,
  publicProposal,
  recordExecution,
  reviewProposal,
} from '../../../shared/governance/proposals';
import { ballotKeyInfo, castBallot } from '../../../shared/governance/ballots';
import { ownerOf } from '../../http/callers';
import { sealedAction } from '../../http/request-log';
import { packageRoutes } from '../../http/package-routes';
import type { RouteTable } from '../../http/route';
import { fieldSchema, hex64, proposalIdSchema, roomIdSchema, slugSchema } from '../../views/governance';

const tags = ['Governance'];
const g1Schema = z.array(fieldSchema).length(3);
const ballotProofSchema = z
  .object({
    pi_a: g1Schema,
    pi_b: z.array(z.array(fieldSchema).length(2)).length(3),
    pi_c: g1Schema,
    protocol: z.literal('groth16').optional(),
    curve: z.literal('bn128').optional(),
  })
  .strict();

const publicProposalSchema = z
  .union([
    z
      .object({
        proposalId: z.string(),
        status: z.literal('review'),
        title: z.string(),
        options: z.array(z.string()),
        reviewThreshold: z.number().int().describe('Committee approvals that open the vote'),
        votingSeconds: z.number().int().nullable().describe('How long the vote runs once open'),
        votingEndsAt: z.string().nullable().describe('Or the fixed end of the vote'),
      })
      .strict(),
    z
      .object({
        proposalId: z.string(),
        status: z.literal('rejected'),
        title: z.string(),
        options: z.array(z.string()),
      })
      .strict(),
    z
      .object({
        proposalId: z.string(),
        status: z.literal('voting'),
        title: z.string(),
        options: z.array(z.string()),
        votingEndsAt: z.string(),
        timeRemainingSeconds: z.number().int(),
      })
      .strict(),
    z
      .object({
        proposalId: z.string(),
        status: z.literal('decrypting'),
        title: z.string(),
        options: z.array(z.string()),
        votingEndsAt: z.string(),
        ballotCount: z.number().int(),
        trusteesDecrypted: z
          .number()
          .int()
          .describe('Trustees whose partial decryptions are in; the ballots open at trusteesNeeded'),
        trusteesNeeded: z.number().int(),
      })
      .strict(),
    z.object({
      proposalId: z.string(),
      status: z.enum(['closed', 'executed']),
      title: z.string(),
      options: z.array(z.string()),
      votingEndsAt: z.string(),
      outcome: z.string(),
      winner: z.string().nullable(),
      tally: z.record(z.string(), z.number().int()),
      ballotCount: z.number().int().describe('Every ballot cast, counted and spoiled'),
      countedCount: z.number().int(),
      spoiledCount: z
        .number()
        .int()
        .describe('Ballots whose vote opens to none of the options: published, counted toward nothing'),
      tallyProofId: z.string(),
      finalProofId: z.string().nullable(),
      executed: z.boolean(),
    }),
  ])
  .meta({
    id: 'PublicProposal',
    description:
      'The question and its options from the start; while the vote is open, status and time remaining — no count, ratio, address or momentum.',
  });

export function proposalRoutes(table: RouteTable): RouteTable {
  table
    .add({
      method: 'post',
      path: '/api/governance/proposals',
      operationId: 'createGovernanceProposal',
      summary: 'Create a proposal (Proposal → Review → Vote → Execution → Proof)',
      description:
        'The vote opens when the review committee’s threshold of signed approvals is reached. Give `votingEndsAt` (absolute) or `votingSeconds` (from the opening).',
      tags,
      auth: 'operator-or-license',
      product: 'governance',
      quota: true,
      body: z.strictObject({
        roomId: roomIdSchema,
        title: z.string().min(1).max(300),
        descriptionHash: hex64.optional(),
        options: z.array(z.string().min(1).max(200)).min(2).max(20),
        reviewCommittee: slugSchema,
        quorum: z.number().int().min(0).max(1_000_000).optional(),
        votingEndsAt: z.iso.datetime().optional(),
        votingSeconds: z
          .number()
          .int()
          .min(1)
          .max(366 * 24 * 3600)
          .optional(),
      }),
      responses: {
        201: {
          description: 'The proposal, in review',
          schema: z.object({
            proposalId: z.string(),
            status: z.literal('review'),
            reviewCommittee: z.string(),
            reviewThreshold: z.number().int(),
          }),
        },
      },
      problems: { 404: ['not_found'], 422: ['duplicate_option', 'unknown_committee', 'voting_window'] },
      handler: async ({ body, auth, deps }) => ({
        status: 201,
        body: await createProposal(
          deps.db,
          { ...body, votingEndsAt: body.votingEndsAt ? new Date(body.votingEndsAt) : undefined },
          ownerOf(auth),
          deps.clock,
        ),
      }),
    })
    .add({
      method: 'get',
      path: '/api/governance/proposals/{proposalId}',
      operationId: 'getGovernanceProposal',
      summary: 'A proposal’s public state: its question and options; while voting, no counts',
      description:
        'A vote past its window is closed on this read (ballots opened, tally published with its package).',
      tags,
      params: z.strictObject({ proposalId: proposalIdSchema }),
      responses: { 200: { description: 'The public state', schema: publicProposalSchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps }) => ({
        status: 200,
        body: await publicProposal(deps.db, params.proposalId, deps.clock),
      }),
    })
    .add({
      method: 'get',
      path: '/api/governance/proposals/{proposalId}/admin',
      operationId: 'getGovernanceProposalAdmin',
      summary: 'The proposal for its administrator (no live counts either)',
      tags,
      auth: 'operator-or-license',
      product: 'governance',
      params: z.strictObject({ proposalId: proposalIdSchema }),
      responses: { 200: { description: 'The state', schema: publicProposalSchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, auth, deps }) => ({
        status: 200,
        body: await adminProposal(deps.db, params.proposalId, ownerOf(auth), deps.clock),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/proposals/{proposalId}/review',
      operationId: 'reviewGovernanceProposal',
      summary: 'A review committee member approves or rejects, signing with their wallet',
      description:
        'Sign `proof-exchange/governance/review/v1\\nproposal:<id>\\ndecision:<approve|reject>` (ed25519, base58).',
      tags,
      params: z.strictObject({ proposalId: proposalIdSchema }),
      body: z.strictObject({
        walletPublicKey: walletPublicKeySchema,
        decision: z.enum(['approve', 'reject']),
        signature: walletSignatureSchema,
      }),
      responses: {
        200: {
          description: 'The proposal’s status after the review',
          schema: z.object({ proposalId: z.string(), status: z.string(), memberCommitment: hex64 }),
        },
      },
      problems: {
        403: ['not_a_reviewer', 'signature_invalid'],
        404: ['not_found'],
        409: ['already_reviewed', 'not_in_review'],
        422: ['unknown_committee'],
      },
      handler: async ({ params, body, deps }) => ({
        status: 200,
        body: await reviewProposal(deps.db, params.proposalId, body, deps.clock),
      }),
    })
    .add({
      method: 'get',
      path: '/api/governance/proposals/{proposalId}/ballot-key',
      operationId: 'getGovernanceBallotKey',
      summary: 'What a voter encrypts to and proves for: the proposal’s ballot key, scope and room',
      tags,
      params: z.strictObject({ proposalId: proposalIdSchema }),
      responses: {
        200: {
          description: 'The same for every voter at every moment: it says nothing of the vote',
          schema: z.object({
            proposalId: z.string(),
            roomId: z.string(),
            scope: z.string(),
            scheme: z
              .enum(['service', 'threshold'])
              .describe(
                '`threshold`: encrypted to the room’s trustees’ joint key, opened by any `threshold` of them after the close, never by the service; `service`: the service’s own per-proposal key, opened at the close',
              ),
            trustees: z
              .object({ threshold: z.number().int(), names: z.array(z.string()), ceremony: z.string() })
              .optional(),
            publicKey: z.string().describe('X25519 (service) or ristretto255 (threshold), base64url'),
            options: z
              .array(z.string())
              .describe('The choices a ballot may carry; any other vote is spoiled at the close'),
            circuit: z.string(),
            depth: z.number().int(),
          }),
        },
      },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps }) => ({
        status: 200,
        body: await ballotKeyInfo(deps.db, params.proposalId),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/proposals/{proposalId}/ballots',
      operationId: 'castGovernanceBallot',
      summary: 'Cast an anonymous ballot; returns a signed receipt',
      description:
        'Made on the voter’s side (`npm run ballot -- vote`): the vote encrypted to the proposal’s ballot key (X25519, HKDF-SHA256, AES-256-GCM, padded to a fixed length) and a Groth16 proof (circuit `ballot`) that the sender holds an identity of the room’s member tree at `root`, with `nullifier` = Poseidon(identity secret, scope) and the ciphertext’s hash as public signals. One ballot per identity and proposal, final. Nothing that names the voter is sent or stored.',
      tags,
      params: z.strictObject({ proposalId: proposalIdSchema }),
      body: z.strictObject({
        nullifier: fieldSchema,
        root: fieldSchema,
        ciphertext: z
          .string()
          .regex(/^[A-Za-z0-9_-]+$/, 'base64url')
          .refine(
            (c) =>
              [BALLOT_CIPHERTEXT_BYTES, THRESHOLD_BALLOT_BYTES].some(
                (bytes) => c.length === Math.ceil((bytes * 4) / 3),
              ),
            'a ballot ciphertext of the proposal’s scheme',
          ),
        proof: ballotProofSchema,
      }),
      responses: { 201: { description: 'The ballot receipt', schema: receiptSchema } },
      problems: {
        404: ['not_found'],
        409: ['already_voted', 'voting_not_open'],
        422: ['invalid_ciphertext', 'proof_invalid', 'unknown_root'],
        503: ['signing_key_retired'],
      },
      handler: async ({ params, body, res, deps }) => {
        sealedAction(res);
        return { status: 201, body: await castBallot(deps.db, params.proposalId, body, deps.clock) };
      },
    })
    .add({
      method: 'post',
      path: '/api/governance/proposals/{proposalId}/close',
      operationId: 'closeGovernanceProposal',
      summary: 'Close a vote whose window has passed: open, tally, publish the package',
      tags,
      auth: 'operator-or-license',
      product: 'governance',
      params: z.strictObject({ proposalId: proposalIdSchema }),
      responses: { 200: { description: 'The public state after the close', schema: publicProposalSchema } },
      problems: {
        404: ['not_found'],
        409: ['not_in_vote', 'voting_open'],
        503: ['signing_key_retired'],
      },
      handler: async ({ params, auth, deps }) => ({
        status: 200,
        body: await closeProposalNow(deps.db, params.proposalId, ownerOf(auth), deps.clock),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/proposals/{proposalId}/execution',
      operationId: 'recordGovernanceExecution',
      summary:
        'Record the execution of a passed proposal (a hash of what was done); publishes the final package',
      tags,
      auth: 'operator-or-license',
      product: 'governance',
      params: z.strictObject({ proposalId: proposalIdSchema }),
      body: z.strictObject({ evidenceHash: hex64 }),
      responses: { 200: { description: 'The public state', schema: publicProposalSchema } },
      problems: {
        404: ['not_found'],
        409: ['not_closed', 'nothing_to_execute'],
        503: ['signing_key_retired'],
      },
      handler: async ({ params, body, auth, deps }) => ({
        status: 200,
        body: await recordExecution(deps.db, params.proposalId, body.evidenceHash, ownerOf(auth), deps.clock),
      }),
    });
  return packageRoutes(table, {
    path: '/api/governance/proposals/{proposalId}',
    name: 'Governance',
    of: 'The proposal’s',
    packageSummary:
      'The proposal’s proof package (after the close): every ballot, the tally, the chain, the log proof',
    tags,
    params: z.strictObject({ proposalId: proposalIdSchema }),
    query: z.strictObject({ phase: z.enum(['tallied', 'executed']).optional() }),
    schema: governancePackageSchema,
    bundleCache: 'no-cache',
    load: ({ params, query, deps }) => proposalPackage(deps.db, params.proposalId, query.phase, deps.clock),
  });
}
