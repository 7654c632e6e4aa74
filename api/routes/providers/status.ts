// The commercial table's status routes (/api/v1): the local AI runtime's signed statement, the privacy matrix
// and claims, every provider integration probed, and the chain stream's statistics.
import { z } from 'zod';
import { privacyClaims, privacyExecutionMatrix, executionPlaces } from '../../../shared/providers/privacy';
import { cachedStatus, probeReasons, providerIntegrations } from '../../../shared/providers/probes';
import { localAiRuntimeProof } from '../../../shared/providers/runtime-proof';
import { streamStats } from '../../../shared/providers/rpc-stream';
import { env } from '../../../shared/platform/env';
import { serviceSigningKey } from '../../../shared/platform/keys';
import type { RouteTable } from '../../http/route';
import { probeSchema } from '../../views/providers';

export function statusRoutes(table: RouteTable): RouteTable {
  const tags = ['Status'];
  return table
    .add({
      method: 'get',
      path: `/api/v1/${env.LOCAL_AI_SLUG}/runtime-proof`,
      operationId: 'localAiRuntimeProof',
      summary: 'Signed statement of the configured local AI runtime (model digest, probed reachability)',
      description:
        'The statement (every field but `signature`) is signed with the service key (ed25519 over its canonical JSON). It says what was checked: `probe` is `GET /v1/models` just now; `digest.observed` is the digest the runtime itself reported for the model (Ollama `GET /api/tags`), compared with the configured LOCAL_AI_MODEL_DIGEST (`digest.status`: matches, mismatch, observed, configured_not_observed, unknown). A runtime whose API gives no digest leaves it configured, not observed, and the statement says so. It is the runtime’s report, not an attestation of its hardware. `configured: false` when no runtime is set.',
      tags,
      responses: {
        200: {
          description: 'The signed statement, or configured: false',
          schema: z.union([
            z.object({ configured: z.literal(false), detail: z.string() }),
            z.object({
              type: z.string(),
              configured: z.literal(true),
              model: z.string().nullable(),
              modelDigest: z
                .string()
                .nullable()
                .describe(
                  'The digest the runtime reported, when it did; else the configured one (see digest)',
                ),
              digest: z.object({
                configured: z.string().nullable(),
                observed: z.string().nullable(),
                source: z.string().nullable(),
                status: z.enum(['matches', 'mismatch', 'observed', 'configured_not_observed', 'unknown']),
                detail: z.string(),
              }),
              probe: z.object({
                reachable: z.boolean(),
                latencyMs: z.number().nullable(),
                modelListed: z.boolean().nullable(),
                reason: z.enum(probeReasons),
                detail: z.string().nullable(),
                at: z.string(),
              }),
              keyId: z.string(),
              signature: z.string(),
            }),
          ]),
        },
      },
      problems: { 503: ['signing_key_retired'] },
      handler: async () => {
        const key = serviceSigningKey();
        const proof = await cachedStatus('local-ai-runtime-proof', () => localAiRuntimeProof(key));
        return {
          status: 200,
          headers: { 'Cache-Control': 'no-store' },
          body: { ...proof, ...(proof.configured ? { publicKey: key.publicKey } : {}) },
        };
      },
    })
    .add({
      method: 'get',
      path: '/api/v1/privacy-execution-matrix',
      operationId: 'privacyExecutionMatrix',
      summary: 'Per feature: what is public, what is private, where it executes',
      tags,
      responses: {
        200: {
          description: 'The matrix',
          schema: z.object({
            places: z.array(z.enum(executionPlaces)),
            features: z.array(
              z.object({
                feature: z.string(),
                public: z.array(z.string()),
                private: z.array(z.string()),
                executes: z.array(z.enum(executionPlaces)),
                notes: z.string(),
              }),
            ),
          }),
        },
      },
      handler: async () => ({
        status: 200,
        body: { places: executionPlaces, features: privacyExecutionMatrix },
      }),
    })
    .add({
      method: 'get',
      path: '/api/v1/privacy-execution-claims',
      operationId: 'privacyExecutionClaims',
      summary: 'Index of privacy claims: how each is enforced and the test that checks it',
      tags,
      responses: {
        200: {
          description: 'The claims',
          schema: z.object({
            claims: z.array(
              z.object({
                id: z.string(),
                claim: z.string(),
                enforcement: z.string(),
                test: z.object({ file: z.string(), name: z.string() }),
              }),
            ),
          }),
        },
      },
      handler: async () => ({ status: 200, body: { claims: privacyClaims } }),
    })
    .add({
      method: 'get',
      path: '/api/v1/provider-integrations/status',
      operationId: 'providerIntegrationsStatus',
      summary: 'Every external provider: configured, reachable, latency',
      description:
        'Chain RPCs, the private-payments provider, the local AI runtime and the price source, probed in parallel with short timeouts. Each says configured, reachable, latency and a reason code; none names its endpoint.',
      tags,
      responses: {
        200: {
          description: 'One entry per provider',
          schema: z.object({
            providers: z.array(probeSchema.extend({ id: z.string(), kind: z.string() }).passthrough()),
            checkedAt: z.string(),
          }),
        },
      },
      handler: async () => ({
        status: 200,
        headers: { 'Cache-Control': 'no-store' },
        body: await cachedStatus('provider-integrations', () => providerIntegrations()),
      }),
    })
    .add({
      method: 'get',
      path: `/api/v1/${env.RPC_PROVIDER_SLUG}/stream/stats`,
      operationId: 'chainStreamStats',
      summary: 'Statistics of the chain event stream the worker follows',
      description:
        'Per followed network: last and head block (or slot), lag, events seen, blocks seen, reconnects, errors; and the latest events.',
      tags,
      responses: {
        200: {
          description: 'The follower statistics',
          schema: z.object({
            enabled: z.boolean(),
            detail: z.string().optional(),
            intervalMs: z.number().int(),
            followers: z.array(z.object({ network: z.string(), eventsSeen: z.number().int() }).passthrough()),
            recentEvents: z.array(z.object({ txRef: z.string() }).passthrough()),
          }),
        },
      },
      handler: async ({ deps }) => ({
        status: 200,
        headers: { 'Cache-Control': 'no-store' },
        body: await streamStats(deps.db),
      }),
    });
}
