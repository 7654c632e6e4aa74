// Table C, private governance: rooms, committees, identity trees, proposals (review, anonymous ballots,
// close, execution), public state (status and time remaining while the vote is open), packages and
// their verification.
import { cachedStatus } from '../../shared/commercial/providers';
import { z } from 'zod';
import { walletPublicKeySchema, walletSignatureSchema } from '../../shared/exchange/wallet';
import { idPattern } from '../../shared/ids';
import { servicePublicKey } from '../../shared/workflows/seal';
import { loadVerificationKey } from '../../shared/zk/verify';
import {
  BALLOT_CIPHERTEXT_BYTES,
  BALLOT_CIRCUIT,
  DECIMAL_FIELD,
} from '../../shared/governance/ballot-protocol';
import { addIdentities, registerIdentity, roomTree } from '../../shared/governance/identities';
import {
  checkReceiptAgainstPackage,
  governancePackageSchema,
  receiptSchema,
  verifyGovernancePackage,
} from '../../shared/governance/package';
import {
  adminProposal,
  ballotKeyInfo,
  castBallot,
  closeProposalNow,
  createProposal,
  proposalPackage,
  publicProposal,
  recordExecution,
  reviewProposal,
} from '../../shared/governance/proposals';
import {
  addMembers,
  createCommittee,
  createRoom,
  membershipChallenge,
  proveMembership,
  roomOrThrow,
  roomView,
} from '../../shared/governance/rooms';
import {
  coordinationProviders,
  intelligenceProviders,
  privatePayoutStatus,
} from '../../shared/governance/providers';
import type { Response } from 'express';
import type { Principal } from '../http/auth';
import type { RouteTable } from '../http/route';

const tags = ['Governance'];
export const hex64 = z.string().regex(/^[0-9a-f]{64}$/, '64 lowercase hex characters (a sha256)');
export const roomIdSchema = z.string().regex(idPattern('room'), 'a room id (room_…)');
const proposalIdSchema = z.string().regex(idPattern('prop'), 'a proposal id (prop_…)');
const slugSchema = z.string().regex(/^[a-z0-9][a-z0-9-]{0,39}$/, 'lowercase letters, digits and dashes');
const membersSchema = z.array(walletPublicKeySchema).max(1000);
const fieldSchema = z.string().regex(DECIMAL_FIELD, 'a BN254 field element, decimal');
const identitySchema = fieldSchema.describe('An identity commitment: Poseidon(identity secret), decimal');
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
const treeSchema = z
  .object({
    roomId: z.string(),
    depth: z.number().int(),
    identityCommitments: z.array(z.string()),
    root: z.string(),
    acceptedRoots: z.array(z.string()),
    levels: z.array(z.array(z.string())).optional(),
    zeros: z.array(z.string()).optional(),
  })
  .meta({ id: 'RoomIdentityTree' });

/** The keys an offline verifier needs, as the service holds them. */
const verifierKeys = async () => ({
  ...signingKey(),
  ballotVerificationKey: await loadVerificationKey(BALLOT_CIRCUIT),
});

/** Who administers: the operator, or the license that created the room. */
export const ownerOf = (auth: Principal): string => (auth.kind === 'license' ? auth.licenseId : 'operator');

/**
 * Marks a ballot, bid or reveal: the app neither meters it nor logs its success, since per-request counts
 * during a live vote or auction would be a running tally (see api/app.ts).
 */
export const sealedAction = (res: Response): void => {
  res.locals.sealed = true;
};

export const signingKey = () => {
  const k = servicePublicKey();
  return { keyId: k.keyId, publicKey: k.publicKey };
};

const roomSchema = z
  .object({
    roomId: z.string(),
    name: z.string(),
    memberCount: z.number().int(),
    committees: z.array(
      z.object({ slug: z.string(), name: z.string(), threshold: z.number().int(), size: z.number().int() }),
    ),
    createdAt: z.string(),
  })
  .meta({ id: 'Room' });

export const publicProposalSchema = z
  .union([
    z.object({ proposalId: z.string(), status: z.enum(['review', 'rejected']) }).strict(),
    z
      .object({
        proposalId: z.string(),
        status: z.literal('voting'),
        votingEndsAt: z.string(),
        timeRemainingSeconds: z.number().int(),
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
      ballotCount: z.number().int(),
      tallyProofId: z.string(),
      finalProofId: z.string().nullable(),
      executed: z.boolean(),
    }),
  ])
  .meta({
    id: 'PublicProposal',
    description:
      'While the vote is open: status and time remaining only — no title, count, ratio, address or momentum.',
  });

const verdictSchema = z
  .object({
    valid: z.boolean(),
    signatureValid: z.boolean(),
    inclusionValid: z.boolean().optional(),
    chainValid: z.boolean(),
    ballotsValid: z.boolean(),
    tallyValid: z.boolean(),
    reviewMet: z.boolean(),
    recomputedTally: z.record(z.string(), z.unknown()).optional(),
    reasons: z.array(z.object({ check: z.string(), code: z.string(), detail: z.string() })),
    receipt: z
      .object({
        receiptValid: z.boolean(),
        packageValid: z.boolean(),
        included: z.boolean(),
        ballotMatches: z.boolean().optional(),
        inclusion: z
          .object({ index: z.number().int(), path: z.array(z.string()), valid: z.boolean() })
          .optional(),
      })
      .optional(),
    signingKey: z.object({ keyId: z.string(), publicKey: z.string() }),
  })
  .meta({ id: 'GovernanceVerification' });

export function governanceRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'post',
      path: '/api/governance/rooms',
      operationId: 'createGovernanceRoom',
      summary: 'Create a room; members are stored only as salted commitments of their wallet keys',
      tags,
      auth: 'operator-or-license',
      product: 'governance',
      body: z.strictObject({ name: z.string().min(1).max(200), members: membersSchema.default([]) }),
      responses: {
        201: {
          description: 'The room and each member’s commitment (in the order given)',
          schema: z.object({ roomId: z.string(), name: z.string(), memberCommitments: z.array(hex64) }),
        },
      },
      problems: { 422: ['duplicate_member'] },
      handler: async ({ body, auth, deps }) => {
        const { room, memberCommitments } = await createRoom(deps.db, body, ownerOf(auth));
        return { status: 201, body: { roomId: room.id, name: room.name, memberCommitments } };
      },
    })
    .add({
      method: 'get',
      path: '/api/governance/rooms/{roomId}',
      operationId: 'getGovernanceRoom',
      summary: 'A room: member count and committees',
      tags,
      auth: 'operator-or-license',
      product: 'governance',
      params: z.strictObject({ roomId: roomIdSchema }),
      responses: { 200: { description: 'The room', schema: roomSchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, auth, deps }) => ({
        status: 200,
        body: await roomView(deps.db, params.roomId, ownerOf(auth)),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/rooms/{roomId}/members',
      operationId: 'addGovernanceRoomMembers',
      summary: 'Add members (wallet keys, committed and discarded)',
      tags,
      auth: 'operator-or-license',
      product: 'governance',
      params: z.strictObject({ roomId: roomIdSchema }),
      body: z.strictObject({ members: membersSchema.min(1) }),
      responses: {
        200: {
          description: 'The commitments added (members already present are skipped)',
          schema: z.object({ added: z.array(hex64), memberCount: z.number().int() }),
        },
      },
      problems: { 404: ['not_found'], 422: ['duplicate_member'] },
      handler: async ({ params, body, auth, deps }) => ({
        status: 200,
        body: await addMembers(deps.db, params.roomId, body.members, ownerOf(auth)),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/rooms/{roomId}/committees',
      operationId: 'createGovernanceCommittee',
      summary: 'Create a committee of room members with an approval threshold (m of n)',
      tags,
      auth: 'operator-or-license',
      product: 'governance',
      params: z.strictObject({ roomId: roomIdSchema }),
      body: z.strictObject({
        slug: slugSchema,
        name: z.string().min(1).max(200),
        members: membersSchema.min(1),
        threshold: z.number().int().min(1).max(1000),
      }),
      responses: {
        201: {
          description: 'The committee',
          schema: z.object({
            roomId: z.string(),
            slug: z.string(),
            name: z.string(),
            threshold: z.number().int(),
            memberCommitments: z.array(hex64),
          }),
        },
      },
      problems: {
        404: ['not_found'],
        409: ['committee_exists'],
        422: ['duplicate_member', 'not_a_member', 'threshold_too_high'],
      },
      handler: async ({ params, body, auth, deps }) => {
        const { committee, memberCommitments } = await createCommittee(
          deps.db,
          params.roomId,
          body,
          ownerOf(auth),
        );
        return {
          status: 201,
          body: {
            roomId: committee.room_id,
            slug: committee.slug,
            name: committee.name,
            threshold: committee.threshold,
            memberCommitments,
          },
        };
      },
    })
    .add({
      method: 'post',
      path: '/api/governance/rooms/{roomId}/challenge',
      operationId: 'governanceMembershipChallenge',
      summary: 'A challenge a member signs with their wallet to prove membership',
      tags,
      params: z.strictObject({ roomId: roomIdSchema }),
      responses: {
        200: {
          description: 'Sign `proof-exchange/governance/membership/v1\\n<challenge>` with the wallet key',
          schema: z.object({ challenge: z.string(), expiresAt: z.string() }),
        },
      },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps }) => {
        await roomOrThrow(deps.db, params.roomId);
        return { status: 200, body: membershipChallenge(params.roomId) };
      },
    })
    .add({
      method: 'post',
      path: '/api/governance/rooms/{roomId}/membership',
      operationId: 'proveGovernanceMembership',
      summary: 'Prove membership with a signed challenge',
      description:
        'The signature is checked first: without the wallet key nobody learns whether a key is a member.',
      tags,
      params: z.strictObject({ roomId: roomIdSchema }),
      body: z.strictObject({
        walletPublicKey: walletPublicKeySchema,
        challenge: z.string().min(1).max(500),
        signature: walletSignatureSchema,
      }),
      responses: {
        200: {
          description: 'Whether the signing wallet is a member, and its commitment when it is',
          schema: z.object({ member: z.boolean(), memberCommitment: hex64.optional() }),
        },
      },
      problems: {
        403: ['signature_invalid'],
        404: ['not_found'],
        422: ['challenge_expired', 'challenge_invalid'],
      },
      handler: async ({ params, body, deps }) => ({
        status: 200,
        body: await proveMembership(deps.db, params.roomId, body),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/rooms/{roomId}/identities',
      operationId: 'addGovernanceRoomIdentities',
      summary: 'Add anonymous-voter identity commitments to the room’s member tree',
      description:
        'Each member makes an identity (`npm run ballot -- identity`) and hands over only its commitment, Poseidon(secret). The tree (depth 10, up to 1024 identities) gets a new root; ballots are accepted against the last 8 roots.',
      tags,
      auth: 'operator-or-license',
      params: z.strictObject({ roomId: roomIdSchema }),
      body: z.strictObject({ identityCommitments: z.array(identitySchema).min(1).max(1024) }),
      responses: {
        200: {
          description: 'The commitments added (those already present are skipped) and the new root',
          schema: z.object({
            added: z.array(z.string()),
            identityCount: z.number().int(),
            root: z.string().nullable(),
          }),
        },
      },
      problems: { 404: ['not_found'], 422: ['duplicate_identity', 'invalid_identity', 'room_full'] },
      handler: async ({ params, body, auth, deps }) => ({
        status: 200,
        body: await addIdentities(deps.db, params.roomId, body.identityCommitments, ownerOf(auth)),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/rooms/{roomId}/identities/register',
      operationId: 'registerGovernanceIdentity',
      summary: 'A wallet member registers their own identity commitment (once per wallet)',
      description:
        'Sign `proof-exchange/governance/identity/v1\\nroom:<roomId>\\nidentity:<commitment>` with the member wallet. The service records that the wallet registered and, apart, the identity: nothing joins the two.',
      tags,
      params: z.strictObject({ roomId: roomIdSchema }),
      body: z.strictObject({
        walletPublicKey: walletPublicKeySchema,
        identityCommitment: identitySchema,
        signature: walletSignatureSchema,
      }),
      responses: {
        201: {
          description: 'The tree’s new size and root',
          schema: z.object({ identityCount: z.number().int(), root: z.string() }),
        },
      },
      problems: {
        403: ['not_a_member', 'signature_invalid'],
        404: ['not_found'],
        409: ['identity_already_registered', 'identity_exists'],
        422: ['duplicate_identity', 'invalid_identity', 'room_full'],
      },
      handler: async ({ params, body, deps }) => ({
        status: 201,
        body: await registerIdentity(deps.db, params.roomId, body),
      }),
    })
    .add({
      method: 'get',
      path: '/api/governance/rooms/{roomId}/tree',
      operationId: 'getGovernanceRoomTree',
      summary: 'The room’s member tree: every identity commitment in order, and the accepted roots',
      description:
        'Public, and whole on purpose: a voter builds their own path from it, so the service never learns which member is about to vote.',
      tags,
      params: z.strictObject({ roomId: roomIdSchema }),
      query: z.strictObject({
        levels: z
          .enum(['true', 'false'])
          .optional()
          .describe('Also every node, level by level, and the empty-subtree hashes'),
      }),
      responses: { 200: { description: 'The tree', schema: treeSchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, query, deps }) => ({
        status: 200,
        body: await roomTree(deps.db, params.roomId, { levels: query.levels === 'true' }),
      }),
    })
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
        ),
      }),
    })
    .add({
      method: 'get',
      path: '/api/governance/proposals/{proposalId}',
      operationId: 'getGovernanceProposal',
      summary: 'A proposal’s public state: while voting, only status and time remaining',
      description:
        'A vote past its window is closed on this read (ballots opened, tally published with its package).',
      tags,
      params: z.strictObject({ proposalId: proposalIdSchema }),
      responses: { 200: { description: 'The public state', schema: publicProposalSchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps }) => ({
        status: 200,
        body: await publicProposal(deps.db, params.proposalId),
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
        body: await adminProposal(deps.db, params.proposalId, ownerOf(auth)),
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
        body: await reviewProposal(deps.db, params.proposalId, body),
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
            publicKey: z.string().describe('X25519, base64url'),
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
          .length(Math.ceil((BALLOT_CIPHERTEXT_BYTES * 4) / 3)),
        proof: ballotProofSchema,
      }),
      responses: { 201: { description: 'The ballot receipt', schema: receiptSchema } },
      problems: {
        404: ['not_found'],
        409: ['already_voted', 'voting_not_open'],
        422: ['invalid_ciphertext', 'proof_invalid', 'unknown_root'],
      },
      handler: async ({ params, body, res, deps }) => {
        sealedAction(res);
        return { status: 201, body: await castBallot(deps.db, params.proposalId, body) };
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
      problems: { 404: ['not_found'], 409: ['not_in_vote', 'voting_open'] },
      handler: async ({ params, auth, deps }) => ({
        status: 200,
        body: await closeProposalNow(deps.db, params.proposalId, ownerOf(auth)),
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
      problems: { 404: ['not_found'], 409: ['not_closed', 'nothing_to_execute'] },
      handler: async ({ params, body, auth, deps }) => ({
        status: 200,
        body: await recordExecution(deps.db, params.proposalId, body.evidenceHash, ownerOf(auth)),
      }),
    })
    .add({
      method: 'get',
      path: '/api/governance/proposals/{proposalId}/package',
      operationId: 'getGovernancePackage',
      summary:
        'The proposal’s proof package (after the close): every ballot, the tally, the chain, the log proof',
      tags,
      params: z.strictObject({ proposalId: proposalIdSchema }),
      query: z.strictObject({ phase: z.enum(['tallied', 'executed']).optional() }),
      responses: { 200: { description: 'The package', schema: governancePackageSchema } },
      problems: { 404: ['not_found'], 409: ['not_published'] },
      handler: async ({ params, query, deps }) => ({
        status: 200,
        body: await proposalPackage(deps.db, params.proposalId, query.phase),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/verify',
      operationId: 'verifyGovernancePackage',
      summary: 'Verify a governance package, and optionally a ballot receipt against it',
      tags,
      body: z.strictObject({
        package: z.record(z.string(), z.unknown()),
        receipt: z.record(z.string(), z.unknown()).optional(),
        opening: z.strictObject({ choice: z.string().max(200) }).optional(),
      }),
      responses: { 200: { description: 'The verdict', schema: verdictSchema } },
      handler: async ({ body }) => {
        const keys = await verifierKeys();
        const verdict = await verifyGovernancePackage(body.package, keys);
        const receipt = body.receipt
          ? await checkReceiptAgainstPackage(body.receipt, body.package, keys, body.opening)
          : undefined;
        return {
          status: 200,
          body: { ...verdict, ...(receipt ? { receipt } : {}), signingKey: signingKey() },
        };
      },
    })
    .add({
      method: 'get',
      path: '/api/coordination/providers/status',
      operationId: 'coordinationProvidersStatus',
      summary: 'The coordination providers (governance, treasury, auctions) with health',
      tags: ['Status'],
      responses: {
        200: {
          description: 'Providers and the transparency log they publish to',
          schema: z.object({
            providers: z.array(z.record(z.string(), z.unknown())),
            transparencyLog: z.object({ healthy: z.boolean(), treeSize: z.number().int().nullable() }),
            checkedAt: z.string(),
          }),
        },
      },
      handler: async ({ deps }) => ({ status: 200, body: await coordinationProviders(deps.db) }),
    })
    .add({
      method: 'get',
      path: '/api/intelligence/providers/status',
      operationId: 'intelligenceProvidersStatus',
      summary: 'The configured analysis providers with health (the local AI runtime, when set)',
      tags: ['Status'],
      responses: {
        200: {
          description: 'Providers, probed',
          schema: z.object({ providers: z.array(z.record(z.string(), z.unknown())), checkedAt: z.string() }),
        },
      },
      handler: async () => ({
        status: 200,
        body: await cachedStatus('intelligence-providers', () => intelligenceProviders()),
      }),
    })
    .add({
      method: 'get',
      path: '/api/private-payout/status',
      operationId: 'privatePayoutStatus',
      summary: 'The payroll/payout advanced module: disabled by default; the service pays nothing',
      tags: ['Status'],
      responses: {
        200: {
          description: 'What is enabled',
          schema: z.object({
            module: z.literal('private-payout'),
            enabled: z.boolean(),
            active: z.boolean(),
            paysFunds: z.literal(false),
            modules: z.array(z.object({ name: z.string(), available: z.boolean(), enabled: z.boolean() })),
            detail: z.string(),
          }),
        },
      },
      handler: async () => ({ status: 200, body: privatePayoutStatus() }),
    });
}
