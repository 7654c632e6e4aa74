// The commercial table, a license checkout (/api/v1/commercial/checkout): the catalogue or one checkout,
// prepare (a TRIAL's license issued at once), and the transfer that pays it. A checkout is opened by the
// capability its prepare returned once (Bearer cs_…), never by its id alone.
import { z } from 'zod';
import { checkoutSettlements, checkoutStatuses } from '../../../shared/licensing/rows';
import { getCheckout } from '../../../shared/licensing/checkouts';
import { checkoutView } from '../../../shared/licensing/views';
import { prepareCheckout } from '../../../shared/licensing/prepare';
import { submitCheckoutPayment } from '../../../shared/licensing/verify';
import { licenseTiers, licenseTypes, trialTerms } from '../../../shared/licensing/tiers';
import { trialAddressKey } from '../../../shared/licensing/trials';
import { env } from '../../../shared/platform/env';
import { walletPublicKeySchema, walletSignatureSchema } from '../../../shared/platform/wallet';
import { idPattern } from '../../../shared/platform/ids';
import { serviceSigningKey } from '../../../shared/platform/keys';
import { assetIds, canReceive, chainFamilies } from '../../../shared/chains/assets';
import { assetAvailability } from '../../../shared/payments/availability';
import { amountHolder, clientAddress } from '../../http/ratelimit';
import { origin } from '../../http/links';
import type { RouteTable } from '../../http/route';
import { baseUnits, bindingSchema, paymentInstructionsSchema, txRefSchema } from '../../views/payments';

const checkoutId = z.string().regex(idPattern('chk'), 'a checkout id (chk_…)');

const licenseSchema = z
  .object({
    id: z.string(),
    tier: z.enum(licenseTypes),
    organization: z.string(),
    periodDays: z.number().int(),
    issuedAt: z.string(),
    expiresAt: z.string(),
    revoked: z.boolean(),
    token: z
      .string()
      .describe(
        'The license key: send it as Authorization: Bearer lk_… Shown only to the holder of the checkout’s client secret; the service keeps only its hash.',
      ),
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

const links = (api: string) => ({
  prepare: `${api}/api/v1/commercial/checkout/prepare`,
  verify: `${api}/api/v1/commercial/checkout/verify`,
  status: `${api}/api/v1/commercial/checkout/status`,
});

/** Reading a checkout (or the catalogue) and preparing one. */
export function checkoutRoutes(table: RouteTable): RouteTable {
  const tags = ['Commercial'];
  return table
    .add({
      method: 'get',
      path: '/api/v1/commercial/checkout/status',
      operationId: 'checkoutStatus',
      summary: 'One checkout and its license, or what can be bought and paid with',
      description:
        'With `checkoutId` and the checkout’s client secret as `Authorization: Bearer cs_…`: the checkout, its payment state and, once issued, its license and license key. Without the secret (or with another) the checkout is 404, as one that does not exist. Without `checkoutId`: license tiers and prices, enabled assets, and which treasuries are configured (public).',
      tags,
      capability: 'checkout',
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
      handler: async ({ query, capability, deps }) => {
        if (query.checkoutId) {
          const { checkout, issued } = await getCheckout(deps.db, query.checkoutId, capability);
          return {
            status: 200,
            headers: { 'Cache-Control': 'no-store' },
            body: { checkout: checkoutView(checkout, issued) },
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
        'Answers the checkout and its `clientSecret` (cs_…), shown once and stored only as a hash: send it as `Authorization: Bearer cs_…` to read the checkout (and its license key once issued) and to submit its payment. Paid tiers answer the amount in the chosen asset (base units), the receiving address, the reference and the expiry; pay, then call verify. `TRIAL` needs no asset: it is claimed with `wallet`, a `challenge` from POST /api/v1/commercial/trial/challenge and the wallet’s `signature` over it, and issues a 14-day license at once — once per wallet and per organization (409 trial_already_used), a few per address a day (429 trial_limit_reached). A trial carries no exchange credit: priced jobs are quoted.',
      tags,
      secretReply: true,
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
          description: 'The checkout (with its license and license key for a TRIAL) and its client secret',
          schema: z.object({
            checkout: checkoutSchema,
            clientSecret: z
              .string()
              .describe(
                'The checkout’s client secret (cs_…), shown once: it alone opens the checkout (status, verify) and shows its license key. Keep it; it cannot be shown again.',
              ),
            links: z.record(z.string(), z.string()),
          }),
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
        429: ['trial_limit_reached', 'too_many_open_quotes'],
        503: ['asset_config_invalid', 'amounts_exhausted', 'signing_key_retired'],
      },
      handler: async ({ body, auth, req, deps }) => {
        const { wallet, challenge, signature, ...rest } = body;
        const { checkout, clientSecret, issued } = await prepareCheckout(deps.db, {
          ...rest,
          holder: amountHolder(auth, req),
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
          headers: {
            Location: `${links(api).status}?checkoutId=${checkout.id}`,
            'Cache-Control': 'no-store',
          },
          body: {
            checkout: checkoutView(checkout, issued),
            clientSecret,
            links: { ...links(api), self: `${links(api).status}?checkoutId=${checkout.id}` },
          },
        };
      },
    });
}

/** Paying a checkout: the transfer, verified by a worker. */
export function checkoutPaymentRoutes(table: RouteTable): RouteTable {
  const tags = ['Commercial'];
  return table.add({
    method: 'post',
    path: '/api/v1/commercial/checkout/verify',
    operationId: 'verifyCheckout',
    summary: 'Submit the transfer that pays a checkout; verified on chain by a worker',
    description:
      'Needs the checkout’s client secret as `Authorization: Bearer cs_…` (without it, or with another, the checkout is 404 and nothing is written). Queues the verification (202). Poll the status route with the secret: a confirmed checkout carries its signed license and key. The same transfer again is harmless; another transfer while one is being verified is 409.',
    tags,
    capability: 'checkout',
    body: z.strictObject({
      checkoutId,
      txRef: txRefSchema,
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
    handler: async ({ body, capability, deps }) => {
      const { checkout } = await submitCheckoutPayment(deps.db, deps.queues, {
        ...body,
        clientSecret: capability,
      });
      return { status: 202, body: { checkout: checkoutView(checkout) } };
    },
  });
}
