// The site table, a workflow package as an offline bundle: the package and its C2SP tlog proof against the
// best-cosigned checkpoint, for `npm run verify` with no network.
import { z } from 'zod';
import { notFound } from '../../../shared/platform/errors';
import { idPattern } from '../../../shared/platform/ids';
import { bundleSchema } from '../../../shared/platform/translog/bundle';
import { bundleOf } from '../../../shared/proofs/bundle';
import { packageRow } from '../../../shared/workflows/load';
import type { RouteTable } from '../../http/route';

const tags = ['Proof workflows'];

export function bundleRoutes(table: RouteTable): RouteTable {
  return table.add({
    method: 'get',
    path: '/api/proof-workflows/bundle/{proofId}',
    operationId: 'proofWorkflowBundle',
    summary: 'A workflow package as an offline bundle: the package and its tlog proof',
    description:
      'Check it with `npm run verify -- <bundle> --trust <trust-root.json>`, with no network: the log key signed the checkpoint, the witnesses cosigned it, the entry is in the tree and names this package, and the package holds.',
    tags,
    params: z.strictObject({ proofId: z.string().regex(idPattern('prf'), 'a proof id (prf_…)') }),
    responses: { 200: { description: 'The bundle', schema: bundleSchema } },
    problems: { 404: ['not_found'], 409: ['checkpoint_pending'] },
    handler: async ({ params, deps }) => {
      const row = await packageRow(deps.db, params.proofId);
      if (!row || row.status !== 'logged' || !row.package)
        throw notFound(`A logged package ${params.proofId}`);
      return {
        status: 200,
        headers: {
          'Cache-Control': 'no-cache',
          'Content-Disposition': `attachment; filename="${params.proofId}.bundle.json"`,
        },
        body: await bundleOf(deps.db, row.package),
      };
    },
  });
}
