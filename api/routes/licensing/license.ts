// The commercial table, the calling license's entitlements (/api/v1/commercial/license): its tier, the
// product lines it grants, the quota used and the credit left.
import { z } from 'zod';
import { licenseEntitlements } from '../../../shared/licensing/entitlements';
import { licenseTypes, productLines } from '../../../shared/licensing/tiers';
import { AppError } from '../../../shared/platform/errors';
import type { RouteTable } from '../../http/route';

export function licenseRoutes(table: RouteTable): RouteTable {
  const tags = ['Commercial'];
  return table.add({
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
      return {
        status: 200,
        headers: { 'Cache-Control': 'no-store' },
        body: await licenseEntitlements(deps.db, auth),
      };
    },
  });
}
