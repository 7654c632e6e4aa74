// The transparency log in Postgres (RFC 6962): appends serialized by an advisory lock, each leaf with
// its entry bytes, complete subtree hashes stored as leaves land, proofs served from the O(log n) rows
// they need (MemoryLog is the model); the signed checkpoints with the cosignatures witnesses added, and
// the C2SP tiles and entry bundles read from the same rows.
import type { Knex } from 'knex';
import {
  EMPTY_ROOT,
  consistencyRanges,
  inclusionRanges,
  leafHash,
  nodeHash,
  rootHash,
  splitPoint,
  toHex,
} from './merkle';
import type { HashSource, LeafRange } from './merkle';
import { buildConsistencyProof, buildInclusionProof } from './treeHead';
import type { ConsistencyProof, InclusionProof, SignedTreeHead } from './treeHead';
import { TILE_HEIGHT, TILE_WIDTH, encodeEntryBundle, tileBytes } from './tiles';

/** Any knex handle: the pool, or a transaction holding the append lock. */
type Conn = Knex | Knex.Transaction;

/** One lock key for the one log; appends take it for the rest of their transaction. */
const APPEND_LOCK = 6962_0001;

interface NodeRef {
  start: number;
  level: number;
}

const isPow2 = (n: number): boolean => n > 0 && (n & (n - 1)) === 0;

/** The stored nodes subtreeHash will ask for while hashing [start, end): leaves and aligned subtrees. */
function nodesFor(range: LeafRange, out: NodeRef[]): void {
  const n = range.end - range.start;
  if (n === 0) return;
  if (n === 1) {
    out.push({ start: range.start, level: 0 });
    return;
  }
  if (isPow2(n) && range.start % n === 0) {
    out.push({ start: range.start, level: Math.log2(n) });
    return;
  }
  const k = splitPoint(n);
  nodesFor({ start: range.start, end: range.start + k }, out);
  nodesFor({ start: range.start + k, end: range.end }, out);
}

/** Reads the given nodes into a synchronous HashSource for the pure proof functions. */
async function loadSource(db: Conn, refs: NodeRef[]): Promise<HashSource> {
  const leaves = new Map<number, Buffer>();
  const nodes = new Map<string, Buffer>();
  const leafIdx = [...new Set(refs.filter((r) => r.level === 0).map((r) => r.start))];
  const inner = refs.filter((r) => r.level > 0);
  if (leafIdx.length) {
    const rows = (await db('translog_leaves')
      .select('leaf_index', 'leaf_hash')
      .whereIn('leaf_index', leafIdx)) as Array<{
      leaf_index: string;
      leaf_hash: Buffer;
    }>;
    for (const r of rows) leaves.set(Number(r.leaf_index), r.leaf_hash);
  }
  if (inner.length) {
    const rows = (await db('translog_nodes')
      .select('level', 'start', 'hash')
      .whereIn(
        ['level', 'start'],
        inner.map((r) => [r.level, r.start]),
      )) as Array<{ level: number; start: string; hash: Buffer }>;
    for (const r of rows) nodes.set(`${r.level}:${Number(r.start)}`, r.hash);
  }
  return {
    leafHash: (i) => {
      const h = leaves.get(i);
      if (!h) throw new RangeError(`no leaf at index ${i}`);
      return h;
    },
    perfectSubtree: (start, level) => (level === 0 ? leaves.get(start) : nodes.get(`${level}:${start}`)),
  };
}

async function sourceForRanges(db: Conn, ranges: LeafRange[]): Promise<HashSource> {
  const refs: NodeRef[] = [];
  for (const r of ranges) nodesFor(r, refs);
  return loadSource(db, refs);
}

/** The number of leaves in the log. */
export async function logSize(db: Conn): Promise<number> {
  const row = (await db('translog_leaves').max('leaf_index as max').first()) as
    { max: string | null } | undefined;
  return row?.max === null || row?.max === undefined ? 0 : Number(row.max) + 1;
}

/** The root of the first `size` leaves. */
export async function logRoot(db: Conn, size: number): Promise<Buffer> {
  if (size === 0) return EMPTY_ROOT;
  return rootHash(await sourceForRanges(db, [{ start: 0, end: size }]), size);
}

/** Takes the append lock until the transaction ends: two appends never pick the same index. */
export async function lockLog(trx: Knex.Transaction): Promise<void> {
  await trx.raw('select pg_advisory_xact_lock(?)', [APPEND_LOCK]);
}

/** The leaf already appended for this key (a proof id), if any. */
export async function findLeaf(
  db: Conn,
  key: string,
): Promise<{ index: number; leafHash: Buffer } | undefined> {
  const row = (await db('translog_leaves')
    .select('leaf_index', 'leaf_hash')
    .where('proof_id', key)
    .first()) as { leaf_index: string; leaf_hash: Buffer } | undefined;
  return row ? { index: Number(row.leaf_index), leafHash: row.leaf_hash } : undefined;
}

export interface NewLeaf {
  /** Unique in the log: a second leaf under one key is refused (a package's proof id, `<kind>:<id>`). */
  key: string;
  /** The entry bytes the leaf hashes (at most 65535, as tile entry bundles carry them). */
  entry: Uint8Array;
}

export interface Appended {
  /** The index of the first leaf appended. */
  start: number;
  treeSize: number;
  root: Buffer;
}

/** The perfect subtrees [0, size) splits into, largest first: the right edge new leaves extend. */
function frontierOf(size: number): NodeRef[] {
  const out: NodeRef[] = [];
  let start = 0;
  for (let level = 52; level >= 0; level--) {
    const width = 2 ** level;
    if (size - start >= width) {
      out.push({ start, level });
      start += width;
    }
  }
  return out;
}

const ROWS_PER_INSERT = 1000;

/**
 * Appends leaves in order and stores the subtrees they complete, in memory from the tree's right edge
 * (O(log n) rows read, one insert per thousand rows written). Call inside a transaction that holds
 * lockLog(trx); returns the first new index, the size after and its root.
 */
export async function appendLeaves(trx: Knex.Transaction, leaves: readonly NewLeaf[]): Promise<Appended> {
  const size = await logSize(trx);
  const frontier = frontierOf(size);
  const source = await loadSource(trx, frontier);
  const stack: Array<{ start: number; level: number; hash: Buffer }> = frontier.map((r) => {
    const h = source.perfectSubtree?.(r.start, r.level);
    if (!h) throw new Error(`log subtree ${r.level}:${r.start} is missing`);
    return { start: r.start, level: r.level, hash: Buffer.from(h) };
  });
  const leafRows: Array<{ leaf_index: number; leaf_hash: Buffer; proof_id: string; entry: Buffer }> = [];
  const nodeRows: Array<{ level: number; start: number; hash: Buffer }> = [];
  leaves.forEach((l, i) => {
    const entry = Buffer.from(l.entry);
    if (entry.length > 0xffff) throw new Error('a log entry is at most 65535 bytes');
    const index = size + i;
    const hash = leafHash(entry);
    leafRows.push({ leaf_index: index, leaf_hash: hash, proof_id: l.key, entry });
    stack.push({ start: index, level: 0, hash });
    // Equal neighbours on the right edge make a complete subtree one level up.
    while (stack.length >= 2 && stack[stack.length - 1]!.level === stack[stack.length - 2]!.level) {
      const right = stack.pop()!;
      const left = stack.pop()!;
      const node = { start: left.start, level: left.level + 1, hash: nodeHash(left.hash, right.hash) };
      nodeRows.push(node);
      stack.push(node);
    }
  });
  for (let i = 0; i < leafRows.length; i += ROWS_PER_INSERT)
    await trx('translog_leaves').insert(leafRows.slice(i, i + ROWS_PER_INSERT));
  for (let i = 0; i < nodeRows.length; i += ROWS_PER_INSERT)
    await trx('translog_nodes').insert(nodeRows.slice(i, i + ROWS_PER_INSERT));
  // RFC 6962's root: each perfect subtree of the edge hashed with everything to its right.
  let root: Buffer = EMPTY_ROOT;
  if (stack.length) {
    root = stack[stack.length - 1]!.hash;
    for (let j = stack.length - 2; j >= 0; j--) root = nodeHash(stack[j]!.hash, root);
  }
  return { start: size, treeSize: size + leaves.length, root };
}

/** The keys among `keys` that already have a leaf. */
export async function loggedKeys(db: Conn, keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const rows = (await db('translog_leaves').whereIn('proof_id', keys).pluck('proof_id')) as string[];
  return new Set(rows);
}

export async function saveTreeHead(db: Conn, head: SignedTreeHead): Promise<void> {
  await db('tree_heads')
    .insert({
      tree_size: head.treeSize,
      root_hash: head.rootHash,
      timestamp: head.timestamp,
      key_id: head.keyId,
      signature: head.signature,
    })
    .onConflict('tree_size')
    .ignore();
}

interface TreeHeadRow {
  tree_size: string;
  root_hash: string;
  timestamp: string;
  key_id: string;
  signature: string;
}

const headOf = (r: TreeHeadRow): SignedTreeHead => ({
  treeSize: Number(r.tree_size),
  rootHash: r.root_hash,
  timestamp: r.timestamp,
  keyId: r.key_id,
  signature: r.signature,
});

/** The signed tree head for a size (the latest without one), or undefined. */
export async function treeHead(db: Conn, size?: number): Promise<SignedTreeHead | undefined> {
  const q = db('tree_heads').select('*');
  const row = (await (
    size === undefined ? q.orderBy('tree_size', 'desc') : q.where('tree_size', size)
  ).first()) as TreeHeadRow | undefined;
  return row ? headOf(row) : undefined;
}

export async function inclusionProofAt(db: Conn, index: number, treeSize: number): Promise<InclusionProof> {
  const source = await sourceForRanges(db, [
    { start: index, end: index + 1 },
    ...inclusionRanges(index, treeSize),
  ]);
  return buildInclusionProof(source, index, treeSize);
}

export async function consistencyProofBetween(
  db: Conn,
  first: number,
  second: number,
): Promise<ConsistencyProof> {
  const ranges = [...consistencyRanges(first, second), { start: 0, end: first }, { start: 0, end: second }];
  return buildConsistencyProof(await sourceForRanges(db, ranges), first, second);
}

export const rootHex = (root: Uint8Array): string => toHex(root);

// ---------------------------------------------------------------------------------------------------
// Checkpoints (c2sp.org/tlog-checkpoint) and the witnesses' cosignature lines for them.

export interface StoredCheckpoint {
  treeSize: number;
  root: Buffer;
  /** The signed note as the log signed it: its text and the log's signature line. */
  note: string;
}

export async function saveCheckpoint(db: Conn, c: StoredCheckpoint): Promise<void> {
  await db('checkpoints')
    .insert({ tree_size: c.treeSize, root: c.root, note: c.note })
    .onConflict('tree_size')
    .ignore();
}

interface CheckpointRow {
  tree_size: string;
  root: Buffer;
  note: string;
}

const checkpointOf = (r: CheckpointRow): StoredCheckpoint => ({
  treeSize: Number(r.tree_size),
  root: r.root,
  note: r.note,
});

/** The checkpoint of a size (the latest without one), or undefined. */
export async function checkpointAt(db: Conn, size?: number): Promise<StoredCheckpoint | undefined> {
  const q = db('checkpoints').select('tree_size', 'root', 'note');
  const row = (await (
    size === undefined ? q.orderBy('tree_size', 'desc') : q.where('tree_size', size)
  ).first()) as CheckpointRow | undefined;
  return row ? checkpointOf(row) : undefined;
}

/** A signature line as a note carries it: `— <name> <base64>` and a newline. */
const SIGNATURE_LINE = /^\u2014 [^\s+]+ [A-Za-z0-9+/]+={0,2}$/;
/** A note carries at most 64 signatures (signed-note): the log's, and this many cosignatures. */
const MAX_COSIGNATURES = 63;

/**
 * The cosignature lines stored for a checkpoint size, oldest first. Lines that could not sit in a
 * note are left out, so a bad row never breaks the checkpoint a verifier reads.
 */
export async function cosignatureLines(db: Conn, size: number): Promise<string[]> {
  const rows = (await db('checkpoint_cosignatures')
    .where('tree_size', size)
    .orderBy([
      { column: 'cosigned_at', order: 'asc' },
      { column: 'witness_name', order: 'asc' },
    ])
    .select('line')) as Array<{ line: string }>;
  return rows
    .map((r) => r.line.replace(/\n$/, ''))
    .filter((l) => SIGNATURE_LINE.test(l))
    .slice(0, MAX_COSIGNATURES)
    .map((l) => `${l}\n`);
}

/** The checkpoint note with every cosignature line stored for its size appended. */
export const withCosignatures = (note: string, lines: readonly string[]): string => note + lines.join('');

/**
 * The checkpoint covering leaf `index` a verifier is most likely to accept: the one the most
 * witnesses cosigned among the latest 64 cosigned, the latest if none was; undefined if no
 * checkpoint covers it.
 */
export async function bestCheckpointFor(db: Conn, index: number): Promise<StoredCheckpoint | undefined> {
  const { rows } = (await db.raw(
    `select tree_size from (
       select tree_size, count(*) as n from checkpoint_cosignatures
       where tree_size in (select distinct tree_size from checkpoint_cosignatures where tree_size > ?
                           order by tree_size desc limit 64)
       group by tree_size
     ) c order by n desc, tree_size desc limit 1`,
    [index],
  )) as { rows: Array<{ tree_size: string }> };
  const cosigned = rows[0] ? await checkpointAt(db, Number(rows[0].tree_size)) : undefined;
  const latest = await checkpointAt(db);
  if (cosigned) return cosigned;
  return latest && latest.treeSize > index ? latest : undefined;
}

/** Whether a checkpoint was made at a size in [from, to). */
export async function checkpointBetween(db: Conn, from: number, to: number): Promise<boolean> {
  const row = (await db('checkpoints')
    .where('tree_size', '>=', from)
    .andWhere('tree_size', '<', to)
    .first('tree_size')) as unknown;
  return row !== undefined;
}

// ---------------------------------------------------------------------------------------------------
// Tiles (c2sp.org/tlog-tiles): a level-L tile holds hashes of complete subtrees of 256^L leaves, which
// are the stored nodes of level 8·L (the leaf hashes at level 0).

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

/** The leaf stored under a key, with its entry bytes (null for an older leaf too large to hold). */
export async function leafByKey(
  db: Conn,
  key: string,
): Promise<{ index: number; leafHash: Buffer; entry: Buffer | null } | undefined> {
  const row = (await db('translog_leaves')
    .select('leaf_index', 'leaf_hash', 'entry')
    .where('proof_id', key)
    .first()) as { leaf_index: string; leaf_hash: Buffer; entry: Buffer | null } | undefined;
  return row ? { index: Number(row.leaf_index), leafHash: row.leaf_hash, entry: row.entry } : undefined;
}
