// The transparency log in Postgres (RFC 6962): appends serialized by an advisory lock, complete subtree
// hashes stored as leaves land, proofs served from the O(log n) rows they need (MemoryLog is the model).
import type { Knex } from 'knex';
import {
  EMPTY_ROOT,
  consistencyRanges,
  inclusionRanges,
  nodeHash,
  rootHash,
  splitPoint,
  toHex,
} from './merkle';
import type { HashSource, LeafRange } from './merkle';
import { buildConsistencyProof, buildInclusionProof } from './treeHead';
import type { ConsistencyProof, InclusionProof, SignedTreeHead } from './treeHead';

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

/**
 * Appends a leaf hash under `key` and stores the subtrees it completes. Call inside a transaction
 * that holds lockLog(trx); returns the new leaf's index and the tree size after it.
 */
export async function appendLeaf(
  trx: Knex.Transaction,
  key: string,
  hash: Uint8Array,
): Promise<{ index: number; treeSize: number; root: Buffer }> {
  const index = await logSize(trx);
  const leaf = Buffer.from(hash);
  await trx('translog_leaves').insert({ leaf_index: index, leaf_hash: leaf, proof_id: key });
  // Each completed subtree's right half was made one step before; its left half is stored already.
  let right: Buffer = leaf;
  for (let level = 1, width = 2; (index + 1) % width === 0; level++, width *= 2) {
    const start = index + 1 - width;
    const source = await loadSource(trx, [{ start, level: level - 1 }]);
    const left = source.perfectSubtree?.(start, level - 1);
    if (!left) throw new Error(`log subtree ${level - 1}:${start} is missing`);
    right = nodeHash(left, right);
    await trx('translog_nodes').insert({ level, start, hash: right });
  }
  const treeSize = index + 1;
  return { index, treeSize, root: await logRoot(trx, treeSize) };
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
