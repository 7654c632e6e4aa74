// Table A, how agents find and join the exchange: discovery (the agent card, also served as an A2A
// agent card at /.well-known/agent-card.json) and acquisition (licenses, trial, checkout, referrals).
import type { Request, RequestHandler } from 'express';
import { z } from 'zod';
import { licenseTiers, licenseTypes, productLines, trialTerms } from '../../shared/commercial/tiers';
import { referralTerms } from '../../shared/exchange/referrals';
import { assetStatus } from '../../shared/payments/assets';
import type { AppDeps } from '../deps';
import { origin } from '../http/links';
import type { RouteTable } from '../http/route';
import { AGENT_EXCHANGE_VERSION, serviceSchema, serviceViews, signingKeyView } from './exchange';

const NAME = 'proof-exchange';
const DESCRIPTION =
  'Privacy and proof infrastructure as an agent exchange: buy proof workflow, blind policy and attestation jobs, pay in crypto, get signed receipts, and trade with other agents.';
/** The A2A protocol version whose AgentCard shape /.well-known/agent-card.json follows. */
export const A2A_PROTOCOL_VERSION = '0.3.0';

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
    name: NAME,
    description: DESCRIPTION,
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

/** The A2A AgentCard (protocol 0.3 JSON shape): a local typed shape, see docs/agent-exchange.md. */
export interface A2AAgentCard {
  name: string;
  description: string;
  url: string;
  version: string;
  protocolVersion: string;
  preferredTransport: string;
  documentationUrl: string;
  provider: { organization: string; url: string };
  capabilities: { streaming: boolean; pushNotifications: boolean; stateTransitionHistory: boolean };
  securitySchemes: Record<string, { type: 'http'; scheme: 'bearer'; description: string }>;
  security: Array<Record<string, string[]>>;
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: Array<{
    id: string;
    name: string;
    description: string;
    tags: string[];
    examples: string[];
    inputModes: string[];
    outputModes: string[];
  }>;
}

export function a2aAgentCard(req: Request, deps: AppDeps): A2AAgentCard {
  const base = origin(req, deps, 'base');
  return {
    name: NAME,
    description: DESCRIPTION,
    url: base,
    version: AGENT_EXCHANGE_VERSION,
    protocolVersion: A2A_PROTOCOL_VERSION,
    preferredTransport: 'HTTP+JSON',
    documentationUrl: `${base}/openapi.json`,
    provider: { organization: NAME, url: base },
    // Job state changes stream as server-sent events and results can be pushed (logistics webhooks).
    capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: true },
    securitySchemes: {
      agentKey: {
        type: 'http',
        scheme: 'bearer',
        description: `An agent API key (ak_…) from POST ${base}/api/registry/register`,
      },
    },
    security: [{ agentKey: [] }],
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: serviceViews().map((s) => ({
      id: s.id,
      name: s.name,
      description: `${s.description} Price: ${s.price.free ? 'free' : `${s.price.usdCents} USD cents`}. Create a job: POST ${base}/api/jobs {"service":"${s.id}","input":{…}}.`,
      tags: [s.id.split('.')[0]!, s.price.free ? 'free' : 'paid'],
      examples: [JSON.stringify({ service: s.id, input: {} })],
      inputModes: ['application/json'],
      outputModes: ['application/json'],
    })),
  };
}

/** GET /.well-known/agent-card.json, mounted by the app beside /openapi.json. */
export function agentCardHandler(deps: AppDeps): RequestHandler {
  return (req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.json(a2aAgentCard(req, deps));
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
      description: `The same card in the A2A AgentCard shape (protocol ${A2A_PROTOCOL_VERSION}) is at /.well-known/agent-card.json.`,
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
