// The site table, a room's trustees: the owner names them and the threshold; each trustee's signed
// key-ceremony messages (dealing, verdicts, answers to complaints); after a vote's close, the ballots to
// decrypt and each trustee's partial decryptions. The signatures and proofs are the authority on the
// trustees' routes: the service holds no share and can make none of them.
import { z } from 'zod';
import { closedBallots, submitDecryption } from '../../../shared/governance/decryptions';
import { MAX_TRUSTEES } from '../../../shared/governance/threshold';
import {
  appointTrustees,
  ceremonyView,
  endCeremony,
  postTrusteeMessage,
} from '../../../shared/governance/trustees';
import { ownerOf } from '../../http/callers';
import type { RouteTable } from '../../http/route';
import { fieldSchema, hex64, proposalIdSchema, roomIdSchema } from '../../views/governance';

const tags = ['Governance'];
const b64 = (n: number) =>
  z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, 'base64url')
    .length(n);
const key32 = b64(43);
const trusteeIndex = z.number().int().min(1).max(MAX_TRUSTEES);
const signature = b64(86).describe(
  'ed25519 by the trustee’s key, base64url, over `proof-exchange/governance/trustee/v1\\nroom:<roomId>\\nkind:<dealing|verdict|answer>\\nsha256:<hex sha256 of the canonical JSON of body>`',
);

const ceremonySchema = z
  .object({
    roomId: z.string(),
    status: z.enum(['dealing', 'ready']),
    threshold: z.number().int(),
    trustees: z.array(
      z.object({
        index: z.number().int(),
        name: z.string(),
        publicKey: z.string(),
        encryptionKey: z.string(),
      }),
    ),
    dealings: z.array(z.object({ trustee: z.number().int(), body: z.unknown(), signature: z.string() })),
    verdicts: z.array(z.object({ trustee: z.number().int(), body: z.unknown(), signature: z.string() })),
    answers: z.array(z.object({ trustee: z.number().int(), body: z.unknown(), signature: z.string() })),
    pendingComplaints: z.array(z.object({ dealer: z.number().int(), complainer: z.number().int() })),
    qualified: z.array(z.number().int()),
    jointKey: z.string().nullable().describe('ristretto255, base64url: what ballots are encrypted to'),
    verificationShares: z
      .array(z.string())
      .nullable()
      .describe('x_i·G of each trustee, in order: what its partial decryptions are proved against'),
  })
  .meta({
    id: 'TrusteeCeremony',
    description:
      'The key ceremony in the open. Every message is signed by its trustee; the shares are sealed to each recipient’s X25519 key.',
  });

const messageProblems = {
  403: ['signature_invalid'],
  404: ['not_found'],
  409: ['ceremony_closed', 'already_posted'],
  422: ['unknown_trustee', 'invalid_dealing', 'no_such_dealing', 'no_complaint', 'answer_invalid'],
};

export function trusteeRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'post',
      path: '/api/governance/rooms/{roomId}/trustees',
      operationId: 'appointGovernanceTrustees',
      summary: 'Name the room’s trustees and the threshold t of n that opens its ballots',
      description:
        'Once per room. Each trustee makes its keys on its own machine (`npm run trustee -- keys`) and gives the public half. Proposals made after the ceremony ends encrypt their ballots to the trustees’ joint key: the service cannot open them.',
      tags,
      auth: 'operator-or-license',
      product: 'governance',
      params: z.strictObject({ roomId: roomIdSchema }),
      body: z.strictObject({
        threshold: trusteeIndex,
        trustees: z
          .array(
            z.strictObject({
              name: z.string().min(1).max(100),
              publicKey: key32.describe('ed25519, raw, base64url: signs the trustee’s messages'),
              encryptionKey: key32.describe('X25519, raw, base64url: its shares are sealed to it'),
            }),
          )
          .min(1)
          .max(MAX_TRUSTEES),
      }),
      responses: { 201: { description: 'The ceremony, dealing', schema: ceremonySchema } },
      problems: {
        404: ['not_found'],
        409: ['trustees_exist'],
        422: ['trustee_count', 'threshold_too_high', 'duplicate_trustee'],
      },
      handler: async ({ params, body, auth, deps }) => ({
        status: 201,
        body: await appointTrustees(deps.db, params.roomId, body, ownerOf(auth)),
      }),
    })
    .add({
      method: 'get',
      path: '/api/governance/rooms/{roomId}/trustees',
      operationId: 'getGovernanceTrustees',
      summary: 'The room’s trustees and their key ceremony, every message in the open',
      tags,
      params: z.strictObject({ roomId: roomIdSchema }),
      responses: { 200: { description: 'The ceremony', schema: ceremonySchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps }) => ({
        status: 200,
        body: await ceremonyView(deps.db, params.roomId),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/rooms/{roomId}/trustees/dealings',
      operationId: 'postGovernanceTrusteeDealing',
      summary: 'A trustee’s dealing: commitments to its polynomial and a sealed share for each trustee',
      tags,
      params: z.strictObject({ roomId: roomIdSchema }),
      body: z.strictObject({
        trustee: trusteeIndex,
        body: z.strictObject({
          commitments: z.array(key32).min(1).max(MAX_TRUSTEES),
          shares: z
            .array(
              z
                .string()
                .regex(/^[A-Za-z0-9_-]+$/)
                .max(400),
            )
            .min(1)
            .max(MAX_TRUSTEES),
        }),
        signature,
      }),
      responses: { 201: { description: 'The ceremony', schema: ceremonySchema } },
      problems: messageProblems,
      handler: async ({ params, body, deps }) => ({
        status: 201,
        body: await postTrusteeMessage(deps.db, params.roomId, 'dealing', body),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/rooms/{roomId}/trustees/verdicts',
      operationId: 'postGovernanceTrusteeVerdict',
      summary: 'A trustee’s verdict on one dealing: its share matches the commitments, or a complaint',
      tags,
      params: z.strictObject({ roomId: roomIdSchema }),
      body: z.strictObject({
        trustee: trusteeIndex,
        body: z.strictObject({ dealer: trusteeIndex, ok: z.boolean() }),
        signature,
      }),
      responses: { 201: { description: 'The ceremony', schema: ceremonySchema } },
      problems: messageProblems,
      handler: async ({ params, body, deps }) => ({
        status: 201,
        body: await postTrusteeMessage(deps.db, params.roomId, 'verdict', body),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/rooms/{roomId}/trustees/answers',
      operationId: 'postGovernanceTrusteeAnswer',
      summary:
        'A dealer answers a complaint by publishing the complainer’s share; a wrong one disqualifies it',
      tags,
      params: z.strictObject({ roomId: roomIdSchema }),
      body: z.strictObject({
        trustee: trusteeIndex,
        body: z.strictObject({ complainer: trusteeIndex, share: hex64 }),
        signature,
      }),
      responses: { 201: { description: 'The ceremony', schema: ceremonySchema } },
      problems: messageProblems,
      handler: async ({ params, body, deps }) => ({
        status: 201,
        body: await postTrusteeMessage(deps.db, params.roomId, 'answer', body),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/rooms/{roomId}/trustees/end',
      operationId: 'endGovernanceTrusteeCeremony',
      summary: 'End a ceremony a trustee does not finish, with at least the threshold of qualified dealings',
      tags,
      auth: 'operator-or-license',
      product: 'governance',
      params: z.strictObject({ roomId: roomIdSchema }),
      responses: { 200: { description: 'The ceremony, ready', schema: ceremonySchema } },
      problems: { 404: ['not_found'], 409: ['ceremony_closed', 'too_few_dealings'] },
      handler: async ({ params, auth, deps }) => ({
        status: 200,
        body: await endCeremony(deps.db, params.roomId, ownerOf(auth)),
      }),
    })
    .add({
      method: 'get',
      path: '/api/governance/proposals/{proposalId}/ballots',
      operationId: 'listGovernanceClosedBallots',
      summary: 'After the close of a vote under the trustees’ key: the ballots to decrypt',
      tags,
      params: z.strictObject({ proposalId: proposalIdSchema }),
      responses: {
        200: {
          description: 'Nullifiers and ciphertexts in canonical order',
          schema: z.object({
            proposalId: z.string(),
            status: z.string(),
            ballots: z.array(
              z.object({
                nullifier: z.string(),
                ciphertext: z.string(),
              }),
            ),
          }),
        },
      },
      problems: { 404: ['not_found'], 409: ['not_threshold', 'voting_not_closed'] },
      handler: async ({ params, deps }) => ({
        status: 200,
        body: await closedBallots(deps.db, params.proposalId),
      }),
    })
    .add({
      method: 'post',
      path: '/api/governance/proposals/{proposalId}/decryptions',
      operationId: 'postGovernanceDecryption',
      bodyLimit: 'large',
      summary: 'A trustee’s partial decryption of every ballot, each with a Chaum–Pedersen proof',
      description:
        'Made on the trustee’s machine (`npm run trustee -- decrypt`). Each proof is checked against the trustee’s verification share; one that fails refuses the whole set. When the threshold of trustees have posted, the ballots are opened, tallied and the package published.',
      tags,
      params: z.strictObject({ proposalId: proposalIdSchema }),
      body: z.strictObject({
        trustee: trusteeIndex,
        shares: z
          .array(
            z.strictObject({
              nullifier: fieldSchema,
              share: key32,
              proof: z.strictObject({ c: hex64, z: hex64 }),
            }),
          )
          .max(1024),
        signature: signature.describe(
          'ed25519 by the trustee’s key over `proof-exchange/governance/trustee/v1\\nroom:<roomId>\\nkind:decryption\\nsha256:<hex sha256 of the canonical JSON of { proposalId, shares }>`, the shares ordered by nullifier, each `{ nullifier, share, proof: { c, z } }`',
        ),
      }),
      responses: {
        201: {
          description: 'Taken',
          schema: z.object({
            proposalId: z.string(),
            trustee: z.number().int(),
            trusteesDecrypted: z.number().int(),
            trusteesNeeded: z.number().int(),
          }),
        },
      },
      problems: {
        403: ['signature_invalid'],
        404: ['not_found'],
        409: ['not_threshold', 'not_decrypting', 'already_decrypted'],
        422: ['unknown_trustee', 'decryption_incomplete', 'decryption_invalid'],
        503: ['signing_key_retired'],
      },
      handler: async ({ params, body, deps }) => ({
        status: 201,
        body: await submitDecryption(deps.db, params.proposalId, body, deps.clock),
      }),
    });
}
