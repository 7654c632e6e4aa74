// An in-memory append-only log that keeps complete subtree hashes, as a database-backed log should:
// appends cost O(log n) hashes, and so do roots and proofs. The reference the stored log mirrors.
import {
  EMPTY_ROOT,
  consistencyProof,
  inclusionProof,
  leafHash,
  nodeHash,
  rootHash,
  subtreesCompletedBy,
} from './merkle';
import type { HashSource } from './merkle';

export class MemoryLog implements HashSource {
  private readonly leaves: Buffer[] = [];
  /** Complete subtree hashes by `${level}:${start}`, level >= 1. */
  private readonly subtrees = new Map<string, Buffer>();

  get size(): number {
    return this.leaves.length;
  }

  /** Appends one entry's bytes; returns its leaf index and leaf hash. */
  append(data: Uint8Array): { index: number; leafHash: Buffer } {
    return this.appendLeafHash(leafHash(data));
  }

  appendLeafHash(hash: Uint8Array): { index: number; leafHash: Buffer } {
    const index = this.leaves.length;
    const own = Buffer.from(hash);
    this.leaves.push(own);
    for (const { start, level } of subtreesCompletedBy(index)) {
      const half = 2 ** (level - 1);
      const left = level === 1 ? this.leafHash(start) : this.perfectSubtree(start, level - 1);
      const right = level === 1 ? this.leafHash(start + 1) : this.perfectSubtree(start + half, level - 1);
      if (!left || !right) throw new Error('log subtree cache is inconsistent');
      this.subtrees.set(`${level}:${start}`, nodeHash(left, right));
    }
    return { index, leafHash: own };
  }

  leafHash(index: number): Buffer {
    const h = this.leaves[index];
    if (!h) throw new RangeError(`no leaf at index ${index}`);
    return h;
  }

  perfectSubtree(start: number, level: number): Buffer | undefined {
    return level === 0 ? this.leaves[start] : this.subtrees.get(`${level}:${start}`);
  }

  root(size = this.size): Buffer {
    this.checkSize(size);
    return size === 0 ? EMPTY_ROOT : rootHash(this, size);
  }

  inclusionProof(index: number, size = this.size): Buffer[] {
    this.checkSize(size);
    return inclusionProof(this, index, size);
  }

  consistencyProof(first: number, second = this.size): Buffer[] {
    this.checkSize(second);
    return consistencyProof(this, first, second);
  }

  private checkSize(size: number): void {
    if (!Number.isSafeInteger(size) || size < 0 || size > this.size) {
      throw new RangeError(`tree size must be between 0 and ${this.size}`);
    }
  }
}
