// The exchange table, how agents find and join the exchange: discovery (the agent card; the A2A agent card is
// api/a2a/card.ts) and acquisition (licenses, trial, checkout, referrals).
import type { Request } from 'express';
import { z } from 'zod';
import { A2A_PROTOCOL_VERSION } from '../../../shared/a2a/tasks';
import { licenseTiers, licenseTypes, productLines, trialTerms } from '../../../shared/licensing/tiers';
import { referralTerms } from '../../../shared/exchange/referrals';
import { assetStatus } from '../../../shared/chains/assets';
import type { AppDeps } from '../../deps';
import { origin } from '../../http/links';
import type { RouteTable } from '../../http/route';
import {
  AGENT_EXCHANGE_VERSION,
  SERVICE_DESCRIPTION,
  SERVICE_NAME,
  serviceSchema,
  serviceViews,
  signingKeyView,
} from '../../views/exchange';

function endpointsOf(table: RouteTable, base: string) {
  return table
    .list()
    .filter((r) => !r.hidden)
    .map((r) => ({
      operationId: r.operationId,
      method: r.method.toUpperCase(),
      url: `${base}${r.path}`,
      auth: r.auth ?? 'public',
    }));
}

function acceptedAssets() {
  return assetStatus().map((s) => ({
    id: s.asset.id,
    symbol: s.asset.symbol,
    network: s.asset.network,
    decimals: s.asset.decimals,
    ...(s.asset.contract ? { contract: s.asset.contract } : {}),
    enabled: s.enabled,
    ...(s.enabled ? { payTo: s.payTo } : { reason: s.reason }),
  }));
}

export function discoveryCard(table: RouteTable, req: Request, deps: AppDeps) {
  const base = origin(req, deps, 'base');
  return {
    name: SERVICE_NAME,
    description: SERVICE_DESCRIPTION,
    version: AGENT_EXCHANGE_VERSION,
    url: base,
    openapi: `${base}/openapi.json`,
    documentation: `${base}/docs`,
    a2aAgentCard: `${base}/.well-known/agent-card.json`,
    endpoints: endpointsOf(table, base),
    services: serviceViews(),
    payments: {
      protocols: ['x402'],
      assets: acceptedAssets(),
      receipts: `${base}/api/receipts/{receiptId}`,
    },
    receiptPublicKey: signingKeyView(),
    authentication: {
      agentKey: {
        scheme: 'bearer',
        format: 'ak_…',
        obtain: `${base}/api/registry/register`,
      },
      walletSignatures: { algorithm: 'ed25519', encoding: 'base58' },
    },
  };
}

const endpointSchema = z.object({
  operationId: z.string(),
  method: z.string(),
  url: z.string(),
  auth: z.string(),
});

const discoverySchema = z
  .object({
    name: z.string(),
    description: z.string(),
    version: z.string(),
    url: z.string(),
    openapi: z.string(),
    documentation: z.string(),
    a2aAgentCard: z.string(),
    endpoints: z.array(endpointSchema),
    services: z.array(serviceSchema),
    payments: z.object({
      protocols: z.array(z.string()),
      assets: z.array(
        z.object({
          id: z.string(),
          symbol: z.string(),
          network: z.string(),
          decimals: z.number().int(),
          contract: z.string().optional(),
          enabled: z.boolean(),
          payTo: z.string().optional(),
          reason: z.string().optional(),
        }),
      ),
      receipts: z.string(),
    }),
    receiptPublicKey: z.object({
      algorithm: z.literal('ed25519'),
      keyId: z.string(),
      publicKey: z.string(),
      publicKeyPem: z.string(),
    }),
    authentication: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'Discovery' });

const acquisitionSchema = z
  .object({
    licenses: z.array(
      z.object({
        type: z.enum(licenseTypes),
        priceUsdCents: z.number().int(),
        period: z.enum(['trial', 'month', 'year']),
        periodDays: z.number().int(),
        description: z.string(),
        entitlements: z.object({
          productLines: z.array(z.enum(productLines)),
          quotas: z.record(z.string(), z.number().int().nullable()),
          creditUsdCents: z.number().int(),
        }),
      }),
    ),
    trial: z.object({
      days: z.number().int(),
      perOrganization: z.number().int(),
      perWallet: z.number().int(),
      detail: z.string(),
      challenge: z.string(),
    }),
    checkout: z.object({ prepare: z.string(), status: z.string(), method: z.literal('POST') }),
    payPerJob: z.object({ createJob: z.string(), pricing: z.string(), detail: z.string() }),
    referrals: z.object({
      create: z.string(),
      commissionBps: z.number().int(),
      basis: z.string(),
      attribution: z.string(),
      selfReferral: z.string(),
    }),
    registration: z.string(),
  })
  .meta({ id: 'Acquisition' });

export function discoveryRoutes(table: RouteTable): RouteTable {
  const tags = ['Discovery'];
  return table
    .add({
      method: 'get',
      path: '/api/discovery',
      operationId: 'discovery',
      summary: "The exchange's agent card: endpoints, services, payment assets, receipt key, OpenAPI",
      description: `The A2A agent card (protocol ${A2A_PROTOCOL_VERSION}, JSON-RPC and HTTP+JSON transports) is at /.well-known/agent-card.json.`,
      tags,
      responses: { 200: { description: 'The agent card', schema: discoverySchema } },
      handler: async ({ req, deps }) => ({
        status: 200,
        headers: { 'Cache-Control': 'public, max-age=60' },
        body: discoveryCard(table, req, deps),
      }),
    })
    .add({
      method: 'get',
      path: '/api/acquisition',
      operationId: 'acquisition',
      summary: 'How to obtain access: license tiers, trial terms, checkout and referral terms',
      tags,
      responses: { 200: { description: 'Ways in', schema: acquisitionSchema } },
      handler: async ({ req, deps }) => {
        const base = origin(req, deps, 'base');
        const api = origin(req, deps, 'api');
        return {
          status: 200,
          body: {
            licenses: licenseTiers(),
            trial: { ...trialTerms, challenge: `${api}/api/v1/commercial/trial/challenge` },
            checkout: {
              prepare: `${api}/api/v1/commercial/checkout/prepare`,
              status: `${api}/api/v1/commercial/checkout/status`,
              method: 'POST' as const,
            },
            payPerJob: {
              createJob: `${base}/api/jobs`,
              pricing: `${base}/api/pricing`,
              detail:
                'Each priced job is paid on its own quote in any enabled asset, unless the prepaid credit of a license (sent as Bearer) covers it.',
            },
            referrals: { create: `${base}/api/referrals`, ...referralTerms() },
            registration: `${base}/api/registry/register`,
          },
        };
      },
    });
}
