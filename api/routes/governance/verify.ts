// The site table, verifying a governance package (signature, chain, ballots, tally, review), and a ballot
// receipt against it.
import { z } from 'zod';
import { BALLOT_CIRCUIT } from '../../../shared/governance/ballot-protocol';
import { checkReceiptAgainstPackage } from '../../../shared/governance/package-verify';
import { loadVerificationKey } from '../../../shared/zk/verify';
import type { RouteTable } from '../../http/route';
import { verifyGovernanceAsService } from '../../offload/governance';
import { signingKey } from '../../views/governance';

const tags = ['Governance'];

const verdictSchema = z
  .object({
    valid: z.boolean(),
    signatureValid: z.boolean(),
    inclusionValid: z.boolean().optional(),
    chainValid: z.boolean(),
    ballotsValid: z.boolean(),
    tallyValid: z.boolean(),
    reviewMet: z.boolean(),
    recomputedTally: z.record(z.string(), z.unknown()).optional(),
    reasons: z.array(z.object({ check: z.string(), code: z.string(), detail: z.string() })),
    receipt: z
      .object({
        receiptValid: z.boolean(),
        packageValid: z.boolean(),
        included: z.boolean(),
        ballotMatches: z.boolean().optional(),
        spoiled: z
          .boolean()
          .optional()
          .describe('The ballot opens to none of the options: counted toward nothing'),
        note: z.string().optional().describe('Why the ballot is spoiled, in words'),
        inclusion: z
          .object({ index: z.number().int(), path: z.array(z.string()), valid: z.boolean() })
          .optional(),
      })
      .optional(),
    signingKey: z.object({ keyId: z.string(), publicKey: z.string() }),
  })
  .meta({ id: 'GovernanceVerification' });

export function verifyRoutes(table: RouteTable): RouteTable {
  return table.add({
    method: 'post',
    path: '/api/governance/verify',
    operationId: 'verifyGovernancePackage',
    bodyLimit: 'large',
    summary: 'Verify a governance package, and optionally a ballot receipt against it',
    tags,
    body: z.strictObject({
      package: z.record(z.string(), z.unknown()),
      receipt: z.record(z.string(), z.unknown()).optional(),
      opening: z.strictObject({ choice: z.string().max(200) }).optional(),
    }),
    responses: { 200: { description: 'The verdict', schema: verdictSchema } },
    handler: async ({ body, deps, req, auth }) => {
      // The signature first; every other check (trustees' arithmetic, ballots) in the verify pool, once.
      const { verdict, trust } = await verifyGovernanceAsService(deps.db, body.package, { req, auth });
      const receipt = body.receipt
        ? await checkReceiptAgainstPackage(
            body.receipt,
            body.package,
            { ...trust, ballotVerificationKey: await loadVerificationKey(BALLOT_CIRCUIT) },
            body.opening,
            verdict,
          )
        : undefined;
      return {
        status: 200,
        body: { ...verdict, ...(receipt ? { receipt } : {}), signingKey: signingKey() },
      };
    },
  });
}
