// The commercial table, the operator's administration (the bootstrap operator token or a named operator
// key, by role): licenses issued by hand, listed, shown, suspended, resumed, revoked and rotated; agents'
// API keys listed, revoked and rotated; operator keys issued, listed, revoked and rotated; the audit of
// every such action, naming the operator who took it. `npm run admin` (cli/admin.ts) calls these routes.
import { z } from 'zod';
import {
  issueManualLicense,
  licenseStatuses,
  listLicenses,
  resumeLicense,
  revokeLicense,
  rotateLicense,
  showLicense,
  suspendLicense,
} from '../../../shared/licensing/admin';
import { listActions } from '../../../shared/licensing/audit';
import { listOrganizationKeys, revokeOrganizationKey } from '../../../shared/licensing/keys';
import { keyScopes } from '../../../shared/licensing/scopes';
import { licenseTypes, productLines } from '../../../shared/licensing/tiers';
import { listAgentKeys, revokeAgentKey, rotateAgentKey } from '../../../shared/exchange/agent-keys';
import { idPattern } from '../../../shared/platform/ids';
import { listQueryShape } from '../../../shared/platform/paging';
import type { RouteTable } from '../../http/route';
import type { Principal } from '../../http/auth';
import {
  OPERATOR_NAME,
  issueOperatorKey,
  listOperatorKeys,
  operatorActor,
  operatorRoles,
  revokeOperatorKey,
  rotateOperatorKey,
} from '../../../shared/licensing/operators';
import type { OperatorIdentity } from '../../../shared/licensing/operators';

const tags = ['Administration'];
const licenseIdSchema = z.string().regex(idPattern('lic'), 'a license id (lic_…)');
const keyIdSchema = z.string().regex(idPattern('key'), 'a key id (key_…)');
const noStore = { 'Cache-Control': 'no-store' };

const licenseSchema = z
  .object({
    licenseId: z.string(),
    organization: z.string(),
    tier: z.enum(licenseTypes),
    status: z.enum(licenseStatuses),
    source: z.enum(['checkout', 'trial', 'manual']),
    issuedAt: z.string().describe('When the key in use was issued (a rotation issues a new one)'),
    expiresAt: z.string(),
    suspendedAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
    rotatedAt: z.string().nullable(),
    note: z.string().nullable(),
    creditUsdCents: z.number().int(),
  })
  .meta({ id: 'AdminLicense' });

const licenseWithKeySchema = z.object({
  license: licenseSchema,
  licenseKey: z.string().describe('The license key (lk_…); shown this once, only its hash is kept'),
});

const agentKeySchema = z
  .object({
    keyId: z.string(),
    agentId: z.string(),
    agentName: z.string(),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
  })
  .meta({ id: 'AdminAgentKey' });

const organizationKeySchema = z
  .object({
    keyId: z.string(),
    name: z.string(),
    scopes: z.array(z.enum(keyScopes)),
    prefix: z.string(),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
  })
  .meta({ id: 'AdminOrganizationKey' });

const actionSchema = z
  .object({
    id: z.string(),
    actor: z
      .string()
      .describe(
        '`operator` (the bootstrap token), `operator:<name>` (a named operator key), or the organization’s `license:<id>` or `key:<id>`',
      ),
    action: z.string(),
    target: z.string(),
    licenseId: z.string().nullable(),
    detail: z.record(z.string(), z.unknown()),
    at: z.string(),
  })
  .meta({ id: 'AdminAction' });

const operatorIdSchema = z.string().regex(idPattern('opr'), 'an operator id (opr_…)');

const operatorSchema = z
  .object({
    operatorId: z.string(),
    name: z.string(),
    role: z.enum(operatorRoles),
    prefix: z.string(),
    createdBy: z.string().describe('Who issued it, as the audit names them'),
    createdAt: z.string(),
    rotatedAt: z.string().nullable(),
    lastUsedAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
  })
  .meta({ id: 'AdminOperator' });

/** The operator behind an operator route (every one takes nothing else). */
function operatorOf(auth: Principal): OperatorIdentity {
  if (auth.kind !== 'operator') throw new Error('an operator route reached without an operator');
  return auth;
}

/** Who acted, as the audit records it. */
const actorOf = (auth: Principal): string => operatorActor(operatorOf(auth));

const page = <T extends z.ZodType>(item: T) =>
  z.object({ items: z.array(item), nextCursor: z.string().nullable() });

/** One license action (suspend, resume, revoke): the same shape, the same problems. */
function licenseAction(
  table: RouteTable,
  verb: 'suspend' | 'resume' | 'revoke',
  operationId: string,
  summary: string,
  run: typeof suspendLicense,
): RouteTable {
  return table.add({
    method: 'post',
    path: `/api/v1/admin/licenses/{licenseId}/${verb}`,
    operationId,
    summary,
    tags,
    auth: 'operator',
    params: z.strictObject({ licenseId: licenseIdSchema }),
    responses: { 200: { description: 'The license as it now is', schema: licenseSchema } },
    // Suspending and resuming contain abuse and undo it: support may; revoking is for good: admin.
    ...(verb === 'revoke' ? {} : { operatorRole: 'support' as const }),
    problems: { 404: ['not_found'], ...(verb === 'revoke' ? {} : { 409: ['license_already_revoked'] }) },
    handler: async ({ params, deps, auth }) => ({
      status: 200,
      headers: noStore,
      body: await run(deps.db, params.licenseId, actorOf(auth)),
    }),
  });
}

export function adminRoutes(table: RouteTable): RouteTable {
  table
    .add({
      method: 'post',
      path: '/api/v1/admin/licenses',
      operationId: 'adminIssueLicense',
      summary: 'Issue a license by hand (an invoice paid off-chain); the key is shown this once',
      description:
        'A paid tier for an organization, until `expiresAt` (default: the tier’s period from now), with the operator’s note. The license is recorded with a checkout settled `manual`; only the key’s hash is kept.',
      tags,
      auth: 'operator',
      secretReply: true,
      body: z.strictObject({
        organization: z.string().trim().min(1).max(200),
        tier: z.enum(['Starter', 'Business', 'Enterprise']),
        expiresAt: z.iso.datetime({ offset: true }).optional(),
        note: z.string().max(2000).optional(),
        email: z.email().max(320).optional(),
      }),
      responses: { 201: { description: 'The license and its key (once)', schema: licenseWithKeySchema } },
      problems: { 422: ['invalid_organization', 'invalid_expiry'] },
      handler: async ({ body, deps, auth }) => ({
        status: 201,
        headers: noStore,
        body: await issueManualLicense(
          deps.db,
          {
            organization: body.organization,
            tier: body.tier,
            expiresAt: body.expiresAt ? new Date(body.expiresAt) : undefined,
            note: body.note,
            email: body.email,
          },
          actorOf(auth),
        ),
      }),
    })
    .add({
      method: 'get',
      path: '/api/v1/admin/licenses',
      operationId: 'adminListLicenses',
      summary: 'Licenses, newest first (cursor pagination); never a key',
      tags,
      auth: 'operator',
      query: z.strictObject({
        ...listQueryShape,
        organization: z.string().min(1).max(200).optional().describe('Any spelling of the name'),
        status: z.enum(licenseStatuses).optional(),
      }),
      responses: { 200: { description: 'A page of licenses', schema: page(licenseSchema) } },
      problems: { 400: ['invalid_cursor'] },
      handler: async ({ query, deps }) => ({
        status: 200,
        headers: noStore,
        body: await listLicenses(deps.db, query),
      }),
    })
    .add({
      method: 'get',
      path: '/api/v1/admin/licenses/{licenseId}',
      operationId: 'adminShowLicense',
      summary: 'One license: its state, usage and how many organization keys are in use',
      tags,
      auth: 'operator',
      params: z.strictObject({ licenseId: licenseIdSchema }),
      responses: {
        200: {
          description: 'The license',
          schema: licenseSchema.extend({
            activeKeys: z.number().int(),
            usage: z.array(
              z.object({
                line: z.enum(productLines),
                unit: z.string(),
                quota: z.number().int().nullable(),
                used: z.number().int(),
                left: z.number().int().nullable(),
              }),
            ),
          }),
        },
      },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps }) => ({
        status: 200,
        headers: noStore,
        body: await showLicense(deps.db, params.licenseId),
      }),
    });
  licenseAction(
    table,
    'suspend',
    'adminSuspendLicense',
    'Suspend a license: its key and its organization’s keys are refused until it resumes',
    suspendLicense,
  );
  licenseAction(table, 'resume', 'adminResumeLicense', 'Resume a suspended license', resumeLicense);
  licenseAction(
    table,
    'revoke',
    'adminRevokeLicense',
    'Revoke a license for good: its key and its organization’s keys are refused from now on',
    revokeLicense,
  );
  return table
    .add({
      method: 'post',
      path: '/api/v1/admin/licenses/{licenseId}/rotate',
      operationId: 'adminRotateLicense',
      summary: 'A new key for a license; the old key is refused from now on; the new one is shown once',
      tags,
      auth: 'operator',
      secretReply: true,
      params: z.strictObject({ licenseId: licenseIdSchema }),
      responses: { 200: { description: 'The license and its new key (once)', schema: licenseWithKeySchema } },
      problems: { 404: ['not_found'], 409: ['license_already_revoked'] },
      handler: async ({ params, deps, auth }) => ({
        status: 200,
        headers: noStore,
        body: await rotateLicense(deps.db, params.licenseId, actorOf(auth)),
      }),
    })
    .add({
      method: 'get',
      path: '/api/v1/admin/licenses/{licenseId}/keys',
      operationId: 'adminListOrganizationKeys',
      summary: 'An organization’s API keys, newest first (cursor pagination); a prefix, never a key',
      tags,
      auth: 'operator',
      params: z.strictObject({ licenseId: licenseIdSchema }),
      query: z.strictObject(listQueryShape),
      responses: { 200: { description: 'A page of keys', schema: page(organizationKeySchema) } },
      problems: { 400: ['invalid_cursor'], 404: ['not_found'] },
      handler: async ({ params, query, deps }) => {
        await showLicense(deps.db, params.licenseId); // 404 for a license that does not exist
        return {
          status: 200,
          headers: noStore,
          body: await listOrganizationKeys(deps.db, params.licenseId, query),
        };
      },
    })
    .add({
      method: 'post',
      path: '/api/v1/admin/licenses/{licenseId}/keys/{keyId}/revoke',
      operationId: 'adminRevokeOrganizationKey',
      summary: 'Revoke one of an organization’s API keys: refused from the next request on',
      tags,
      auth: 'operator',
      operatorRole: 'support',
      params: z.strictObject({ licenseId: licenseIdSchema, keyId: keyIdSchema }),
      responses: { 200: { description: 'The key as it now is', schema: organizationKeySchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps, auth }) => ({
        status: 200,
        headers: noStore,
        body: await revokeOrganizationKey(deps.db, params.licenseId, params.keyId, actorOf(auth)),
      }),
    })
    .add({
      method: 'get',
      path: '/api/v1/admin/agent-keys',
      operationId: 'adminListAgentKeys',
      summary: 'Agents’ API keys, newest first (cursor pagination); never a key',
      tags,
      auth: 'operator',
      query: z.strictObject({
        ...listQueryShape,
        agentId: z.string().regex(idPattern('agt'), 'an agent id (agt_…)').optional(),
      }),
      responses: { 200: { description: 'A page of agent keys', schema: page(agentKeySchema) } },
      problems: { 400: ['invalid_cursor'] },
      handler: async ({ query, deps }) => ({
        status: 200,
        headers: noStore,
        body: await listAgentKeys(deps.db, query),
      }),
    })
    .add({
      method: 'post',
      path: '/api/v1/admin/agent-keys/{keyId}/revoke',
      operationId: 'adminRevokeAgentKey',
      summary: 'Revoke an agent’s API key: refused from now on',
      tags,
      auth: 'operator',
      operatorRole: 'support',
      params: z.strictObject({ keyId: keyIdSchema }),
      responses: { 200: { description: 'The key as it now is', schema: agentKeySchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps, auth }) => ({
        status: 200,
        headers: noStore,
        body: await revokeAgentKey(deps.db, params.keyId, actorOf(auth)),
      }),
    })
    .add({
      method: 'post',
      path: '/api/v1/admin/agent-keys/{keyId}/rotate',
      operationId: 'adminRotateAgentKey',
      summary: 'Revoke an agent’s API key and issue the agent a new one, shown this once',
      tags,
      auth: 'operator',
      secretReply: true,
      params: z.strictObject({ keyId: keyIdSchema }),
      responses: {
        200: {
          description: 'The new key’s record and the key (once)',
          schema: z.object({
            key: agentKeySchema,
            apiKey: z.string().describe('The new API key (ak_…); shown this once'),
          }),
        },
      },
      problems: { 404: ['not_found'], 409: ['key_already_revoked'] },
      handler: async ({ params, deps, auth }) => ({
        status: 200,
        headers: noStore,
        body: await rotateAgentKey(deps.db, params.keyId, actorOf(auth)),
      }),
    })
    .add({
      method: 'get',
      path: '/api/v1/admin/audit',
      operationId: 'adminAudit',
      summary: 'Administrative actions on licenses and keys, newest first: who, what, when',
      tags,
      auth: 'operator',
      query: z.strictObject({ ...listQueryShape, licenseId: licenseIdSchema.optional() }),
      responses: { 200: { description: 'A page of actions', schema: page(actionSchema) } },
      problems: { 400: ['invalid_cursor'] },
      handler: async ({ query, deps }) => ({
        status: 200,
        headers: noStore,
        body: await listActions(deps.db, query),
      }),
    })
    .add({
      method: 'post',
      path: '/api/v1/admin/operators',
      operationId: 'adminIssueOperatorKey',
      summary: 'Issue a named operator key with a role; the key is shown this once',
      description:
        'An operator is a person: the key (opk_…) acts with its role (`read-only` reads; `support` also suspends and resumes licenses, revokes agents’ and organizations’ keys, and retries jobs on Bull Board; `admin` does everything) and every audited action it takes names it (`operator:<name>`). A name is never reused. Only the key’s hash is kept.',
      tags,
      auth: 'operator',
      secretReply: true,
      body: z.strictObject({
        name: z
          .string()
          .regex(OPERATOR_NAME, 'a name or handle: letters, digits and . _ @ -, at most 64')
          .describe('The person, as the audit names them'),
        role: z.enum(operatorRoles),
      }),
      responses: {
        201: {
          description: 'The operator and its key (once)',
          schema: z.object({
            operator: operatorSchema,
            operatorKey: z.string().describe('The operator key (opk_…); shown this once'),
          }),
        },
      },
      problems: { 409: ['operator_name_taken'] },
      handler: async ({ body, deps, auth }) => ({
        status: 201,
        headers: noStore,
        body: await issueOperatorKey(deps.db, operatorOf(auth), body),
      }),
    })
    .add({
      method: 'get',
      path: '/api/v1/admin/operators',
      operationId: 'adminListOperatorKeys',
      summary: 'Operator keys, newest first (cursor pagination); a prefix, never a key',
      tags,
      auth: 'operator',
      query: z.strictObject(listQueryShape),
      responses: { 200: { description: 'A page of operators', schema: page(operatorSchema) } },
      problems: { 400: ['invalid_cursor'] },
      handler: async ({ query, deps }) => ({
        status: 200,
        headers: noStore,
        body: await listOperatorKeys(deps.db, query),
      }),
    })
    .add({
      method: 'post',
      path: '/api/v1/admin/operators/{operatorId}/revoke',
      operationId: 'adminRevokeOperatorKey',
      summary: 'Revoke an operator key for good: refused from its next request on',
      tags,
      auth: 'operator',
      params: z.strictObject({ operatorId: operatorIdSchema }),
      responses: { 200: { description: 'The operator as it now is', schema: operatorSchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps, auth }) => ({
        status: 200,
        headers: noStore,
        body: await revokeOperatorKey(deps.db, operatorOf(auth), params.operatorId),
      }),
    })
    .add({
      method: 'post',
      path: '/api/v1/admin/operators/{operatorId}/rotate',
      operationId: 'adminRotateOperatorKey',
      summary: 'A new key for an operator (same name and role); the old key is refused from now on',
      tags,
      auth: 'operator',
      secretReply: true,
      params: z.strictObject({ operatorId: operatorIdSchema }),
      responses: {
        200: {
          description: 'The operator and its new key (once)',
          schema: z.object({
            operator: operatorSchema,
            operatorKey: z.string().describe('The new operator key (opk_…); shown this once'),
          }),
        },
      },
      problems: { 404: ['not_found'], 409: ['operator_key_revoked'] },
      handler: async ({ params, deps, auth }) => ({
        status: 200,
        headers: noStore,
        body: await rotateOperatorKey(deps.db, operatorOf(auth), params.operatorId),
      }),
    });
}
