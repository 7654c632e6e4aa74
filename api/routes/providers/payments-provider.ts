// The commercial table, the private-payments provider (/api/v1/<PAYMENTS_PROVIDER_SLUG>): its health and
// on-chain proof as it reports them, the wallet login challenge and its one-time redemption by the provider,
// and balances proxied with the caller's token from the provider's login.
import { z } from 'zod';
import {
  PROVIDER_SIGNATURE_HEADER,
  authenticateProvider,
  issueLoginChallenge,
  redeemLoginChallenge,
} from '../../../shared/providers/payments-login';
import { cachedStatus, probePaymentsProvider } from '../../../shared/providers/probes';
import {
  ProviderUnreachable,
  challengeTitle,
  loginChallenge,
  providerGet,
  providerLabel,
} from '../../../shared/providers/handoff';
import { env } from '../../../shared/platform/env';
import { AppError } from '../../../shared/platform/errors';
import { walletPublicKeySchema, walletSignatureSchema } from '../../../shared/platform/wallet';
import { bearerToken } from '../../http/auth';
import { origin } from '../../http/links';
import type { RouteTable } from '../../http/route';
import { probeSchema } from '../../views/providers';

/** The boolean members of the provider's own health answer (ok, mock, …): its strings may name addresses. */
const healthFlags = (body: unknown): Record<string, boolean> | null =>
  body && typeof body === 'object' && !Array.isArray(body)
    ? Object.fromEntries(
        Object.entries(body).filter(
          (e): e is [string, boolean] =>
            typeof e[1] === 'boolean' && /^[A-Za-z][A-Za-z0-9_]{0,39}$/.test(e[0]),
        ),
      )
    : null;

const unconfigured = (what: string) => ({
  configured: false,
  detail: `No private-payments provider is configured (PAYMENTS_PROVIDER_URL is unset); ${what} is not available.`,
});

function providerProblem(err: unknown): never {
  if (err instanceof ProviderUnreachable) throw new AppError(502, 'provider_unreachable', err.message);
  throw err;
}

export function paymentsProviderRoutes(table: RouteTable): RouteTable {
  const tags = ['Status'];
  const pp = `/api/v1/${env.PAYMENTS_PROVIDER_SLUG}`;
  return table
    .add({
      method: 'get',
      path: `${pp}/health`,
      operationId: 'paymentsProviderHealth',
      summary: 'Health of the private-payments runtime, from the provider',
      tags,
      responses: {
        200: {
          description: 'The provider answered healthy, or none is configured',
          schema: probeSchema.passthrough(),
        },
        503: {
          description: 'The provider is configured but unhealthy or unreachable',
          schema: probeSchema.passthrough(),
          headers: {
            'Retry-After': { description: 'Seconds before asking again', schema: { type: 'integer' } },
          },
        },
      },
      handler: async () => {
        if (!env.PAYMENTS_PROVIDER_URL)
          return {
            status: 200,
            body: {
              ...unconfigured('health'),
              reachable: null,
              latencyMs: null,
              reason: 'not_configured' as const,
            },
          };
        const { probe, healthy, provider } = await cachedStatus('payments-provider-health', async () => {
          const probe = await probePaymentsProvider();
          let provider: unknown = null;
          let healthy = false;
          if (probe.reachable) {
            const answer = await providerGet('/health').catch(() => undefined);
            healthy = !!answer && answer.status >= 200 && answer.status < 300;
            provider = answer?.body ?? null;
          }
          return { probe, healthy, provider: healthFlags(provider) };
        });
        return {
          status: healthy ? 200 : 503,
          headers: { 'Cache-Control': 'no-store', ...(healthy ? {} : { 'Retry-After': '10' }) },
          body: { ...probe, source: providerLabel(), healthy, provider },
        };
      },
    })
    .add({
      method: 'get',
      path: `${pp}/onchain-proof`,
      operationId: 'paymentsProviderOnchainProof',
      summary: 'The private-payments runtime’s on-chain proof reference, from the provider',
      tags,
      responses: {
        200: {
          description: 'The provider’s document, or configured: false',
          schema: z.object({ configured: z.boolean() }).passthrough(),
        },
      },
      handler: async () => {
        if (!env.PAYMENTS_PROVIDER_URL) return { status: 200, body: unconfigured('the on-chain proof') };
        const answer = await providerGet('/v1/onchain-proof').catch(providerProblem);
        if (answer.status < 200 || answer.status >= 300 || answer.body === null) {
          throw new AppError(
            502,
            'provider_error',
            `The provider answered HTTP ${answer.status} without a proof document.`,
          );
        }
        return {
          status: 200,
          headers: { 'Cache-Control': 'no-store' },
          body: {
            configured: true,
            source: providerLabel(),
            fetchedAt: new Date().toISOString(),
            latencyMs: answer.latencyMs,
            proof: answer.body,
          },
        };
      },
    })
    .add({
      method: 'get',
      path: `${pp}/challenge`,
      operationId: 'paymentsProviderChallenge',
      summary: 'The login challenge for a wallet (spec Authentication 3, field for field)',
      description:
        'Sign `challenge.challenge` with the wallet and post it to the provider’s login (see `next.login`); then query balances with the token. The title line carries a random nonce. The service records each challenge: the provider, authenticated by PAYMENTS_PROVIDER_SECRET, redeems it once (`…/challenge/redeem`) within LOGIN_CHALLENGE_TTL_SECONDS.',
      tags,
      query: z.strictObject({ wallet: walletPublicKeySchema }),
      responses: {
        200: {
          description: 'The challenge and the next steps',
          schema: z.object({
            ok: z.boolean(),
            source: z.string(),
            challenge: z.object({ challenge: z.string() }),
            next: z.object({ login: z.string(), privateBalance: z.string() }),
          }),
        },
      },
      problems: { 503: ['payments_provider_unconfigured', 'payments_provider_secret_unset'] },
      handler: async ({ query, req, deps }) => {
        if (!env.PAYMENTS_PROVIDER_URL) {
          throw new AppError(
            503,
            'payments_provider_unconfigured',
            'No private-payments provider is configured (PAYMENTS_PROVIDER_URL).',
          );
        }
        if (!env.PAYMENTS_PROVIDER_SECRET) {
          // A challenge nobody could redeem would only waste the caller's signature.
          throw new AppError(
            503,
            'payments_provider_secret_unset',
            'The provider cannot redeem login challenges: PAYMENTS_PROVIDER_SECRET is not configured.',
          );
        }
        const ttlSeconds = env.LOGIN_CHALLENGE_TTL_SECONDS;
        const { challenge } = await issueLoginChallenge(deps.db, query.wallet, {
          title: challengeTitle(),
          ttlSeconds,
        });
        return {
          status: 200,
          headers: { 'Cache-Control': 'no-store' },
          body: loginChallenge({ challenge, wallet: query.wallet, ttlSeconds }, origin(req, deps, 'api')),
        };
      },
    })
    .add({
      method: 'post',
      path: `${pp}/challenge/redeem`,
      operationId: 'paymentsProviderRedeemChallenge',
      summary: 'For the provider: redeem a wallet-signed login challenge once, before it expires',
      description: `Only the provider may call this, while handling a login, after its own checks: the request carries \`${PROVIDER_SIGNATURE_HEADER}: t=<unix seconds>,v1=<hex>\`, an HMAC-SHA256 under PAYMENTS_PROVIDER_SECRET over \`proof-exchange/challenge-redeem/v1\\n<t>\\n<canonical JSON of the body>\` (5 minutes either side). 200 means the service issued this exact text to this wallet, the wallet's signature over it verifies (checked here again; nothing of it is stored), and it had not been redeemed nor expired; it is now spent. Anything else is a refusal: log the wallet in only on 200.`,
      tags,
      body: z.strictObject({
        wallet: walletPublicKeySchema,
        challenge: z.string().min(1).max(1000).describe('The challenge text, exactly as issued'),
        signature: walletSignatureSchema,
      }),
      responses: {
        200: {
          description: 'Redeemed: the login may proceed',
          schema: z.object({
            ok: z.literal(true),
            wallet: z.string(),
            issuedAt: z.string(),
            expiresAt: z.string(),
            redeemedAt: z.string(),
          }),
        },
        401: { description: 'The provider did not authenticate, or the wallet signature does not verify' },
        404: { description: 'Not issued to this wallet, or altered' },
        409: { description: 'Already used, or expired' },
        503: { description: 'No provider can redeem: PAYMENTS_PROVIDER_SECRET is not configured' },
      },
      problems: {
        401: ['provider_unauthenticated', 'challenge_signature_invalid'],
        404: ['challenge_unknown'],
        409: ['challenge_used', 'challenge_expired'],
        503: ['payments_provider_secret_unset'],
      },
      handler: async ({ body, req, deps }) => {
        authenticateProvider(env.PAYMENTS_PROVIDER_SECRET, req.header(PROVIDER_SIGNATURE_HEADER), body);
        return {
          status: 200,
          headers: { 'Cache-Control': 'no-store' },
          body: { ok: true, ...(await redeemLoginChallenge(deps.db, body)) },
        };
      },
    })
    .add({
      method: 'get',
      path: `${pp}/balances/{wallet}`,
      operationId: 'paymentsProviderBalances',
      summary: 'The private balance of a wallet, proxied to the provider with the caller’s Bearer token',
      tags,
      auth: 'provider-token',
      params: z.strictObject({ wallet: walletPublicKeySchema }),
      query: z.strictObject({ mint: walletPublicKeySchema.optional().describe('Token mint (base58)') }),
      responses: {
        200: {
          description: 'The provider’s balance answer, as it gave it',
          schema: z.object({}).passthrough(),
        },
        401: { description: 'No Bearer token, or the provider refused it (`providerReason` says why)' },
      },
      problems: {
        404: ['not_found'],
        502: ['provider_error', 'provider_unreachable'],
        503: ['payments_provider_unconfigured'],
      },
      handler: async ({ params, query, req }) => {
        if (!env.PAYMENTS_PROVIDER_URL) {
          throw new AppError(
            503,
            'payments_provider_unconfigured',
            'No private-payments provider is configured (PAYMENTS_PROVIDER_URL).',
          );
        }
        // Required by the route's auth mode; the provider alone can tell whether it is valid.
        const token = bearerToken(req)!;
        const path = `/v1/spl/balances/${params.wallet}${query.mint ? `?mint=${query.mint}` : ''}`;
        const answer = await providerGet(path, { bearer: token }).catch(providerProblem);
        if (answer.status === 401 || answer.status === 403) {
          // The provider's reason (token_expired, token_invalid, …) tells the caller whether to log in again.
          const reason = (answer.body as { error?: unknown } | null)?.error;
          throw new AppError(401, 'unauthorized', 'The provider refused the access token; log in again.', {
            headers: { 'WWW-Authenticate': 'Bearer' },
            ...(typeof reason === 'string' && /^[a-z_]{1,64}$/.test(reason)
              ? { extra: { providerReason: reason } }
              : {}),
          });
        }
        if (answer.status === 404)
          throw new AppError(404, 'not_found', 'The provider has no balance for this wallet.');
        if (
          answer.status < 200 ||
          answer.status >= 300 ||
          answer.body === null ||
          typeof answer.body !== 'object'
        ) {
          throw new AppError(502, 'provider_error', `The provider answered HTTP ${answer.status}.`);
        }
        return { status: 200, headers: { 'Cache-Control': 'no-store, private' }, body: answer.body };
      },
    });
}
