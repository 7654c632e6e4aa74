// The site table, the log as C2SP tlog-tiles under the site's /log/ prefix: the checkpoint (text/plain, with
// the witnesses' cosignatures) and the tiles and entry bundles (application/octet-stream), read by any
// tlog client. The tiles are left out of the OpenAPI document: their paths and bytes are the
// specification's (c2sp.org/tlog-tiles), documented in docs/workflows.md.
import { z } from 'zod';
import { AppError, notFound } from '../../../shared/platform/errors';
import { servedCheckpoint, servedTile } from '../../../shared/platform/translog/service-log';
import type { RouteTable } from '../../http/route';

const tags = ['Proof workflows'];

/** tlog-tiles: the checkpoint is mutable, so no cache keeps it beyond a few seconds. */
const CHECKPOINT_CACHE = 'public, max-age=5';
const FULL_TILE_CACHE = 'public, max-age=31536000, immutable';
/** A partial tile is replaced by its full tile and may go away then. */
const PARTIAL_TILE_CACHE = 'public, max-age=60';

export function tileRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'get',
      path: '/log/checkpoint',
      operationId: 'logCheckpoint',
      summary: 'The log’s latest checkpoint (C2SP tlog-checkpoint), with its witnesses’ cosignatures',
      description:
        'A signed note: origin, tree size, base64 root; the log’s Ed25519 signature, then each witness cosignature (c2sp.org/tlog-cosignature) stored for that size.',
      tags,
      responses: {
        200: {
          description: 'The checkpoint note',
          contentType: 'text/plain; charset=utf-8',
          schema: z.string(),
        },
      },
      problems: { 404: ['not_found'] },
      handler: async ({ res, deps }) => {
        const note = await servedCheckpoint(deps.db);
        if (note === undefined) throw notFound('A checkpoint');
        res
          .status(200)
          .set({
            'Content-Type': 'text/plain; charset=utf-8',
            'Cache-Control': CHECKPOINT_CACHE,
            'Access-Control-Allow-Origin': '*',
          })
          .send(note);
        return undefined;
      },
    })
    .add({
      method: 'get',
      path: '/log/tile/*tile',
      operationId: 'logTile',
      summary: 'A tile or entry bundle of the log (C2SP tlog-tiles)',
      tags,
      hidden: true,
      // Any path under tile/ is read; whatever is not a tile's is 404, as the specification's clients expect.
      params: z.strictObject({ tile: z.array(z.string()) }),
      responses: { 200: { description: 'The tile’s bytes', contentType: 'application/octet-stream' } },
      problems: { 404: ['not_found', 'entries_unavailable'] },
      handler: async ({ params, res, deps }) => {
        const reply = await servedTile(deps.db, `tile/${params.tile.join('/')}`);
        if (reply.status === 'absent') throw notFound('That tile');
        if (reply.status === 'entries_unavailable')
          throw new AppError(
            404,
            'entries_unavailable',
            `Leaf ${reply.index} was logged before entries were kept, and its entry is not held (docs/workflows.md).`,
          );
        res
          .status(200)
          .set({
            'Content-Type': 'application/octet-stream',
            'Cache-Control': reply.full ? FULL_TILE_CACHE : PARTIAL_TILE_CACHE,
            'Access-Control-Allow-Origin': '*',
          })
          .send(reply.body);
        return undefined;
      },
    });
}
