// The site table, the transparency log everything published lands in: what it is (origin, key, tiles,
// witnesses, policy), and the JSON convenience routes beside its C2SP tiles (./tiles.ts): the latest signed
// tree head with its checkpoint, a consistency proof between two sizes, a package's inclusion proof.
import { z } from 'zod';
import { AppError, notFound } from '../../../shared/platform/errors';
import { idPattern } from '../../../shared/platform/ids';
import {
  consistencyProofBetween,
  inclusionProofAt,
  logSize,
  treeHead,
} from '../../../shared/platform/translog/pg-log';
import { describeLog, logHead } from '../../../shared/platform/translog/service-log';
import {
  consistencyProofSchema,
  inclusionProofSchema,
  signedTreeHeadSchema,
} from '../../../shared/platform/translog/tree-head';
import { packageRow } from '../../../shared/workflows/load';
import { origin } from '../../http/links';
import type { RouteTable } from '../../http/route';

const tags = ['Proof workflows'];
const proofIdSchema = z.string().regex(idPattern('prf'), 'a proof id (prf_…)');
/**
 * A tree size in a query: decimal digits only. (z.coerce would take `?from=` as 0, and its document
 * would call a required size optional and nullable.)
 */
const treeSizeParam = (min: number) =>
  z
    .string()
    .regex(/^\d{1,16}$/, 'a tree size: a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(Number.MAX_SAFE_INTEGER));
const treeHeadReply = z.object({
  treeSize: z.number().int(),
  treeHead: signedTreeHeadSchema.nullable(),
  checkpoint: z.string().nullable().meta({
    description:
      'The latest C2SP checkpoint (signed note) with its cosignatures, as /log/checkpoint serves it',
  }),
});

const logDescription = z
  .object({
    origin: z.string().meta({ description: 'The checkpoint origin, and the name of the log key' }),
    vkey: z.string().meta({ description: 'The log’s signed-note verifier key (Ed25519)' }),
    key: z
      .object({ keyId: z.string(), publicKey: z.string() })
      .meta({ description: 'The log key raw (ed25519, base64url): the JSON tree heads are signed with it' }),
    tiles: z
      .string()
      .meta({ description: 'The C2SP tlog-tiles prefix (checkpoint, tile/…, tile/entries/…)' }),
    checkpoint: z.string(),
    treeSize: z.number().int().meta({ description: 'The size of the latest checkpoint' }),
    witnesses: z.array(z.object({ name: z.string(), vkey: z.string(), url: z.string().optional() })),
    policy: z.string().meta({ description: 'A C2SP tlog-policy naming this log and its witnesses' }),
  })
  .meta({ id: 'LogDescription' });

export function logRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'get',
      path: '/api/proof-workflows/log',
      operationId: 'proofLog',
      summary: 'The transparency log: origin, verifier key, tile prefix, witnesses, policy',
      description:
        'Everything published (workflow, governance, auction and treasury packages, stage records, receipts’ digests) is an entry of this log, served as C2SP tlog-tiles under `tiles`.',
      tags,
      responses: { 200: { description: 'The log', schema: logDescription } },
      handler: async ({ req, deps }) => ({
        status: 200,
        headers: { 'Cache-Control': 'no-cache' },
        body: await describeLog(deps.db, origin(req, deps, 'site')),
      }),
    })
    .add({
      method: 'get',
      path: '/api/proof-workflows/log/head',
      operationId: 'proofLogHead',
      summary: 'The latest signed tree head of the transparency log, with its checkpoint',
      tags,
      responses: {
        200: {
          description: 'The tree size, its signed head and its checkpoint (null while the log has none)',
          schema: treeHeadReply,
        },
      },
      handler: async ({ deps }) => {
        const { head, checkpoint } = await logHead(deps.db);
        return {
          status: 200,
          headers: { 'Cache-Control': 'no-store' },
          body: { treeSize: head?.treeSize ?? 0, treeHead: head ?? null, checkpoint: checkpoint ?? null },
        };
      },
    })
    .add({
      method: 'get',
      path: '/api/proof-workflows/log/consistency',
      operationId: 'proofLogConsistency',
      summary: 'A consistency proof between two tree sizes (RFC 6962)',
      description:
        'Proves the log of size `from` (required: the size the client already holds) is a prefix of the log of size `to` (default: the latest size).',
      tags,
      query: z.strictObject({
        from: treeSizeParam(0).meta({ description: 'The older tree size, the one a client holds' }),
        to: treeSizeParam(0).optional().meta({ description: 'The newer tree size (default: the latest)' }),
      }),
      responses: {
        200: {
          description: 'The proof, with the signed tree heads of both sizes when the log signed them',
          schema: z.object({
            proof: consistencyProofSchema,
            firstTreeHead: signedTreeHeadSchema.nullable(),
            secondTreeHead: signedTreeHeadSchema.nullable(),
          }),
        },
      },
      problems: { 400: ['invalid_range'], 422: ['tree_size_unknown'] },
      handler: async ({ query, deps }) => {
        const size = await logSize(deps.db);
        const to = query.to ?? size;
        if (query.from > to) throw new AppError(400, 'invalid_range', '`from` must not exceed `to`.');
        if (to > size)
          throw new AppError(422, 'tree_size_unknown', `The log has ${size} entries.`, {
            extra: { treeSize: size },
          });
        const [proof, first, second] = await Promise.all([
          consistencyProofBetween(deps.db, query.from, to),
          treeHead(deps.db, query.from),
          treeHead(deps.db, to),
        ]);
        return { status: 200, body: { proof, firstTreeHead: first ?? null, secondTreeHead: second ?? null } };
      },
    })
    .add({
      method: 'get',
      path: '/api/proof-workflows/log/inclusion',
      operationId: 'proofLogInclusion',
      summary: 'A package’s inclusion proof in a later tree size (default: the latest)',
      tags,
      query: z.strictObject({
        proofId: proofIdSchema,
        treeSize: treeSizeParam(1).optional(),
      }),
      responses: {
        200: {
          description: 'The inclusion proof and the signed tree head it leads to',
          schema: z.object({ inclusion: inclusionProofSchema, treeHead: signedTreeHeadSchema.nullable() }),
        },
      },
      problems: { 404: ['not_found'], 422: ['tree_size_unknown'] },
      handler: async ({ query, deps }) => {
        const row = await packageRow(deps.db, query.proofId);
        if (!row || row.leaf_index === null) throw notFound(`A logged package for ${query.proofId}`);
        const index = Number(row.leaf_index);
        const size = await logSize(deps.db);
        const treeSize = query.treeSize ?? size;
        if (treeSize > size || treeSize <= index) {
          throw new AppError(
            422,
            'tree_size_unknown',
            `The package is leaf ${index}; the log has ${size} entries.`,
          );
        }
        const [inclusion, head] = await Promise.all([
          inclusionProofAt(deps.db, index, treeSize),
          treeHead(deps.db, treeSize),
        ]);
        return { status: 200, body: { inclusion, treeHead: head ?? null } };
      },
    });
}
