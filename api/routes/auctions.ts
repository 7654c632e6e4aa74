// Table C, sealed auctions: create (rules stated up front), sealed bids, reveals, finalization, the
// public view (status and time remaining until finalized), packages and verification.
import { z } from 'zod';
import { walletPublicKeySchema, walletSignatureSchema } from '../../shared/platform/wallet';
import { idPattern } from '../../shared/platform/ids';
import { auctionPackageSchema, verifyAuctionPackage } from '../../shared/auctions/package';
import {
  auctionPackage,
  createAuction,
  finalizeAuctionNow,
  placeBid,
  publicAuction,
  revealBid,
} from '../../shared/auctions/auctions';
import { verifyUnderServiceTrust } from '../../shared/workflows/verify';
import { bundleSchema } from '../../shared/platform/translog/bundle';
import { bundleOf } from '../../shared/workflows/bundle';
import type { RouteTable } from '../http/route';
import { ownerOf } from '../http/callers';
import { sealedAction } from '../http/request-log';
import { hex64, roomIdSchema, signingKey } from '../views/governance';

const tags = ['Sealed auctions'];
const auctionIdSchema = z.string().regex(idPattern('auc'), 'an auction id (auc_…)');
const amountSchema = z.string().regex(/^(0|[1-9]\d{0,77})$/, 'base units, as a decimal string');

export const publicAuctionSchema = z
  .object({
    auctionId: z.string(),
    title: z.string(),
    visibility: z.enum(['public', 'private-room']),
    asset: z.string(),
    pricing: z.enum(['first', 'second']),
    reserve: z.string(),
    biddingEndsAt: z.string(),
    revealEndsAt: z.string(),
    unrevealedDeposit: z.enum(['refunded', 'forfeited']),
    rules: z.record(z.string(), z.string()),
    status: z.enum(['bidding', 'reveal', 'finalized']),
    timeRemainingSeconds: z.number().int(),
    result: z
      .object({
        winner: z.string().nullable(),
        price: z.string().nullable(),
        reason: z.string(),
        counts: z.record(z.string(), z.number().int()),
        proofId: z.string(),
        commitmentsRoot: hex64,
        revealsRoot: hex64,
      })
      .nullable(),
  })
  .meta({
    id: 'PublicAuction',
    description:
      'Until finalized: the stated rules, status and time remaining; nothing about bids, not even their number.',
  });

export function auctionRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'post',
      path: '/api/auctions',
      operationId: 'createAuction',
      summary: 'Create a sealed-bid auction (first or second price), public or for one room’s members',
      tags,
      auth: 'operator-or-license',
      product: 'auctions',
      quota: true,
      body: z.strictObject({
        title: z.string().min(1).max(300),
        roomId: roomIdSchema.optional(),
        pricing: z.enum(['first', 'second']),
        asset: z.string().min(1).max(40),
        reserve: amountSchema.optional(),
        unrevealedDeposit: z.enum(['refunded', 'forfeited']).optional(),
        biddingEndsAt: z.iso.datetime(),
        revealEndsAt: z.iso.datetime(),
      }),
      responses: {
        201: { description: 'The auction’s public view, rules included', schema: publicAuctionSchema },
      },
      problems: { 404: ['not_found'], 422: ['reveal_window', 'unknown_asset'] },
      handler: async ({ body, auth, deps }) => ({
        status: 201,
        body: await createAuction(
          deps.db,
          { ...body, biddingEndsAt: new Date(body.biddingEndsAt), revealEndsAt: new Date(body.revealEndsAt) },
          ownerOf(auth),
        ),
      }),
    })
    .add({
      method: 'get',
      path: '/api/auctions/{auctionId}',
      operationId: 'getAuction',
      summary: 'An auction’s public view; finalized on the first read after the reveal window',
      tags,
      params: z.strictObject({ auctionId: auctionIdSchema }),
      responses: { 200: { description: 'The public view', schema: publicAuctionSchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps }) => ({
        status: 200,
        body: await publicAuction(deps.db, params.auctionId),
      }),
    })
    .add({
      method: 'post',
      path: '/api/auctions/{auctionId}/bids',
      operationId: 'placeAuctionBid',
      summary: 'Place a sealed bid: commitment = sha256(canonical JSON [amount, salt, bidder])',
      description:
        'Sign `proof-exchange/auction/bid/v1\\nauction:<id>\\ncommitment:<commitment>\\ndeposit:<depositRef>` with the bidder wallet. One bid per wallet.',
      tags,
      params: z.strictObject({ auctionId: auctionIdSchema }),
      body: z.strictObject({
        bidder: walletPublicKeySchema,
        commitment: hex64,
        depositRef: z.string().min(1).max(200),
        signature: walletSignatureSchema,
      }),
      responses: {
        201: {
          description: 'The recorded commitment',
          schema: z.object({
            bidId: z.string(),
            auctionId: z.string(),
            commitment: hex64,
            committedAt: z.string(),
          }),
        },
      },
      problems: {
        403: ['not_a_member', 'signature_invalid'],
        404: ['not_found'],
        409: ['already_bid', 'bidding_closed'],
      },
      handler: async ({ params, body, res, deps }) => {
        sealedAction(res);
        return { status: 201, body: await placeBid(deps.db, params.auctionId, body) };
      },
    })
    .add({
      method: 'post',
      path: '/api/auctions/{auctionId}/reveals',
      operationId: 'revealAuctionBid',
      summary: 'Reveal a bid’s amount and salt (late reveals are recorded as late until finalization)',
      tags,
      params: z.strictObject({ auctionId: auctionIdSchema }),
      body: z.strictObject({ bidder: walletPublicKeySchema, amount: amountSchema, salt: hex64 }),
      responses: {
        200: {
          description: 'The reveal as recorded',
          schema: z.object({
            auctionId: z.string(),
            commitment: hex64,
            revealedAt: z.string(),
            late: z.boolean(),
          }),
        },
      },
      problems: {
        404: ['not_found'],
        409: ['already_revealed', 'auction_finalized', 'reveal_not_open'],
        422: ['reveal_mismatch'],
      },
      handler: async ({ params, body, res, deps }) => {
        sealedAction(res);
        return { status: 200, body: await revealBid(deps.db, params.auctionId, body) };
      },
    })
    .add({
      method: 'post',
      path: '/api/auctions/{auctionId}/finalize',
      operationId: 'finalizeAuction',
      summary: 'Finalize an auction whose reveal window has passed and publish its package',
      tags,
      auth: 'operator-or-license',
      product: 'auctions',
      params: z.strictObject({ auctionId: auctionIdSchema }),
      responses: { 200: { description: 'The finalized public view', schema: publicAuctionSchema } },
      problems: { 404: ['not_found'], 409: ['auction_open'], 503: ['signing_key_retired'] },
      handler: async ({ params, auth, deps }) => ({
        status: 200,
        body: await finalizeAuctionNow(deps.db, params.auctionId, ownerOf(auth)),
      }),
    })
    .add({
      method: 'get',
      path: '/api/auctions/{auctionId}/package',
      operationId: 'getAuctionPackage',
      summary: 'The finalized auction’s proof package',
      tags,
      params: z.strictObject({ auctionId: auctionIdSchema }),
      responses: { 200: { description: 'The package', schema: auctionPackageSchema } },
      problems: { 404: ['not_found'], 409: ['not_published'] },
      handler: async ({ params, deps }) => ({
        status: 200,
        body: await auctionPackage(deps.db, params.auctionId),
      }),
    })
    .add({
      method: 'get',
      path: '/api/auctions/{auctionId}/bundle',
      operationId: 'getAuctionBundle',
      summary: 'The finalized auction’s package as an offline bundle (the package and its tlog proof)',
      tags,
      params: z.strictObject({ auctionId: auctionIdSchema }),
      responses: { 200: { description: 'The bundle, for npm run verify', schema: bundleSchema } },
      problems: { 404: ['not_found'], 409: ['not_published', 'checkpoint_pending'] },
      handler: async ({ params, deps }) => ({
        status: 200,
        headers: { 'Cache-Control': 'no-cache' },
        body: await bundleOf(deps.db, await auctionPackage(deps.db, params.auctionId)),
      }),
    })
    .add({
      method: 'post',
      path: '/api/auctions/verify',
      operationId: 'verifyAuctionPackage',
      summary: 'Verify an auction package: reveals open their commitments, Merkle roots, outcome, signature',
      tags,
      body: z.strictObject({ package: z.record(z.string(), z.unknown()) }),
      responses: {
        200: {
          description: 'The verdict',
          schema: z.object({
            valid: z.boolean(),
            signatureValid: z.boolean(),
            inclusionValid: z.boolean().optional(),
            revealsValid: z.boolean(),
            rootsValid: z.boolean(),
            outcomeValid: z.boolean(),
            recomputedOutcome: z.record(z.string(), z.unknown()).optional(),
            reasons: z.array(z.object({ check: z.string(), code: z.string(), detail: z.string() })),
            signingKey: z.object({ keyId: z.string(), publicKey: z.string() }),
          }),
        },
      },
      handler: async ({ body, deps }) => {
        const verdict = await verifyUnderServiceTrust(deps.db, body.package, (trust, opts) =>
          verifyAuctionPackage(body.package, trust, opts),
        );
        return { status: 200, body: { ...verdict, signingKey: signingKey() } };
      },
    });
}
