// C2SP tiled logs (c2sp.org/tlog-tiles): tile and entry-bundle paths, which tiles a tree of a given
// size has, and their bytes from a source of Merkle hashes. Pure: the Postgres log supplies the hashes.
import { HASH_SIZE } from './merkle';

/** Hashes per full tile, and the tile height (256 = 2^8). */
export const TILE_WIDTH = 256;
export const TILE_HEIGHT = 8;

export interface TileRef {
  /** A Merkle level of tiles (0: leaf hashes), or 'entries' for an entry bundle. */
  level: number | 'entries';
  index: number;
  /** The width of a partial tile, or 256 for a full one. */
  width: number;
}

/** `x001/x234/067` for 1234067: 3-digit groups, all but the last prefixed with x. */
export function encodeIndex(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error('a tile index is a natural number');
  const groups: string[] = [];
  let rest = n;
  do {
    groups.unshift(String(rest % 1000).padStart(3, '0'));
    rest = Math.floor(rest / 1000);
  } while (rest > 0);
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
}

/** The path of a tile under the log's prefix: `tile/<L>/<N>[.p/<W>]` or `tile/entries/<N>[.p/<W>]`. */
export function tilePath(t: TileRef): string {
  const partial = t.width < TILE_WIDTH ? `.p/${t.width}` : '';
  return `tile/${t.level}/${encodeIndex(t.index)}${partial}`;
}

/** Parses a tile path (without the prefix); null for anything that is not one. */
export function parseTilePath(path: string): TileRef | null {
  const m = /^tile\/(entries|0|[1-9][0-9]?)\/((?:x[0-9]{3}\/)*[0-9]{3})(?:\.p\/([1-9][0-9]{0,2}))?$/.exec(
    path,
  );
  if (!m) return null;
  const level = m[1] === 'entries' ? 'entries' : Number(m[1]);
  if (typeof level === 'number' && level > 63) return null;
  const digits = m[2]!.replace(/x/g, '').split('/');
  // Leading groups of zero ("x000/…") spell the same index twice: one spelling only.
  if (digits.length > 1 && digits[0] === '000') return null;
  const index = Number(digits.join(''));
  const width = m[3] === undefined ? TILE_WIDTH : Number(m[3]);
  if (width > TILE_WIDTH - 1 && m[3] !== undefined) return null;
  if (!Number.isSafeInteger(index)) return null;
  return { level, index, width };
}

/**
 * The width tile `index` of `level` has in a tree of `size` leaves: 256 when full, less when it is the
 * partial right edge, 0 when the tree has no such tile.
 */
export function tileWidth(size: number, level: number, index: number): number {
  const span = TILE_WIDTH ** level; // leaves under one hash of this level
  const hashes = Math.floor(size / span); // complete hashes at this level
  const start = index * TILE_WIDTH;
  if (hashes <= start) return 0;
  return Math.min(TILE_WIDTH, hashes - start);
}

/** The level-`level` hash number `i` covers leaves [i·256^level, (i+1)·256^level). */
export interface TileHashes {
  /** The Merkle tree hash of the perfect subtree of 2^height leaves starting at `start`. */
  subtree(start: number, height: number): Promise<Buffer> | Buffer;
}

/** The bytes of a tile: its hashes concatenated (32 bytes each). */
export async function tileBytes(
  source: TileHashes,
  level: number,
  index: number,
  width: number,
): Promise<Buffer> {
  const span = TILE_WIDTH ** level;
  const height = TILE_HEIGHT * level;
  const out: Buffer[] = [];
  for (let i = 0; i < width; i++) {
    const h = await source.subtree((index * TILE_WIDTH + i) * span, height);
    if (h.length !== HASH_SIZE) throw new Error('a tile hash is 32 bytes');
    out.push(h);
  }
  return Buffer.concat(out);
}

/** An entry bundle: each entry as a big-endian uint16 length, then its bytes. */
export function encodeEntryBundle(entries: readonly Uint8Array[]): Buffer {
  return Buffer.concat(
    entries.flatMap((e) => {
      if (e.length > 0xffff) throw new Error('an entry is at most 65535 bytes');
      const len = Buffer.alloc(2);
      len.writeUInt16BE(e.length);
      return [len, Buffer.from(e)];
    }),
  );
}

export function decodeEntryBundle(bundle: Uint8Array): Buffer[] {
  const b = Buffer.from(bundle);
  const out: Buffer[] = [];
  for (let at = 0; at < b.length;) {
    if (at + 2 > b.length) throw new Error('a truncated entry bundle');
    const len = b.readUInt16BE(at);
    if (at + 2 + len > b.length) throw new Error('a truncated entry bundle');
    out.push(b.subarray(at + 2, at + 2 + len));
    at += 2 + len;
  }
  return out;
}
