// The transparency log in Postgres (RFC 6962): appends serialized by an advisory lock, each leaf with
// its entry bytes, complete subtree hashes stored as leaves land, signed tree heads, proofs served from
// the O(log n) rows they need (MemoryLog is the model). The signed checkpoints with the cosignatures
// witnesses added are `pg-checkpoints.ts`; the C2SP tiles and entry bundles read from the same rows
// `pg-tiles.ts`.
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
import { buildConsistencyProof, buildInclusionProof } from './tree-head';
import type { ConsistencyProof, InclusionProof, SignedTreeHead } from './tree-head';

/** Any knex handle: the pool, or a transaction holding the append lock. */
export type Conn = Knex | Knex.Transaction;

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

export interface TreeHeadRow {
  tree_size: string;
  root_hash: string;
  timestamp: string;
  key_id: string;
  signature: string;
}

export const headOf = (r: TreeHeadRow): SignedTreeHead => ({
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
