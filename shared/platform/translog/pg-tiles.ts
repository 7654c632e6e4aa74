// Tiles (c2sp.org/tlog-tiles) read from the transparency log in Postgres: a level-L tile holds hashes
// of complete subtrees of 256^L leaves, which are the stored nodes of level 8·L (the leaf hashes at
// level 0); and the entry bundles of the leaves' entry bytes.
import type { Conn } from './pg-log';
import { TILE_HEIGHT, TILE_WIDTH, encodeEntryBundle, tileBytes } from './tiles';

/**
 * The bytes of tile `index` of `level` at `width` hashes, or undefined when the log lacks one of its
 * hashes (the tree is not that large yet).
 */
export async function tileData(
  db: Conn,
  level: number,
  index: number,
  width: number,
): Promise<Buffer | undefined> {
  const span = TILE_WIDTH ** level;
  const first = index * TILE_WIDTH * span;
  const end = (index * TILE_WIDTH + width) * span;
  if (!Number.isSafeInteger(end)) return undefined;
  const hashes = new Map<number, Buffer>();
  if (level === 0) {
    const rows = (await db('translog_leaves')
      .select('leaf_index', 'leaf_hash')
      .where('leaf_index', '>=', first)
      .andWhere('leaf_index', '<', end)) as Array<{ leaf_index: string; leaf_hash: Buffer }>;
    for (const r of rows) hashes.set(Number(r.leaf_index), r.leaf_hash);
  } else {
    const rows = (await db('translog_nodes')
      .select('start', 'hash')
      .where('level', TILE_HEIGHT * level)
      .andWhere('start', '>=', first)
      .andWhere('start', '<', end)) as Array<{ start: string; hash: Buffer }>;
    for (const r of rows) hashes.set(Number(r.start), r.hash);
  }
  if (hashes.size !== width) return undefined;
  try {
    return await tileBytes(
      {
        subtree: (start) => {
          const h = hashes.get(start);
          if (!h) throw new RangeError(`no hash at ${start}`);
          return h;
        },
      },
      level,
      index,
      width,
    );
  } catch (err) {
    if (err instanceof RangeError) return undefined;
    throw err;
  }
}

/** A leaf whose entry bytes the log does not hold (a leaf of the older format over 65535 bytes). */
export class EntryMissing extends Error {
  constructor(readonly index: number) {
    super(`the log holds no entry bytes for leaf ${index}`);
  }
}

/** The entry bundle of tile `index` at `width` entries, or undefined when the log has fewer leaves. */
export async function entryBundle(db: Conn, index: number, width: number): Promise<Buffer | undefined> {
  const first = index * TILE_WIDTH;
  const rows = (await db('translog_leaves')
    .select('leaf_index', 'entry')
    .where('leaf_index', '>=', first)
    .andWhere('leaf_index', '<', first + width)
    .orderBy('leaf_index')) as Array<{ leaf_index: string; entry: Buffer | null }>;
  if (rows.length !== width) return undefined;
  const missing = rows.find((r) => r.entry === null);
  if (missing) throw new EntryMissing(Number(missing.leaf_index));
  return encodeEntryBundle(rows.map((r) => r.entry as Buffer));
}
