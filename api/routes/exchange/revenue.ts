// The exchange table, the money side: revenueSummary (operator) from confirmed receipts, and treasuryStatus
// (public summary; the operator token adds recent inflows and balances).
import { z } from 'zod';
import { revenueSummary } from '../../../shared/exchange/revenue';
import { recentInflows, treasuryBalances, treasuryFamilies } from '../../../shared/payments/receiving';
import { chainFamilies } from '../../../shared/chains/assets';
import type { RouteTable } from '../../http/route';

const sum = z.string().regex(/^\d+$/).describe('An exact integer sum, as a string');
const assetSum = z.object({
  asset: z.string(),
  decimals: z.number().int(),
  receipts: z.number().int(),
  amount: sum.describe('Base units of the asset'),
  usdCents: sum,
});
const grouped = (key: 'service' | 'period') =>
  z.object({
    [key]: z.string(),
    receipts: z.number().int(),
    usdCents: sum,
    assets: z.array(assetSum),
  });

const revenueSchema = z
  .object({
    currency: z.literal('USD'),
    period: z.enum(['day', 'month']),
    from: z.string().nullable(),
    to: z.string().nullable(),
    totals: z.object({ receipts: z.number().int(), usdCents: sum }),
    byAsset: z.array(assetSum),
    byService: z.array(grouped('service')),
    byPeriod: z.array(grouped('period')),
    byReferral: z.array(
      z.object({
        referralId: z.string(),
        code: z.string(),
        agentId: z.string(),
        commissionBps: z.number().int(),
        receipts: z.number().int(),
        usdCents: sum,
        commissionUsdCents: sum,
      }),
    ),
  })
  .meta({ id: 'RevenueSummary' });

const balanceSchema = z.object({
  asset: z.string(),
  available: z.boolean(),
  address: z.string().optional(),
  amount: z.string().optional(),
  pending: z.string().optional(),
  reason: z.string().optional(),
  detail: z.string().optional(),
});

const treasurySchema = z
  .object({
    families: z.array(
      z.object({
        family: z.enum(chainFamilies),
        setting: z.string(),
        configured: z.boolean(),
        address: z.string().nullable(),
        adapter: z.enum(['configured', 'unconfigured']),
        assets: z.array(z.object({ asset: z.string(), enabled: z.boolean(), reason: z.string().optional() })),
      }),
    ),
    unconfigured: z.array(z.enum(chainFamilies)),
    details: z.boolean().describe('Whether inflows and balances are included (operator token)'),
    recentInflows: z
      .array(
        z.object({
          receiptId: z.string(),
          jobId: z.string(),
          asset: z.string(),
          network: z.string(),
          amount: sum,
          decimals: z.number().int(),
          usdCents: sum,
          payTo: z.string(),
          txRef: z.string().nullable(),
          confirmedAt: z.string(),
        }),
      )
      .optional(),
    balances: z.array(balanceSchema).optional(),
  })
  .meta({ id: 'TreasuryStatus' });

export function revenueRoutes(table: RouteTable): RouteTable {
  const tags = ['Revenue and treasury'];
  return table
    .add({
      method: 'get',
      path: '/api/revenue',
      operationId: 'revenueSummary',
      summary: 'Revenue from confirmed payments by asset, service, period and referral (operator)',
      tags,
      auth: 'operator',
      query: z
        .strictObject({
          from: z.iso.datetime({ offset: true }).optional().describe('Receipts issued at or after'),
          to: z.iso.datetime({ offset: true }).optional().describe('Receipts issued before'),
          period: z.enum(['day', 'month']).default('day').describe('Bucket of byPeriod (UTC)'),
        })
        .refine((q) => !q.from || !q.to || Date.parse(q.from) < Date.parse(q.to), {
          message: 'from must be before to',
          path: ['from'],
        }),
      responses: { 200: { description: 'The summary', schema: revenueSchema } },
      handler: async ({ query, deps }) => ({
        status: 200,
        headers: { 'Cache-Control': 'no-store' },
        body: await revenueSummary(deps.db, {
          period: query.period,
          from: query.from ? new Date(query.from) : undefined,
          to: query.to ? new Date(query.to) : undefined,
        }),
      }),
    })
    .add({
      method: 'get',
      path: '/api/treasury/status',
      operationId: 'treasuryStatus',
      summary: 'Treasury addresses per chain family; with the operator token, recent inflows and balances',
      description:
        'Public: which families have a receiving address and which assets that enables. With `Authorization: Bearer <operator token>`: the latest confirmed inflows and balances where a chain adapter can read them (each bounded by a short timeout; a slow chain is reported, never an error).',
      tags,
      auth: 'operator-optional',
      responses: { 200: { description: 'Treasury status', schema: treasurySchema } },
      handler: async ({ auth, deps }) => {
        const families = treasuryFamilies();
        const summary = {
          families,
          unconfigured: families.filter((f) => !f.configured).map((f) => f.family),
        };
        if (auth.kind !== 'operator') {
          return { status: 200, body: { ...summary, details: false } };
        }
        const [recent, balances] = await Promise.all([recentInflows(deps.db), treasuryBalances()]);
        return {
          status: 200,
          headers: { 'Cache-Control': 'no-store' },
          body: { ...summary, details: true, recentInflows: recent, balances },
        };
      },
    });
}
