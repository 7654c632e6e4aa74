// The exchange table, agreements: createAgreement (terms hashed canonically), getAgreement (for its two
// parties) and acceptAgreement (the counterparty's wallet signature over the terms hash).
import { z } from 'zod';
import {
  acceptAgreement,
  agreementStatuses,
  agreementView,
  createAgreement,
  getAgreement,
} from '../../../shared/exchange/agreements';
import { walletSignatureSchema } from '../../../shared/platform/wallet';
import { assetIds } from '../../../shared/chains/assets';
import type { RouteTable } from '../../http/route';
import { agentIdOf } from '../../http/callers';

const agentId = z.string().regex(/^agt_[0-9a-z]{26}$/, 'an agent id (agt_…)');
const params = z.strictObject({
  agreementId: z.string().regex(/^agr_[0-9a-z]{26}$/, 'an agreement id (agr_…)'),
});

const slaSchema = z
  .strictObject({
    deliveryWithinSeconds: z
      .number()
      .int()
      .min(1)
      .max(365 * 24 * 3600)
      .optional(),
    availabilityBps: z.number().int().min(0).max(10_000).optional().describe('Availability in basis points'),
    maxRetries: z.number().int().min(0).max(100).optional(),
    remedy: z.string().max(500).optional(),
  })
  .meta({ id: 'AgreementSla' });

const signatureView = z
  .object({ agentId: z.string(), publicKey: z.string(), signature: z.string() })
  .nullable();

const agreementSchema = z
  .object({
    id: z.string(),
    status: z.enum(agreementStatuses),
    terms: z.object({
      type: z.string(),
      proposer: z.object({ agentId: z.string(), walletPublicKey: z.string() }),
      counterparty: z.object({ agentId: z.string(), walletPublicKey: z.string() }),
      service: z.string(),
      listingId: z.string().optional(),
      price: z.object({ usdCents: z.number().int(), asset: z.enum(assetIds) }),
      deadline: z.string(),
      sla: slaSchema,
      expiresAt: z.string(),
      nonce: z.string(),
    }),
    termsHash: z.string().describe('sha256 (hex) of the canonical JSON of terms'),
    signing: z.object({ algorithm: z.literal('ed25519'), message: z.string(), encoding: z.string() }),
    signatures: z.object({ proposer: signatureView, counterparty: signatureView }),
    createdAt: z.string(),
    expiresAt: z.string(),
    acceptedAt: z.string().nullable(),
  })
  .meta({ id: 'Agreement' });

const createBody = z
  .strictObject({
    counterpartyAgentId: agentId,
    service: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .describe('What is agreed: a service id or a short description'),
    listingId: z
      .string()
      .regex(/^lst_[0-9a-z]{26}$/)
      .optional(),
    priceUsdCents: z.number().int().min(0).max(2_000_000_000),
    asset: z.enum(assetIds),
    deadline: z.iso.datetime({ offset: true }).describe('When the service must be delivered'),
    sla: slaSchema.default({}),
    expiresAt: z.iso
      .datetime({ offset: true })
      .optional()
      .describe('Until when the offer can be accepted (default: the deadline, at most 7 days)'),
    nonce: z
      .string()
      .regex(/^[A-Za-z0-9_-]{16,64}$/)
      .optional()
      .describe('Makes the terms unique; default: random'),
    proposerSignature: walletSignatureSchema
      .optional()
      .describe("The proposer's signature over the terms hash"),
  })
  .meta({ id: 'CreateAgreementRequest' });

export function agreementRoutes(table: RouteTable): RouteTable {
  const tags = ['Agreements'];
  const reply = z.object({ agreement: agreementSchema });
  return table
    .add({
      method: 'post',
      path: '/api/agreements',
      operationId: 'createAgreement',
      summary: 'Propose terms to another agent; the canonical terms hash is what the counterparty signs',
      tags,
      auth: 'agent',
      body: createBody,
      responses: { 201: { description: 'Proposed', schema: reply } },
      problems: {
        409: ['agreement_exists'],
        422: [
          'counterparty_not_found',
          'deadline_passed',
          'invalid_counterparty',
          'invalid_expiry',
          'listing_not_found',
          'signature_invalid',
        ],
      },
      handler: async ({ body, auth, deps }) => {
        const row = await createAgreement(deps.db, agentIdOf(auth), body);
        return { status: 201, body: { agreement: agreementView(row) } };
      },
    })
    .add({
      method: 'get',
      path: '/api/agreements/{agreementId}',
      operationId: 'getAgreement',
      summary: 'An agreement: terms, hash, state and signatures (for its two parties)',
      tags,
      auth: 'agent',
      params,
      responses: { 200: { description: 'The agreement', schema: reply } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, auth, deps }) => ({
        status: 200,
        headers: { 'Cache-Control': 'no-store' },
        body: { agreement: agreementView(await getAgreement(deps.db, params.agreementId, agentIdOf(auth))) },
      }),
    })
    .add({
      method: 'post',
      path: '/api/agreements/{agreementId}/accept',
      operationId: 'acceptAgreement',
      summary: "Accept as the counterparty, with the registered wallet's signature over the terms hash",
      description:
        'Refused with `not_counterparty` (403), `agreement_already_accepted`, `agreement_expired`, `agreement_cancelled`, `terms_hash_mismatch` (409) or `signature_invalid` (422).',
      tags,
      auth: 'agent',
      params,
      body: z
        .strictObject({
          termsHash: z
            .string()
            .regex(/^[0-9a-fA-F]{64}$/)
            .describe('The terms hash that was signed'),
          signature: walletSignatureSchema,
        })
        .meta({ id: 'AcceptAgreementRequest' }),
      responses: { 200: { description: 'Accepted', schema: reply } },
      problems: {
        403: ['not_counterparty'],
        404: ['not_found'],
        409: [
          'agreement_already_accepted',
          'agreement_cancelled',
          'agreement_expired',
          'terms_hash_mismatch',
        ],
        422: ['signature_invalid'],
      },
      handler: async ({ params, body, auth, deps }) => {
        const row = await acceptAgreement(deps.db, params.agreementId, agentIdOf(auth), body);
        return { status: 200, body: { agreement: agreementView(row) } };
      },
    });
}
