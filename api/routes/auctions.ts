// The site table, sealed auctions: create (rules stated up front), sealed bids, reveals, finalization, the
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
import { sealedBids, submitAuctionDecryption } from '../../shared/auctions/trustee-reveal';
import { MAX_TRUSTEES, THRESHOLD_BALLOT_BYTES } from '../../shared/governance/threshold';
import { packageRoutes, verifyRoute } from '../http/package-routes';
import type { RouteTable } from '../http/route';
import { ownerOf } from '../http/callers';
import { sealedAction } from '../http/request-log';
import { hex64, roomIdSchema } from '../views/governance';

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
    status: z
      .enum(['bidding', 'reveal', 'awaiting_trustees', 'finalized'])
      .describe(
        '`awaiting_trustees`: past the reveal window, until the room’s trustees open the sealed bids',
      ),
    timeRemainingSeconds: z.number().int(),
    trustees: z
      .object({ jointKey: z.string(), threshold: z.number().int(), ceremony: z.string() })
      .optional()
      .describe('When the room’s trustees reveal the bids: the key a bid’s opening is sealed to'),
    trusteesDecrypted: z.number().int().optional(),
    trusteesNeeded: z.number().int().optional(),
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
  table
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
        revealBy: z
          .enum(['bidders', 'trustees'])
          .optional()
          .describe(
            '`trustees`: each bid carries its opening sealed to the room’s trustees, who open every bid after the reveal window (no bidder can withhold a reveal); needs a room whose trustees’ ceremony has ended',
          ),
      }),
      responses: {
        201: { description: 'The auction’s public view, rules included', schema: publicAuctionSchema },
      },
      problems: {
        404: ['not_found'],
        409: ['trustees_not_ready'],
        422: ['reveal_window', 'unknown_asset', 'room_required'],
      },
      handler: async ({ body, auth, deps }) => ({
        status: 201,
        body: await createAuction(
          deps.db,
          { ...body, biddingEndsAt: new Date(body.biddingEndsAt), revealEndsAt: new Date(body.revealEndsAt) },
          ownerOf(auth),
          deps.clock,
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
        body: await publicAuction(deps.db, params.auctionId, deps.clock),
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
        sealedOpening: z
          .string()
          .regex(/^[A-Za-z0-9_-]+$/, 'base64url')
          .length(Math.ceil((THRESHOLD_BALLOT_BYTES * 4) / 3))
          .optional()
          .describe(
            'For an auction revealed by trustees: canonical JSON {amount, salt} encrypted to the trustees’ joint key (`sealBidOpening` in shared/auctions/sealed-openings.ts), proved made for this auction and commitment',
          ),
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
        422: ['sealed_opening_required', 'invalid_sealed_opening', 'sealed_opening_unexpected'],
      },
      handler: async ({ params, body, res, deps }) => {
        sealedAction(res);
        return { status: 201, body: await placeBid(deps.db, params.auctionId, body, deps.clock) };
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
        return { status: 200, body: await revealBid(deps.db, params.auctionId, body, deps.clock) };
      },
    })
    .add({
      method: 'get',
      path: '/api/auctions/{auctionId}/sealed-bids',
      operationId: 'listAuctionSealedBids',
      summary: 'After the reveal window of an auction revealed by trustees: the sealed openings to decrypt',
      tags,
      params: z.strictObject({ auctionId: auctionIdSchema }),
      responses: {
        200: {
          description: 'Every bid’s commitment and sealed opening, by bid id',
          schema: z.object({
            auctionId: z.string(),
            roomId: z.string(),
            bids: z.array(z.object({ bidId: z.string(), commitment: hex64, sealedOpening: z.string() })),
          }),
        },
      },
      problems: { 404: ['not_found'], 409: ['not_trustees', 'reveal_open'] },
      handler: async ({ params, deps }) => ({
        status: 200,
        body: await sealedBids(deps.db, params.auctionId, deps.clock),
      }),
    })
    .add({
      method: 'post',
      path: '/api/auctions/{auctionId}/decryptions',
      operationId: 'postAuctionDecryption',
      bodyLimit: 'large',
      summary: 'A trustee’s partial decryption of every sealed opening, each with a Chaum–Pedersen proof',
      description:
        'Made on the trustee’s machine (`npm run trustee -- decrypt-auction`). When the threshold of trustees have posted, every bid its bidder did not reveal is opened and the auction decided.',
      tags,
      params: z.strictObject({ auctionId: auctionIdSchema }),
      body: z.strictObject({
        trustee: z.number().int().min(1).max(MAX_TRUSTEES),
        shares: z
          .array(
            z.strictObject({
              bidId: z.string().regex(idPattern('bid'), 'a bid id (bid_…)'),
              share: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'a point, base64url'),
              proof: z.strictObject({ c: hex64, z: hex64 }),
            }),
          )
          .max(10_000),
        signature: z
          .string()
          .regex(/^[A-Za-z0-9_-]{86}$/, 'an ed25519 signature, base64url')
          .describe(
            'ed25519 by the trustee’s key over `proof-exchange/governance/trustee/v1\\nroom:<roomId>\\nkind:decryption\\nsha256:<hex sha256 of the canonical JSON of { auctionId, shares }>`, the shares ordered by bid id, each `{ bidId, share, proof: { c, z } }`',
          ),
      }),
      responses: {
        201: {
          description: 'Taken',
          schema: z.object({
            auctionId: z.string(),
            trustee: z.number().int(),
            trusteesDecrypted: z.number().int(),
            trusteesNeeded: z.number().int(),
          }),
        },
      },
      problems: {
        403: ['signature_invalid'],
        404: ['not_found'],
        409: ['not_trustees', 'reveal_open', 'auction_finalized', 'already_decrypted'],
        422: ['unknown_trustee', 'decryption_incomplete', 'decryption_invalid'],
        503: ['signing_key_retired'],
      },
      handler: async ({ params, body, deps }) => ({
        status: 201,
        body: await submitAuctionDecryption(deps.db, params.auctionId, body, deps.clock),
      }),
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
        body: await finalizeAuctionNow(deps.db, params.auctionId, ownerOf(auth), deps.clock),
      }),
    });
  packageRoutes(table, {
    path: '/api/auctions/{auctionId}',
    name: 'Auction',
    of: 'The finalized auction’s',
    tags,
    params: z.strictObject({ auctionId: auctionIdSchema }),
    schema: auctionPackageSchema,
    bundleCache: 'no-cache',
    load: ({ params, deps }) => auctionPackage(deps.db, params.auctionId, deps.clock),
  });
  return verifyRoute(table, {
    path: '/api/auctions/verify',
    operationId: 'verifyAuctionPackage',
    summary: 'Verify an auction package: reveals open their commitments, Merkle roots, outcome, signature',
    tags,
    checks: {
      revealsValid: z.boolean(),
      rootsValid: z.boolean(),
      outcomeValid: z.boolean(),
      recomputedOutcome: z.record(z.string(), z.unknown()).optional(),
    },
    verify: verifyAuctionPackage,
  });
}
