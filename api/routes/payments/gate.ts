// The commercial table, the randomized-amount payment gate (/api/v1/payment-gate/random): reserve a unique
// amount, read the request, match the transfer. A request is opened by the capability its prepare returned
// once (Bearer gs_…), never by its id alone.
import { z } from 'zod';
import { assetIds } from '../../../shared/chains/assets';
import {
  gateOverview,
  gateStatuses,
  gateView,
  getGateRequest,
  prepareGateRequest,
  verifyGateRequest,
} from '../../../shared/payments/gate';
import { assetAvailability } from '../../../shared/payments/availability';
import { newCapability } from '../../../shared/platform/capabilities';
import { idPattern } from '../../../shared/platform/ids';
import { amountHolder } from '../../http/ratelimit';
import type { RouteTable } from '../../http/route';
import { baseUnits, bindingSchema, paymentInstructionsSchema, txRefSchema } from '../../views/payments';

const gateId = z.string().regex(idPattern('gate'), 'a payment gate request id (gate_…)');

const gateSchema = z
  .object({
    id: z.string(),
    asset: z.enum(assetIds),
    network: z.string(),
    amount: baseUnits.describe('Send exactly this amount'),
    amountDisplay: z.string(),
    baseAmount: baseUnits,
    decimals: z.number().int(),
    contract: z.string().optional(),
    payTo: z.string(),
    binding: bindingSchema.optional(),
    paymentInstructions: paymentInstructionsSchema,
    usdCents: z.number().int().nullable(),
    status: z.enum(gateStatuses),
    txRef: z.string().nullable(),
    payer: z.string().nullable(),
    reason: z.string().nullable(),
    detail: z.string().nullable(),
    createdAt: z.string(),
    expiresAt: z.string(),
    matchedAt: z.string().nullable(),
  })
  .meta({ id: 'PaymentGateRequest' });

const verificationSchema = z.object({
  matched: z.boolean(),
  status: z.enum(['matched', 'pending', 'not_found', 'mismatch']),
  reason: z.string().optional(),
  detail: z.string().optional(),
  confirmations: z.number().int().optional(),
  amountReceived: baseUnits.optional(),
});

export function gateRoutes(table: RouteTable): RouteTable {
  const tags = ['Commercial'];
  return table
    .add({
      method: 'get',
      path: '/api/v1/payment-gate/random/status',
      operationId: 'paymentGateStatus',
      summary: 'One payment-gate request, or the gate’s settings and open requests per asset',
      description:
        'With `requestId` and the request’s client secret as `Authorization: Bearer gs_…`: the request (404 without the secret, or with another, as for one that does not exist). Without `requestId`: the gate’s settings, open requests per asset and asset availability (public).',
      tags,
      capability: 'gate',
      query: z.strictObject({ requestId: gateId.optional() }),
      responses: {
        200: {
          description: 'The request, or the overview',
          schema: z.union([
            z.object({ request: gateSchema }),
            z.object({
              windowSeconds: z.number().int(),
              randomSpread: z.object({ min: z.number().int(), max: z.number().int() }),
              open: z.record(z.string(), z.number().int()),
              assets: z.array(
                z.object({
                  id: z.enum(assetIds),
                  enabled: z.boolean(),
                  reason: z.string().optional(),
                  detail: z.string().optional(),
                }),
              ),
            }),
          ]),
        },
      },
      problems: { 404: ['not_found'], 503: ['asset_config_invalid'] },
      handler: async ({ query, capability, deps }) => {
        if (query.requestId) {
          return {
            status: 200,
            headers: { 'Cache-Control': 'no-store' },
            body: {
              request: gateView(await getGateRequest(deps.db, query.requestId, capability)),
            },
          };
        }
        return {
          status: 200,
          body: {
            ...(await gateOverview(deps.db)),
            assets: (await assetAvailability()).map((s) => ({
              id: s.asset.id,
              enabled: s.enabled,
              ...(s.enabled ? {} : { reason: s.reason, detail: s.detail }),
            })),
          },
        };
      },
    })
    .add({
      method: 'post',
      path: '/api/v1/payment-gate/random/prepare',
      operationId: 'paymentGatePrepare',
      summary: 'Reserve a unique amount (base + random base units) of one asset for a window',
      description:
        'Give `baseAmount` (base units) or `usdCents`. No two open requests share an amount, so the transfer needs no memo. Answers the request and its `clientSecret` (gs_…), shown once and stored only as a hash: send it as `Authorization: Bearer gs_…` to read the request and to verify its transfer. One caller holds at most `AMOUNT_HOLDS_PER_CALLER` open amounts of an asset (a paid license, sent as its Bearer key, `AMOUNT_HOLDS_PER_LICENSE`): over it, 429 `too_many_open_quotes`. The gate as a whole holds at most `AMOUNT_GATE_SHARE` of an asset’s quote spread (503 `gate_amounts_exhausted`).',
      tags,
      auth: 'agent-optional',
      secretReply: true,
      body: z
        .strictObject({
          asset: z.enum(assetIds),
          baseAmount: baseUnits.max(60).optional(),
          usdCents: z.number().int().positive().max(100_000_000).optional(),
        })
        .refine((b) => (b.baseAmount === undefined) !== (b.usdCents === undefined), {
          message: 'give exactly one of baseAmount and usdCents',
          path: ['baseAmount'],
        }),
      responses: {
        201: {
          description: 'The reserved request and its client secret',
          schema: z.object({
            request: gateSchema,
            clientSecret: z
              .string()
              .describe(
                'The request’s client secret (gs_…), shown once: it alone opens the request (status, verify).',
              ),
          }),
        },
      },
      problems: {
        422: ['asset_unavailable'],
        429: ['too_many_open_quotes'],
        503: ['gate_amounts_exhausted', 'asset_config_invalid'],
      },
      handler: async ({ body, auth, req, deps }) => {
        const secret = newCapability('gate');
        const row = await prepareGateRequest(deps.db, {
          ...body,
          holder: amountHolder(auth, req, true),
          clientSecretHash: secret.hash,
        });
        return {
          status: 201,
          headers: { 'Cache-Control': 'no-store' },
          body: { request: gateView(row), clientSecret: secret.token },
        };
      },
    })
    .add({
      method: 'post',
      path: '/api/v1/payment-gate/random/verify',
      operationId: 'paymentGateVerify',
      summary: 'Match a transfer to a request by its exact amount and the treasury address',
      description:
        'Needs the request’s client secret as `Authorization: Bearer gs_…` (without it, or with another, the request is 404 and nothing is written).',
      tags,
      capability: 'gate',
      body: z.strictObject({ requestId: gateId, txRef: txRefSchema }),
      responses: {
        200: {
          description: 'The request and what the chain said; `matched` true once paid',
          schema: z.object({ request: gateSchema, verification: verificationSchema }),
        },
      },
      problems: {
        404: ['not_found'],
        409: ['gate_already_matched', 'gate_expired', 'gate_not_payable', 'payment_already_claimed'],
      },
      handler: async ({ body, capability, deps }) => {
        const { request, verification } = await verifyGateRequest(deps.db, {
          ...body,
          clientSecret: capability,
        });
        return { status: 200, body: { request: gateView(request), verification } };
      },
    });
}
