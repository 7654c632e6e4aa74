// The site table, governance rooms and membership: a room (members stored only as salted commitments of their
// wallet keys), its committees, and a member's proof of membership with a signed challenge.
import { z } from 'zod';
import { walletPublicKeySchema, walletSignatureSchema } from '../../../shared/platform/wallet';
import {
  addMembers,
  createCommittee,
  createRoom,
  membershipChallenge,
  proveMembership,
  roomOrThrow,
  roomView,
} from '../../../shared/governance/rooms';
import { ownerOf } from '../../http/callers';
import type { RouteTable } from '../../http/route';
import { hex64, roomIdSchema, slugSchema } from '../../views/governance';

const tags = ['Governance'];
const membersSchema = z.array(walletPublicKeySchema).max(1000);

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

export function roomRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'post',
      path: '/api/governance/rooms',
      operationId: 'createGovernanceRoom',
      bodyLimit: 'large',
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
      bodyLimit: 'large',
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
      bodyLimit: 'large',
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
    });
}
