// The site table, credential issuers: the issuers an organization accepts (each by its own signed
// publication, an admin act, logged), the revocation roots they publish (logged with their times), and
// what a prover needs to show a credential unrevoked (the latest root with its nonces), public.
import { z } from 'zod';
import { issuerCodes } from '../../../shared/credentials/registry';
import {
  latestRevocations,
  listIssuers,
  publishRevocations,
  registerIssuer,
  revokeIssuer,
} from '../../../shared/credentials/registry';
import type { IssuerRecord, RevocationRootRecord } from '../../../shared/credentials/registry';
import { notFound } from '../../../shared/platform/errors';
import { ownerOf } from '../../http/callers';
import type { RouteTable } from '../../http/route';

const tags = ['Proof workflows'];
const keyIdSchema = z.string().regex(/^[0-9a-f]{64}$/, 'an issuer key id: 64 lowercase hex');
const publicationSchema = z
  .record(z.string(), z.unknown())
  .describe(
    'The issuer’s publication as `npm run px -- issuer publish` prints it (proof-exchange/issuer/v1), signed by its key',
  );

const rootView = (r: RevocationRootRecord) => ({
  seq: r.seq,
  root: r.root,
  publishedAt: r.publishedAt,
  loggedAt: r.loggedAt,
  leafIndex: r.leafIndex,
});

const rootSchema = z
  .object({
    seq: z.number().int(),
    root: z.string(),
    publishedAt: z.string().describe('The issuer’s time for the root'),
    loggedAt: z.string().describe('When the log recorded it'),
    leafIndex: z.number().int(),
  })
  .meta({ id: 'RevocationRoot' });

const issuerView = (i: IssuerRecord) => ({
  keyId: i.keyId,
  name: i.name,
  publicKey: i.publicKey,
  schemas: i.schemas.map((s) => ({ name: s.name, version: s.version, fields: s.fields.map((f) => f.name) })),
  validFrom: i.validFrom,
  validUntil: i.validUntil,
  revokedFrom: i.revokedFrom,
  version: i.version,
  leafIndex: i.leafIndex,
});

const issuerSchema = z
  .object({
    keyId: z.string(),
    name: z.string(),
    publicKey: z.array(z.string()),
    schemas: z.array(z.object({ name: z.string(), version: z.number().int(), fields: z.array(z.string()) })),
    validFrom: z.string(),
    validUntil: z.string().nullable(),
    revokedFrom: z.string().nullable(),
    version: z.number().int().describe('Bumped by each logged statement about the issuer'),
    leafIndex: z.number().int().describe('Where the latest statement sits in the log'),
  })
  .meta({ id: 'CredentialIssuer' });

const adminWrite = {
  tags,
  auth: 'operator-or-license' as const,
  product: 'workflows' as const,
  scope: 'admin' as const,
};

export function issuerRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'post',
      path: '/api/proof-workflows/issuers',
      operationId: 'acceptCredentialIssuer',
      bodyLimit: 'large',
      summary: 'Accept a credential issuer: its key, the schemas it signs, its revocation root',
      description:
        'The issuer’s own signed publication (its key id must be its key’s, its schemas’ ids theirs, its root the tree of the nonces it lists, its signature valid). An admin action: the license key or an admin-scope organization key. The acceptance (kind credential_issuer) and the publication’s revocation root (kind revocation_root) are logged in one transaction, with their times. Accepting it again updates its schemas and validity, logged as its next version. A stage prepared for a credential proof takes credentials of the issuers its owner accepts, for the schemas it accepts them for, valid at the proof’s time.',
      ...adminWrite,
      body: z.strictObject({
        publication: publicationSchema,
        validFrom: z.iso.datetime().optional().describe('From when its credentials count (default now)'),
        validUntil: z.iso.datetime().optional(),
      }),
      responses: {
        201: {
          description: 'The issuer as accepted, and its latest revocation root',
          schema: z.object({ issuer: issuerSchema, revocation: rootSchema }),
        },
      },
      problems: { 409: ['revocation_root_stale', 'revocation_withdrawn'], 422: [...issuerCodes] },
      handler: async ({ body, auth, deps }) => {
        const { issuer, revocation } = await registerIssuer(deps.db, { owner: ownerOf(auth), ...body });
        return { status: 201, body: { issuer: issuerView(issuer), revocation: rootView(revocation) } };
      },
    })
    .add({
      method: 'get',
      path: '/api/proof-workflows/issuers',
      operationId: 'listCredentialIssuers',
      summary: 'The credential issuers the organization accepts',
      tags,
      auth: 'operator-or-license',
      product: 'workflows',
      responses: {
        200: {
          description: 'The issuers, oldest first; an empty list when none is accepted yet',
          schema: z.object({ issuers: z.array(issuerSchema) }),
        },
      },
      handler: async ({ auth, deps }) => ({
        status: 200,
        body: { issuers: (await listIssuers(deps.db, ownerOf(auth))).map(issuerView) },
      }),
    })
    .add({
      method: 'post',
      path: '/api/proof-workflows/issuers/{keyId}/revocations',
      operationId: 'publishIssuerRevocations',
      bodyLimit: 'large',
      summary: 'Log an accepted issuer’s newer publication: its revocation root',
      description:
        'Checked as at acceptance; its time must be after the last one logged (409 revocation_root_stale) and it must keep every nonce revoked before (409 revocation_withdrawn). Republishing the same root with a newer time keeps proofs against it fresh. An admin action.',
      ...adminWrite,
      params: z.strictObject({ keyId: keyIdSchema }),
      body: z.strictObject({ publication: publicationSchema }),
      responses: { 201: { description: 'The root as logged', schema: rootSchema } },
      problems: {
        404: ['not_found'],
        409: ['revocation_root_stale', 'revocation_withdrawn'],
        422: [...issuerCodes],
      },
      handler: async ({ params, body, auth, deps }) => ({
        status: 201,
        body: rootView(
          await publishRevocations(deps.db, {
            owner: ownerOf(auth),
            keyId: params.keyId,
            publication: body.publication,
          }),
        ),
      }),
    })
    .add({
      method: 'post',
      path: '/api/proof-workflows/issuers/{keyId}/revoke',
      operationId: 'revokeCredentialIssuer',
      summary: 'Stop accepting an issuer’s key from a time on',
      description:
        'A compromised key: proofs whose time is at or after `from` are refused, and a verifier of a package refuses them too. Logged as the issuer’s next version. An admin action.',
      ...adminWrite,
      params: z.strictObject({ keyId: keyIdSchema }),
      body: z.strictObject({ from: z.iso.datetime() }),
      responses: { 200: { description: 'The issuer as it now stands', schema: issuerSchema } },
      problems: { 404: ['not_found'] },
      handler: async ({ params, body, auth, deps }) => ({
        status: 200,
        body: issuerView(
          await revokeIssuer(deps.db, { owner: ownerOf(auth), keyId: params.keyId, from: body.from }),
        ),
      }),
    })
    .add({
      method: 'get',
      path: '/api/proof-workflows/issuers/{keyId}/revocations',
      operationId: 'getIssuerRevocations',
      summary: 'An issuer’s latest logged revocation root, with the revoked nonces',
      description:
        'Public, as the issuer publishes it: a prover builds its credential’s non-membership path from the nonces (`npm run px -- credential path`), on its own machine, so the service never learns which credential it holds.',
      tags,
      params: z.strictObject({ keyId: keyIdSchema }),
      responses: {
        200: {
          description: 'The latest root and its nonces',
          schema: z.object({ keyId: z.string(), revocation: rootSchema, nonces: z.array(z.string()) }),
        },
      },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps }) => {
        const latest = await latestRevocations(deps.db, params.keyId);
        if (!latest) throw notFound(`Revocations of issuer ${params.keyId}`);
        return {
          status: 200,
          body: { keyId: params.keyId, revocation: rootView(latest), nonces: latest.nonces },
        };
      },
    });
}
