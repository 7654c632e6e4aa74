// The commercial table, an organization's own API keys: an admin key (the license key, or an rk_… key with
// `admin`) creates keys with a name and scopes (each shown once), lists them (a prefix, never a key) and
// revokes them. The keys it issues are resolved through the list in api/wiring.ts.
import { z } from 'zod';
import {
  actorOf,
  createOrganizationKey,
  listOrganizationKeys,
  MAX_ACTIVE_KEYS,
  revokeOrganizationKey,
} from '../../../shared/licensing/keys';
import type { LicensePrincipal } from '../../../shared/licensing/licenses';
import { keyScopes } from '../../../shared/licensing/scopes';
import { AppError } from '../../../shared/platform/errors';
import { idPattern } from '../../../shared/platform/ids';
import { listQueryShape } from '../../../shared/platform/paging';
import type { Principal } from '../../http/auth';
import type { RouteTable } from '../../http/route';

const tags = ['Organization'];
const noStore = { 'Cache-Control': 'no-store' };

const keySchema = z
  .object({
    keyId: z.string(),
    name: z.string(),
    scopes: z.array(z.enum(keyScopes)),
    prefix: z.string().describe('The key’s first characters, to tell keys apart; never the key'),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable().describe('Updated at most once a minute'),
    revokedAt: z.string().nullable(),
  })
  .meta({ id: 'OrganizationKey' });

/** The organization's license, for routes the operator has nothing to do on (it holds no license). */
function licenseOf(auth: Principal): LicensePrincipal {
  if (auth.kind !== 'license') {
    throw new AppError(
      400,
      'license_required',
      'Send a license key or an admin key of the organization: the operator holds none.',
    );
  }
  return auth;
}

export function organizationKeyRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'post',
      path: '/api/v1/organization/keys',
      operationId: 'createOrganizationKey',
      summary: 'Create an API key of the organization, with a name and scopes; the key is shown this once',
      description: `Scopes: \`admin\` (everything, keys included), \`workflows\`, \`governance\`, \`treasury\`, \`auctions\` (that line's routes, reads and writes), \`read\` (GET on every line the license grants). At most ${MAX_ACTIVE_KEYS} keys in use per organization. Only the key's sha256 is kept.`,
      tags,
      auth: 'operator-or-license',
      scope: 'admin',
      secretReply: true,
      body: z.strictObject({
        name: z.string().trim().min(1).max(100),
        scopes: z.array(z.enum(keyScopes)).min(1).max(keyScopes.length),
      }),
      responses: {
        201: {
          description: 'The key’s record and the key (once)',
          schema: z.object({
            key: keySchema,
            apiKey: z.string().describe('The API key (rk_…); shown this once'),
          }),
        },
      },
      problems: { 400: ['license_required'], 409: ['key_limit_reached'] },
      handler: async ({ body, auth, deps }) => ({
        status: 201,
        headers: noStore,
        body: await createOrganizationKey(deps.db, licenseOf(auth), body),
      }),
    })
    .add({
      method: 'get',
      path: '/api/v1/organization/keys',
      operationId: 'listOrganizationKeys',
      summary: 'The organization’s API keys, newest first (cursor pagination); a prefix, never a key',
      tags,
      auth: 'operator-or-license',
      scope: 'admin',
      query: z.strictObject(listQueryShape),
      responses: {
        200: {
          description: 'A page of keys',
          schema: z.object({ items: z.array(keySchema), nextCursor: z.string().nullable() }),
        },
      },
      problems: { 400: ['license_required', 'invalid_cursor'] },
      handler: async ({ query, auth, deps }) => ({
        status: 200,
        headers: noStore,
        body: await listOrganizationKeys(deps.db, licenseOf(auth).licenseId, query),
      }),
    })
    .add({
      method: 'post',
      path: '/api/v1/organization/keys/{keyId}/revoke',
      operationId: 'revokeOrganizationKey',
      summary: 'Revoke one of the organization’s API keys: refused from the next request on',
      tags,
      auth: 'operator-or-license',
      scope: 'admin',
      params: z.strictObject({ keyId: z.string().regex(idPattern('key'), 'a key id (key_…)') }),
      responses: { 200: { description: 'The key as it now is', schema: keySchema } },
      problems: { 400: ['license_required'], 404: ['not_found'] },
      handler: async ({ params, auth, deps }) => {
        const license = licenseOf(auth);
        return {
          status: 200,
          headers: noStore,
          body: await revokeOrganizationKey(deps.db, license.licenseId, params.keyId, actorOf(license)),
        };
      },
    });
}
