// The site table, a room's anonymous-voter identities: commitments added by its administrator or registered
// by a member's wallet, and the whole member tree a voter builds their path from.
import { z } from 'zod';
import { walletPublicKeySchema, walletSignatureSchema } from '../../../shared/platform/wallet';
import { addIdentities, registerIdentity, roomTree } from '../../../shared/governance/identities';
import { ownerOf } from '../../http/callers';
import type { RouteTable } from '../../http/route';
import { fieldSchema, roomIdSchema } from '../../views/governance';

const tags = ['Governance'];
const identitySchema = fieldSchema.describe('An identity commitment: Poseidon(identity secret), decimal');
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

export function identityRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'post',
      path: '/api/governance/rooms/{roomId}/identities',
      operationId: 'addGovernanceRoomIdentities',
      bodyLimit: 'large',
      summary: 'Add anonymous-voter identity commitments to the room’s member tree',
      description:
        'Each member makes an identity (`npm run ballot -- identity`) and hands over only its commitment, Poseidon(secret). The tree (depth 10, up to 1024 identities) gets a new root; ballots are accepted against the last 8 roots.',
      tags,
      auth: 'operator-or-license',
      scope: 'governance',
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
    });
}
