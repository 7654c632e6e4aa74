// The site table, the public site's API routes (proof workflows and status); product lines add theirs here.
// `GET /api/proofs/{proofId}` says which kind of proof an id names: every kind shares the prf_ prefix.
import { z } from 'zod';
import { idPattern } from '../../shared/platform/ids';
import { notFound } from '../../shared/platform/errors';
import { RouteTable } from '../http/route';
import { resolveProofId } from '../pages/proofs';

const kindSchema = z
  .object({
    proofId: z.string(),
    kind: z.enum(['workflow', 'governance', 'auction', 'treasury', 'blind-policy']),
    verifyPage: z.string().describe('The verify page of this id (a path on this service)'),
    page: z.string().optional().describe('The public page of its subject, when it has one'),
  })
  .meta({ id: 'ProofKind' });

export function siteRoutes(table = new RouteTable('site')): RouteTable {
  return table.add({
    method: 'get',
    path: '/api/proofs/{proofId}',
    operationId: 'getProofKind',
    summary: 'Which kind of proof an id names (workflow, governance, auction, treasury, blind policy)',
    description:
      'Every kind shares the `prf_` prefix: the id is looked up in each kind’s table. Says the kind and where to verify it, nothing of the proof itself.',
    tags: ['Proof workflows'],
    params: z.strictObject({ proofId: z.string().regex(idPattern('prf'), 'a proof id (prf_…)') }),
    responses: { 200: { description: 'The kind', schema: kindSchema } },
    problems: { 404: ['not_found'] },
    handler: async ({ params, deps }) => {
      const found = await resolveProofId(deps.db, params.proofId);
      if (!found) throw notFound('The proof');
      return {
        status: 200,
        body: {
          proofId: params.proofId,
          kind: found.kind,
          verifyPage: `/proof-workflows/verify/${params.proofId}/`,
          ...(found.page ? { page: found.page.href } : {}),
        },
      };
    },
  });
}
