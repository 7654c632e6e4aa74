// The site table, treasury coordination: spending limits, requests (recorded, never executed), m-of-n signed
// committee decisions, packages and verification. `/api/treasury/status` is the agent exchange's; these
// live beside it under /api/treasury/requests and /api/treasury/limits.
import { z } from 'zod';
import { walletPublicKeySchema, walletSignatureSchema } from '../../shared/platform/wallet';
import { idPattern } from '../../shared/platform/ids';
import {
  treasuryOperations,
  treasuryPackageSchema,
  verifyTreasuryPackage,
} from '../../shared/treasury/package';
import {
  createTreasuryRequest,
  decideTreasuryRequest,
  listLimits,
  setSpendingLimit,
  treasuryPackage,
  treasuryRequestView,
} from '../../shared/treasury/requests';
import { packageRoutes, verifyRoute } from '../http/package-routes';
import type { RouteTable } from '../http/route';
import { ownerOf } from '../http/callers';
import { hex64, roomIdSchema } from '../views/governance';

const tags = ['Treasury coordination'];
const requestIdSchema = z.string().regex(idPattern('treq'), 'a treasury request id (treq_…)');
const baseUnits = z
  .string()
  .regex(/^[1-9]\d{0,77}$/, 'a positive integer in base units, as a decimal string');
const assetSchema = z
  .string()
  .min(1)
  .max(40)
  .describe('A payment asset id (e.g. USDC-SOL) or a treasury token (token:SYMBOL)');

const allowanceSchema = z
  .object({
    asset: z.string(),
    limit: z.string(),
    periodSeconds: z.number().int(),
    periodStart: z.string(),
    periodEnd: z.string(),
    committed: z.string(),
    remaining: z.string(),
  })
  .meta({ id: 'TreasuryAllowance' });

const termsSchema = z.object({
  requestId: z.string(),
  roomId: z.string(),
  committee: z.string(),
  operation: z.enum(treasuryOperations),
  asset: z.string(),
  amount: z.string(),
  recipient: z.string(),
  purposeHash: z.string(),
  threshold: z.number().int(),
  committeeSize: z.number().int(),
});

const requestViewSchema = z
  .object({
    requestId: z.string(),
    status: z.enum(['pending', 'approved', 'rejected']),
    terms: termsSchema,
    requestHash: hex64,
    approvals: z.number().int(),
    rejections: z.number().int(),
    decisions: z.array(z.object({ memberCommitment: z.string(), decision: z.string(), at: z.string() })),
    proofId: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'TreasuryRequest' });

export function treasuryCoordinationRoutes(table: RouteTable): RouteTable {
  table
    .add({
      method: 'post',
      path: '/api/treasury/limits',
      operationId: 'setTreasurySpendingLimit',
      summary: 'Set a room’s spending limit for one asset per period (pending and approved requests count)',
      tags,
      auth: 'operator-or-license',
      product: 'treasury',
      body: z.strictObject({
        roomId: roomIdSchema,
        asset: assetSchema,
        periodSeconds: z
          .number()
          .int()
          .min(60)
          .max(366 * 24 * 3600),
        limit: z.string().regex(/^(0|[1-9]\d{0,77})$/, 'base units, as a decimal string'),
      }),
      responses: { 200: { description: 'The allowance now', schema: allowanceSchema } },
      problems: { 404: ['not_found'], 422: ['unknown_asset'] },
      handler: async ({ body, auth, deps }) => ({
        status: 200,
        body: await setSpendingLimit(deps.db, body, ownerOf(auth)),
      }),
    })
    .add({
      method: 'get',
      path: '/api/treasury/limits',
      operationId: 'listTreasurySpendingLimits',
      summary: 'A room’s limits with what remains in the current period',
      tags,
      auth: 'operator-or-license',
      product: 'treasury',
      query: z.strictObject({ roomId: roomIdSchema }),
      responses: {
        200: {
          description: 'The limits',
          schema: z.object({ roomId: z.string(), limits: z.array(allowanceSchema) }),
        },
      },
      problems: { 404: ['not_found'] },
      handler: async ({ query, auth, deps }) => ({
        status: 200,
        body: await listLimits(deps.db, query.roomId, ownerOf(auth)),
      }),
    })
    .add({
      method: 'post',
      path: '/api/treasury/requests',
      operationId: 'createTreasuryRequest',
      summary: 'Record a treasury request (spend, or treasury-token mint/burn/transfer) for m-of-n approval',
      description:
        'Nothing is paid or minted: the request, its decisions and its package are records. A request over the period’s allowance is 422 `spending_limit_exceeded` with `allowance.remaining` in the problem.',
      tags,
      auth: 'operator-or-license',
      product: 'treasury',
      quota: true,
      body: z.strictObject({
        roomId: roomIdSchema,
        committee: z.string().regex(/^[a-z0-9][a-z0-9-]{0,39}$/),
        operation: z.enum(treasuryOperations),
        asset: assetSchema,
        amount: baseUnits,
        recipient: z.string().min(1).max(200),
        purposeHash: hex64.describe('sha256 of the purpose text, which the service never sees'),
      }),
      responses: {
        201: {
          description: 'The pending request and the hash approvers sign',
          schema: z.object({
            requestId: z.string(),
            status: z.literal('pending'),
            requestHash: hex64,
            terms: termsSchema,
            allowance: allowanceSchema.nullable(),
          }),
        },
      },
      problems: {
        404: ['not_found'],
        422: [
          'asset_not_spendable',
          'not_a_treasury_token',
          'spending_limit_exceeded',
          'unknown_asset',
          'unknown_committee',
        ],
      },
      handler: async ({ body, auth, deps }) => ({
        status: 201,
        body: await createTreasuryRequest(deps.db, body, ownerOf(auth)),
      }),
    })
    .add({
      method: 'get',
      path: '/api/treasury/requests/{requestId}',
      operationId: 'getTreasuryRequest',
      summary: 'A treasury request with its decisions',
      tags,
      auth: 'operator-or-license',
      product: 'treasury',
      params: z.strictObject({ requestId: requestIdSchema }),
      responses: { 200: { description: 'The request', schema: requestViewSchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, auth, deps }) => ({
        status: 200,
        body: await treasuryRequestView(deps.db, params.requestId, ownerOf(auth)),
      }),
    })
    .add({
      method: 'post',
      path: '/api/treasury/requests/{requestId}/approvals',
      operationId: 'decideTreasuryRequest',
      summary: 'A committee member approves or rejects, signing with their wallet',
      description:
        'Sign `proof-exchange/treasury/approval/v1\\nrequest:<id>\\nrequestHash:<hash>\\ndecision:<approve|reject>` (ed25519, base58).',
      tags,
      params: z.strictObject({ requestId: requestIdSchema }),
      body: z.strictObject({
        walletPublicKey: walletPublicKeySchema,
        decision: z.enum(['approve', 'reject']),
        signature: walletSignatureSchema,
      }),
      responses: { 200: { description: 'The request after the decision', schema: requestViewSchema } },
      problems: {
        403: ['not_an_approver', 'signature_invalid'],
        404: ['not_found'],
        409: ['already_decided', 'request_decided'],
        422: ['unknown_committee'],
        503: ['signing_key_retired'],
      },
      handler: async ({ params, body, deps }) => ({
        status: 200,
        body: await decideTreasuryRequest(deps.db, params.requestId, body),
      }),
    });
  packageRoutes(table, {
    path: '/api/treasury/requests/{requestId}',
    name: 'Treasury',
    of: 'The decided request’s',
    tags,
    auth: 'operator-or-license',
    product: 'treasury',
    params: z.strictObject({ requestId: requestIdSchema }),
    schema: treasuryPackageSchema,
    bundleCache: 'no-store',
    load: ({ params, auth, deps }) => treasuryPackage(deps.db, params.requestId, ownerOf(auth)),
  });
  return verifyRoute(table, {
    path: '/api/treasury/verify',
    operationId: 'verifyTreasuryPackage',
    summary: 'Verify a treasury package offline-style: signature, log proof, chain, m-of-n decisions',
    tags,
    checks: { chainValid: z.boolean(), approvalsMet: z.boolean() },
    verify: verifyTreasuryPackage,
  });
}
