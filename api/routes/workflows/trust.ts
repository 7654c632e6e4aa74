// The site table, the trust root: the document a verifier pins to check what this service signed — the log,
// every key the service has signed with (roles, period, revocation), the witnesses and their policy, and
// the credential issuers its organizations accept — built from the key history and the issuer registry.
// Cacheable briefly, with an ETag.
import { canonicalJson } from '../../../shared/platform/canonical';
import { sha256Hex } from '../../../shared/platform/crypto';
import { trustRootDocument } from '../../../shared/platform/key-history';
import { trustRootIssuers } from '../../../shared/credentials/registry';
import { trustRootSchema } from '../../../shared/platform/trust';
import { origin } from '../../http/links';
import type { RouteTable } from '../../http/route';

const tags = ['Proof workflows'];

export function trustRoutes(table: RouteTable): RouteTable {
  return table.add({
    method: 'get',
    path: '/api/proof-workflows/trust-root',
    operationId: 'proofTrustRoot',
    summary:
      'The trust root: the log, every signing key with its roles and period, the witnesses, policy and issuers',
    description:
      'Format `proof-exchange/trust-root/v1`. A signature verifies under a listed key with the role the item needs (package, receipt, license, attestation, log) when the item was signed within the key’s period [validFrom, validUntil); a key with `revokedFrom` holds only for what was logged before that time. `issuers` lists every credential issuer an organization here accepts (`acceptedBy`), with the schema ids it may sign, its period and its revocation from a time; `npm run verify` refuses a credential proof whose issuer the pinned trust root does not list for its organization, or lists revoked (or out of its period) at the proof’s time. Keep a copy to verify offline (`npm run receipt:verify -- <receipt> --trust <file>`). Answers 304 to an `If-None-Match` with the current ETag.',
    tags,
    responses: {
      200: {
        description: 'The trust root',
        schema: trustRootSchema,
        headers: {
          ETag: { description: 'Changes whenever the document does', schema: { type: 'string' } },
          'Cache-Control': { description: 'Reusable for a minute', schema: { type: 'string' } },
        },
      },
      304: { description: 'Not modified since the ETag given in If-None-Match' },
    },
    handler: async ({ req, deps }) => {
      const doc = await trustRootDocument(
        deps.db,
        `${origin(req, deps, 'site')}/log/`,
        await trustRootIssuers(deps.db),
      );
      return {
        status: 200,
        headers: {
          'Cache-Control': 'public, max-age=60',
          ETag: `"${sha256Hex(canonicalJson(doc)).slice(0, 32)}"`,
        },
        body: doc,
      };
    },
  });
}
