// Table B checkout and payment-gate routes (/api/v1), and the license key resolver (lk_…) that lets a
// license act as a Bearer credential on operator-or-license routes.
import { z } from 'zod';
import {
  checkoutSettlements,
  checkoutStatuses,
  checkoutView,
  getCheckout,
  prepareCheckout,
  resolveLicenseToken,
  submitCheckoutPayment,
} from '../../shared/commercial/checkouts';
import type { LicenseRow } from '../../shared/commercial/checkouts';
import { AppError } from '../../shared/errors';
import {
  gateOverview,
  gateStatuses,
  gateView,
  getGateRequest,
  prepareGateRequest,
  verifyGateRequest,
} from '../../shared/commercial/gate';
import { licenseUsage } from '../../shared/commercial/entitlements';
import {
  licenseTiers,
  licenseTypes,
  productLines,
  tierEntitlements,
  trialTerms,
} from '../../shared/commercial/tiers';
import { issueTrialChallenge, trialAddressKey } from '../../shared/commercial/trials';
import { env } from '../../shared/env';
import { walletPublicKeySchema, walletSignatureSchema } from '../../shared/exchange/wallet';
import { idPattern } from '../../shared/ids';
import { serviceSigningKey } from '../../shared/keys';
import { assetIds, canReceive, chainFamilies } from '../../shared/payments/assets';
import { assetAvailability } from '../../shared/payments/payments';
import { registerKeyResolver } from '../http/auth';
import { clientAddress } from '../http/ratelimit';
import { origin } from '../http/links';
import type { RouteTable } from '../http/route';
import { bindingSchema, paymentInstructionsSchema } from './payments';

registerKeyResolver('lk_', (token, deps) => resolveLicenseToken(deps.db, token));

const baseUnits = z.string().regex(/^\d+$/).describe('Integer base units of the asset');
const checkoutId = z.string().regex(idPattern('chk'), 'a checkout id (chk_…)');
const gateId = z.string().regex(idPattern('gate'), 'a payment gate request id (gate_…)');
const txRef = z
  .string()
  .min(1)
  .max(200)
  .describe('Transaction id: EVM hash, Bitcoin/Monero txid, Solana signature');

const licenseSchema = z
  .object({
    id: z.string(),
    tier: z.enum(licenseTypes),
    organization: z.string(),
    periodDays: z.number().int(),
    issuedAt: z.string(),
    expiresAt: z.string(),
    revoked: z.boolean(),
    token: z.string().describe('The license key: send it as Authorization: Bearer lk_…'),
    keyId: z.string(),
    verification: z.object({ publicKey: z.string(), format: z.string() }),
  })
  .meta({ id: 'License' });

const checkoutSchema = z
  .object({
    id: z.string(),
    licenseType: z.enum(licenseTypes),
    organization: z.string(),
    status: z.enum(checkoutStatuses),
    settlement: z.enum(checkoutSettlements).nullable(),
    reason: z.string().nullable(),
    detail: z.string().nullable(),
    usdCents: z.number().int(),
    payment: z
      .object({
        asset: z.enum(assetIds),
        network: z.string(),
        amount: baseUnits,
        amountDisplay: z.string(),
        decimals: z.number().int(),
        contract: z.string().optional(),
        payTo: z.string(),
        reference: z.string(),
        rate: z.object({ usd: z.string(), asOf: z.string(), source: z.string() }).optional(),
        binding: bindingSchema.optional(),
        expiresAt: z.string(),
        watchUntil: z.string(),
        paymentInstructions: paymentInstructionsSchema,
      })
      .nullable(),
    transaction: z
      .object({
        txRef: z.string(),
        payer: z.string().nullable(),
        amountReceived: baseUnits.nullable(),
        confirmations: z.number().int().nullable(),
        blockTime: z.string().nullable().describe('When the chain says the transfer was made'),
        submittedAt: z.string().nullable(),
        nextCheckAt: z.string().nullable(),
      })
      .nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    settledAt: z.string().nullable(),
    license: licenseSchema.nullable(),
  })
  .meta({ id: 'Checkout', description: 'A license checkout; the buyer’s email is never shown.' });

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

const links = (api: string) => ({
  prepare: `${api}/api/v1/commercial/checkout/prepare`,
  verify: `${api}/api/v1/commercial/checkout/verify`,
  status: `${api}/api/v1/commercial/checkout/status`,
});

export function checkoutRoutes(table: RouteTable): RouteTable {
  const tags = ['Commercial'];
  return table
    .add({
      method: 'get',
      path: '/api/v1/commercial/checkout/status',
      operationId: 'checkoutStatus',
      summary: 'One checkout and its license, or what can be bought and paid with',
      description:
        'With `checkoutId`: the checkout, its payment state and, once issued, its license (the checkout id is the buyer’s handle: keep it private). Without: license tiers and prices, enabled assets, and which treasuries are configured.',
      tags,
      query: z.strictObject({ checkoutId: checkoutId.optional() }),
      responses: {
        200: {
          description: 'The checkout, or the catalogue',
          schema: z.union([
            z.object({ checkout: checkoutSchema }),
            z.object({
              tiers: z.array(
                z
                  .object({
                    type: z.enum(licenseTypes),
                    priceUsdCents: z.number().int(),
                    periodDays: z.number().int(),
                  })
                  .passthrough(),
              ),
              trial: z.object({
                days: z.number().int(),
                perOrganization: z.number().int(),
                perWallet: z.number().int(),
                detail: z.string(),
              }),
              assets: z.array(z.object({ id: z.enum(assetIds), enabled: z.boolean() }).passthrough()),
              treasuries: z.record(z.string(), z.boolean()),
              licenseKey: z.object({ keyId: z.string(), publicKey: z.string() }),
            }),
          ]),
        },
      },
      problems: { 404: ['not_found'], 503: ['asset_config_invalid'] },
      handler: async ({ query, deps }) => {
        if (query.checkoutId) {
          const { checkout, license } = await getCheckout(deps.db, query.checkoutId);
          return {
            status: 200,
            headers: { 'Cache-Control': 'no-store' },
            body: { checkout: checkoutView(checkout, license) },
          };
        }
        const key = serviceSigningKey();
        return {
          status: 200,
          body: {
            tiers: licenseTiers(),
            trial: trialTerms,
            assets: (await assetAvailability()).map((s) => ({
              id: s.asset.id,
              symbol: s.asset.symbol,
              network: s.asset.network,
              decimals: s.asset.decimals,
              enabled: s.enabled,
              ...(s.enabled ? {} : { reason: s.reason, detail: s.detail }),
            })),
            treasuries: Object.fromEntries(chainFamilies.map((f) => [f, canReceive(f)])),
            licenseKey: { keyId: key.keyId, publicKey: key.publicKey },
          },
        };
      },
    })
    .add({
      method: 'post',
      path: '/api/v1/commercial/checkout/prepare',
      operationId: 'prepareCheckout',
      summary: 'Prepare a license checkout (a TRIAL license is issued at once)',
      description:
        'Paid tiers answer the amount in the chosen asset (base units), the receiving address, the reference and the expiry; pay, then call verify. `TRIAL` needs no asset: it is claimed with `wallet`, a `challenge` from POST /api/v1/commercial/trial/challenge and the wallet’s `signature` over it, and issues a 14-day license at once — once per wallet and per organization (409 trial_already_used), a few per address a day (429 trial_limit_reached). A trial carries no exchange credit: priced jobs are quoted.',
      tags,
      body: z.strictObject({
        license: z.enum(licenseTypes),
        asset: z.enum(assetIds).optional().describe('Required for paid licenses'),
        organization: z.string().trim().min(1).max(200),
        email: z.email().max(254).describe('Kept with the license record; never shown on public replies'),
        wallet: walletPublicKeySchema.optional().describe('TRIAL: the wallet that claims it'),
        challenge: z
          .string()
          .min(1)
          .max(1000)
          .optional()
          .describe('TRIAL: the challenge text, exactly as issued'),
        signature: walletSignatureSchema
          .optional()
          .describe('TRIAL: the wallet’s ed25519 signature over the text'),
      }),
      responses: {
        201: {
          description: 'The checkout (with its license for a TRIAL)',
          schema: z.object({ checkout: checkoutSchema, links: z.record(z.string(), z.string()) }),
          headers: {
            Location: {
              description: 'The checkout’s address (checkoutStatus with its checkoutId)',
              required: true,
              schema: { type: 'string' },
            },
          },
        },
      },
      problems: {
        401: ['wallet_signature_invalid'],
        404: ['challenge_unknown'],
        409: ['challenge_expired', 'challenge_used', 'trial_already_used'],
        422: ['asset_required', 'asset_unavailable'],
        429: ['trial_limit_reached'],
        503: ['asset_config_invalid'],
      },
      handler: async ({ body, req, deps }) => {
        const { wallet, challenge, signature, ...rest } = body;
        const { checkout, license } = await prepareCheckout(deps.db, {
          ...rest,
          trial:
            wallet && challenge && signature
              ? {
                  proof: { wallet, challenge, signature },
                  addressKey: trialAddressKey(clientAddress(req)),
                  perAddressPerDay: env.TRIAL_PER_ADDRESS_PER_DAY,
                }
              : undefined,
        });
        const api = origin(req, deps, 'api');
        return {
          status: 201,
          headers: { Location: `${links(api).status}?checkoutId=${checkout.id}` },
          body: {
            checkout: checkoutView(checkout, license),
            links: { ...links(api), self: `${links(api).status}?checkoutId=${checkout.id}` },
          },
        };
      },
    })
    .add({
      method: 'get',
      path: '/api/v1/commercial/license',
      operationId: 'licenseEntitlements',
      summary: 'The calling license: its tier, what it grants, the quota used and the credit left',
      tags,
      auth: 'operator-or-license',
      responses: {
        200: {
          description: 'The license’s entitlements and usage',
          schema: z.object({
            licenseId: z.string(),
            tier: z.enum(licenseTypes),
            organization: z.string(),
            expiresAt: z.string(),
            productLines: z.array(z.enum(productLines)),
            usage: z.array(
              z.object({
                line: z.enum(productLines),
                unit: z.string(),
                quota: z.number().int().nullable(),
                used: z.number().int(),
                left: z.number().int().nullable(),
              }),
            ),
            creditUsdCents: z.number().int(),
          }),
        },
      },
      problems: { 400: ['license_required'] },
      handler: async ({ auth, deps }) => {
        if (auth.kind !== 'license') {
          throw new AppError(
            400,
            'license_required',
            'Send a license key (Bearer lk_…): the operator holds none.',
          );
        }
        const row = (await deps.db('licenses').where({ id: auth.licenseId }).first()) as LicenseRow;
        return {
          status: 200,
          headers: { 'Cache-Control': 'no-store' },
          body: {
            licenseId: row.id,
            tier: row.tier,
            organization: row.organization,
            expiresAt: new Date(row.expires_at).toISOString(),
            productLines: [...tierEntitlements[row.tier].productLines],
            usage: await licenseUsage(deps.db, auth),
            creditUsdCents: row.credit_usd_cents,
          },
        };
      },
    })
    .add({
      method: 'post',
      path: '/api/v1/commercial/trial/challenge',
      operationId: 'trialChallenge',
      summary: 'A challenge for a wallet to sign to claim a TRIAL license',
      description: `The text names the wallet, a random nonce, and when it was issued and expires (${env.TRIAL_CHALLENGE_TTL_SECONDS} s). Sign its UTF-8 bytes with the wallet (ed25519, as Solana wallets sign messages) and send wallet, challenge and signature with a TRIAL checkout/prepare. A challenge claims at most one trial.`,
      tags,
      // Each challenge is a row: a caller gets a few a minute, enough for any honest claim.
      budget: { name: 'trial-challenge', perMinute: () => 30, what: 'trial challenges from this address' },
      body: z.strictObject({ wallet: walletPublicKeySchema }),
      responses: {
        201: {
          description: 'The challenge to sign',
          schema: z.object({
            wallet: z.string(),
            challenge: z.string(),
            nonce: z.string(),
            issuedAt: z.string(),
            expiresAt: z.string(),
          }),
        },
      },
      handler: async ({ body, deps }) => {
        const issued = await issueTrialChallenge(deps.db, body.wallet, {
          ttlSeconds: env.TRIAL_CHALLENGE_TTL_SECONDS,
        });
        return {
          status: 201,
          headers: { 'Cache-Control': 'no-store' },
          body: {
            wallet: body.wallet,
            challenge: issued.challenge,
            nonce: issued.nonce,
            issuedAt: issued.issuedAt.toISOString(),
            expiresAt: issued.expiresAt.toISOString(),
          },
        };
      },
    })
    .add({
      method: 'post',
      path: '/api/v1/commercial/checkout/verify',
      operationId: 'verifyCheckout',
      summary: 'Submit the transfer that pays a checkout; verified on chain by a worker',
      description:
        'Queues the verification (202). Poll the status route: a confirmed checkout carries its signed license. The same transfer again is harmless; another transfer while one is being verified is 409.',
      tags,
      body: z.strictObject({
        checkoutId,
        txRef,
        txKey: z.string().max(128).optional().describe('Monero only: the transaction key'),
      }),
      responses: {
        202: { description: 'Queued for verification', schema: z.object({ checkout: checkoutSchema }) },
      },
      problems: {
        404: ['not_found'],
        409: [
          'checkout_already_paid',
          'checkout_expired',
          'checkout_not_payable',
          'checkout_verifying',
          'payment_already_claimed',
        ],
      },
      handler: async ({ body, deps }) => {
        const { checkout } = await submitCheckoutPayment(deps.db, deps.queues, body);
        return { status: 202, body: { checkout: checkoutView(checkout) } };
      },
    })
    .add({
      method: 'get',
      path: '/api/v1/payment-gate/random/status',
      operationId: 'paymentGateStatus',
      summary: 'One payment-gate request, or the gate’s settings and open requests per asset',
      tags,
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
      handler: async ({ query, deps }) => {
        if (query.requestId) {
          return {
            status: 200,
            headers: { 'Cache-Control': 'no-store' },
            body: { request: gateView(await getGateRequest(deps.db, query.requestId)) },
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
        'Give `baseAmount` (base units) or `usdCents`. No two open requests share an amount, so the transfer needs no memo.',
      tags,
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
      responses: { 201: { description: 'The reserved request', schema: z.object({ request: gateSchema }) } },
      problems: { 422: ['asset_unavailable'], 503: ['gate_amounts_exhausted', 'asset_config_invalid'] },
      handler: async ({ body, deps }) => {
        const row = await prepareGateRequest(deps.db, body);
        return { status: 201, body: { request: gateView(row) } };
      },
    })
    .add({
      method: 'post',
      path: '/api/v1/payment-gate/random/verify',
      operationId: 'paymentGateVerify',
      summary: 'Match a transfer to a request by its exact amount and the treasury address',
      tags,
      body: z.strictObject({ requestId: gateId, txRef }),
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
      handler: async ({ body, deps }) => {
        const { request, verification } = await verifyGateRequest(deps.db, body);
        return { status: 200, body: { request: gateView(request), verification } };
      },
    });
}
