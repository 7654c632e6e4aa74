// RFC 6962 / RFC 9162 Merkle tree hashing for the append-only transparency log: roots, inclusion and
// consistency proofs (generation over any leaf-hash source, verification with no source at all).
import { createHash } from 'node:crypto';

export const HASH_SIZE = 32;

/** MTH({}): the hash of the empty tree, sha256 of the empty string. */
export const EMPTY_ROOT: Buffer = createHash('sha256').digest();

/** leaf hash = sha256(0x00 ‖ data). */
export function leafHash(data: Uint8Array): Buffer {
  return createHash('sha256').update(Uint8Array.of(0)).update(data).digest();
}

/** node hash = sha256(0x01 ‖ left ‖ right); the prefixes keep a leaf from passing for a node. */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== HASH_SIZE || right.length !== HASH_SIZE)
    throw new TypeError('node children are 32-byte hashes');
  return createHash('sha256').update(Uint8Array.of(1)).update(left).update(right).digest();
}

/**
 * Where proof generation reads hashes from. `leafHash(i)` is required; `perfectSubtree(start, level)`
 * may return the stored hash of the complete subtree of 2^level leaves starting at `start` (aligned),
 * which turns proof generation from O(n) into O(log n) hashes.
 */
export interface HashSource {
  leafHash(index: number): Uint8Array;
  perfectSubtree?(start: number, level: number): Uint8Array | undefined;
}

export type LeafHashes = HashSource | readonly Uint8Array[];

/** A half-open range of leaf indexes [start, end) whose subtree hash is one proof element. */
export interface LeafRange {
  start: number;
  end: number;
}

/** Either form of leaf hashes as a HashSource. */
export function hashSource(leaves: LeafHashes): HashSource {
  if (!Array.isArray(leaves)) return leaves as HashSource;
  const list = leaves as readonly Uint8Array[];
  return {
    leafHash: (i) => {
      const h = list[i];
      if (!h) throw new RangeError(`no leaf at index ${i}`);
      return h;
    },
  };
}

function checkSize(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${what} must be a non-negative integer`);
}

/** The largest power of two strictly less than n (n >= 2): RFC 6962's split point. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && 2 ** Math.round(Math.log2(n)) === n;
}

/** MTH(D[start:end]) with RFC 6962's tree shape, using stored complete subtrees where the source has them. */
export function subtreeHash(leaves: LeafHashes, start: number, end: number): Buffer {
  checkSize(start, 'start');
  checkSize(end, 'end');
  if (end < start) throw new RangeError('end must not be before start');
  const source = hashSource(leaves);
  const walk = (a: number, b: number): Buffer => {
    const n = b - a;
    if (n === 0) return EMPTY_ROOT;
    if (n === 1) {
      const h = source.leafHash(a);
      if (h.length !== HASH_SIZE) throw new TypeError(`leaf hash ${a} is not 32 bytes`);
      return Buffer.from(h);
    }
    if (source.perfectSubtree && isPowerOfTwo(n) && a % n === 0) {
      const stored = source.perfectSubtree(a, Math.round(Math.log2(n)));
      if (stored) return Buffer.from(stored);
    }
    const k = splitPoint(n);
    return nodeHash(walk(a, a + k), walk(a + k, b));
  };
  return walk(start, end);
}

/** The root of the first `size` leaves. */
export function rootHash(leaves: LeafHashes, size: number): Buffer {
  return subtreeHash(leaves, 0, size);
}

/** The ranges whose hashes form the audit path of leaf `index` in a tree of `size` (RFC 6962 §2.1.1 PATH). */
export function inclusionRanges(index: number, size: number): LeafRange[] {
  checkSize(size, 'size');
  if (!Number.isSafeInteger(index) || index < 0 || index >= size)
    throw new RangeError('index must be below size');
  const out: LeafRange[] = [];
  // Walk down from the root; proof elements are listed leaf-to-root, so prepend.
  let a = 0;
  let b = size;
  let m = index;
  while (b - a > 1) {
    const k = splitPoint(b - a);
    if (m < k) {
      out.unshift({ start: a + k, end: b });
      b = a + k;
    } else {
      out.unshift({ start: a, end: a + k });
      a += k;
      m -= k;
    }
  }
  return out;
}

/** The ranges whose hashes form the consistency proof from size m to size n (RFC 6962 §2.1.2 PROOF). */
export function consistencyRanges(m: number, n: number): LeafRange[] {
  checkSize(m, 'first size');
  checkSize(n, 'second size');
  if (m > n) throw new RangeError('the first size must not exceed the second');
  if (m === 0 || m === n) return [];
  const out: LeafRange[] = [];
  let a = 0;
  let b = n;
  let mm = m;
  let complete = true;
  for (;;) {
    if (mm === b - a) {
      if (!complete) out.unshift({ start: a, end: b });
      break;
    }
    const k = splitPoint(b - a);
    if (mm <= k) {
      out.unshift({ start: a + k, end: b });
      b = a + k;
    } else {
      out.unshift({ start: a, end: a + k });
      a += k;
      mm -= k;
      complete = false;
    }
  }
  return out;
}

/** Inclusion proof for leaf `index` in the tree of `size` leaves, leaf-to-root order. */
export function inclusionProof(leaves: LeafHashes, index: number, size: number): Buffer[] {
  return inclusionRanges(index, size).map((r) => subtreeHash(leaves, r.start, r.end));
}

/** Consistency proof that the tree of `m` leaves is a prefix of the tree of `n` leaves. */
export function consistencyProof(leaves: LeafHashes, m: number, n: number): Buffer[] {
  return consistencyRanges(m, n).map((r) => subtreeHash(leaves, r.start, r.end));
}

const isHash = (h: unknown): h is Uint8Array => h instanceof Uint8Array && h.length === HASH_SIZE;
const lsb = (x: number) => x % 2 === 1;
const half = (x: number) => Math.floor(x / 2);

/** RFC 9162 §2.1.3.2: the root an inclusion proof leads to, or undefined when the proof cannot be right. */
export function rootFromInclusionProof(
  leaf: Uint8Array,
  index: number,
  size: number,
  proof: readonly Uint8Array[],
): Buffer | undefined {
  if (!isHash(leaf) || !Array.isArray(proof) || !proof.every(isHash)) return undefined;
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size)
    return undefined;
  let fn = index;
  let sn = size - 1;
  let r: Buffer = Buffer.from(leaf);
  for (const p of proof) {
    if (sn === 0) return undefined;
    if (lsb(fn) || fn === sn) {
      r = nodeHash(p, r);
      while (!lsb(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 ? r : undefined;
}

export function verifyInclusion(
  leaf: Uint8Array,
  index: number,
  size: number,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): boolean {
  if (!isHash(root)) return false;
  const got = rootFromInclusionProof(leaf, index, size, proof);
  return got !== undefined && got.equals(root);
}

/** RFC 9162 §2.1.4.2. A proof from size 0 is empty and the first root is the empty-tree hash. */
export function verifyConsistency(
  m: number,
  n: number,
  firstRoot: Uint8Array,
  secondRoot: Uint8Array,
  proof: readonly Uint8Array[],
): boolean {
  if (!isHash(firstRoot) || !isHash(secondRoot) || !Array.isArray(proof) || !proof.every(isHash))
    return false;
  if (!Number.isSafeInteger(m) || !Number.isSafeInteger(n) || m < 0 || m > n) return false;
  if (m === n) return proof.length === 0 && Buffer.from(firstRoot).equals(secondRoot);
  if (m === 0) return proof.length === 0 && EMPTY_ROOT.equals(firstRoot);
  if (proof.length === 0) return false;
  const path = isPowerOfTwo(m) ? [firstRoot, ...proof] : [...proof];
  let fn = m - 1;
  let sn = n - 1;
  while (lsb(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr: Buffer = Buffer.from(path[0] as Uint8Array);
  let sr: Buffer = Buffer.from(path[0] as Uint8Array);
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (lsb(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (!lsb(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && fr.equals(firstRoot) && sr.equals(secondRoot);
}

/**
 * The complete subtrees that appending leaf `index` finishes, smallest first, as (start, level):
 * a store that saves these (hash = node(left half, right half)) can serve O(log n) proofs.
 */
export function subtreesCompletedBy(index: number): Array<{ start: number; level: number }> {
  checkSize(index, 'index');
  const out: Array<{ start: number; level: number }> = [];
  for (let level = 1, width = 2; (index + 1) % width === 0; level++, width *= 2) {
    out.push({ start: index + 1 - width, level });
  }
  return out;
}

export const toHex = (h: Uint8Array): string => Buffer.from(h).toString('hex');

/** Parses a 32-byte hash from hex; throws on anything else. */
export function fromHex(hex: string): Buffer {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new TypeError('expected a 32-byte hash as 64 hex characters');
  return Buffer.from(hex, 'hex');
}
