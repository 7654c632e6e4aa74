// The exchange table, referrals: createReferral gives the calling agent a code that attributes jobs (and
// their confirmed revenue) to it.
import { z } from 'zod';
import { createReferral, referralCodePattern, referralTerms } from '../../../shared/exchange/referrals';
import { origin } from '../../http/links';
import type { RouteTable } from '../../http/route';
import { agentIdOf } from '../../http/callers';

const referralSchema = z
  .object({
    id: z.string(),
    code: z.string(),
    agentId: z.string(),
    commissionBps: z.number().int(),
    note: z.string().nullable(),
    createdAt: z.string(),
    links: z.object({ createJob: z.string() }),
  })
  .meta({ id: 'Referral' });

export function referralRoutes(table: RouteTable): RouteTable {
  return table.add({
    method: 'post',
    path: '/api/referrals',
    operationId: 'createReferral',
    summary: 'Create a referral code for the calling agent',
    description:
      'Jobs created with `?ref=CODE` (or the `X-Referral-Code` header) are attributed to the code; their confirmed revenue shows under it in the revenue summary. Codes are case-insensitive.',
    tags: ['Referrals'],
    auth: 'agent',
    body: z
      .strictObject({
        code: z
          .string()
          .regex(referralCodePattern, '4–40 letters, digits, - and _')
          .optional()
          .describe('A code of your own; default: a random one'),
        note: z.string().max(200).optional(),
      })
      .meta({ id: 'CreateReferralRequest' }),
    responses: {
      201: {
        description: 'The referral',
        schema: z.object({
          referral: referralSchema,
          terms: z.object({
            commissionBps: z.number().int(),
            basis: z.string(),
            attribution: z.string(),
            selfReferral: z.string(),
          }),
        }),
      },
    },
    problems: { 409: ['referral_code_taken'] },
    handler: async ({ body, auth, req, deps }) => {
      const row = await createReferral(deps.db, agentIdOf(auth), body);
      return {
        status: 201,
        body: {
          referral: {
            id: row.id,
            code: row.code,
            agentId: row.agent_id,
            commissionBps: row.commission_bps,
            note: row.note,
            createdAt: new Date(row.created_at).toISOString(),
            links: { createJob: `${origin(req, deps, 'base')}/api/jobs?ref=${encodeURIComponent(row.code)}` },
          },
          terms: referralTerms(),
        },
      };
    },
  });
}
