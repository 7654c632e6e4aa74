// The transparency log: RFC 6962 hashing against the published test vectors, inclusion and consistency
// proofs for every small tree, tampering rejected, and signed tree heads.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryLog } from '../../shared/platform/translog/memory-log';
import {
  EMPTY_ROOT,
  consistencyProof,
  consistencyRanges,
  inclusionProof,
  leafHash,
  nodeHash,
  rootHash,
  splitPoint,
  toHex,
  verifyConsistency,
  verifyInclusion,
} from '../../shared/platform/translog/merkle';
import {
  buildConsistencyProof,
  buildInclusionProof,
  checkConsistencyProof,
  checkInclusionProof,
  signTreeHead,
  verifyTreeHead,
} from '../../shared/platform/translog/tree-head';
import { logKey, otherKey } from './helpers';

const hex = (s: string) => Buffer.from(s, 'hex');

// RFC 6962 test data as published by certificate-transparency / transparency-dev/merkle (testonly).
const VECTOR_LEAVES = [
  '',
  '00',
  '10',
  '2021',
  '3031',
  '40414243',
  '5051525354555657',
  '606162636465666768696a6b6c6d6e6f',
].map(hex);
const VECTOR_ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
const VECTOR_INCLUSION = [
  {
    index: 0,
    size: 8,
    path: [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  },
  {
    index: 5,
    size: 8,
    path: [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
  { index: 2, size: 3, path: ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125'] },
  {
    index: 1,
    size: 5,
    path: [
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  },
];
const VECTOR_CONSISTENCY = [
  {
    m: 1,
    n: 8,
    path: [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  },
  {
    m: 6,
    n: 8,
    path: [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
  {
    m: 2,
    n: 5,
    path: [
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  },
  {
    m: 6,
    n: 7,
    path: [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
];

const vectorHashes = VECTOR_LEAVES.map(leafHash);

// A plain, obviously-correct MTH straight from the RFC's definition, to check the optimised paths against.
function referenceRoot(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return createHash('sha256').digest();
  if (leaves.length === 1) return leaves[0] as Buffer;
  const k = splitPoint(leaves.length);
  return nodeHash(referenceRoot(leaves.slice(0, k)), referenceRoot(leaves.slice(k)));
}

const N = 40;
const leaves = Array.from({ length: N }, (_, i) => leafHash(Buffer.from(`entry ${i}`)));
const roots = Array.from({ length: N + 1 }, (_, n) => referenceRoot(leaves.slice(0, n)));

function flipped(proof: Buffer[], i: number): Buffer[] {
  return proof.map((p, j) => {
    if (j !== i) return p;
    const c = Buffer.from(p);
    c[0] = (c[0] as number) ^ 1;
    return c;
  });
}

describe('RFC 6962 hashing', () => {
  it('matches the published roots for every size 0..8', () => {
    expect(toHex(EMPTY_ROOT)).toBe(VECTOR_ROOTS[0]);
    for (let n = 0; n <= 8; n++) expect(toHex(rootHash(vectorHashes, n))).toBe(VECTOR_ROOTS[n]);
  });

  it('prefixes leaves with 0x00 and nodes with 0x01', () => {
    expect(toHex(leafHash(Buffer.alloc(0)))).toBe(createHash('sha256').update(Buffer.of(0)).digest('hex'));
    const [a, b] = vectorHashes as [Buffer, Buffer];
    expect(toHex(nodeHash(a, b))).toBe(
      createHash('sha256')
        .update(Buffer.concat([Buffer.of(1), a, b]))
        .digest('hex'),
    );
  });

  it('generates the published inclusion proofs, which verify', () => {
    for (const v of VECTOR_INCLUSION) {
      expect(inclusionProof(vectorHashes, v.index, v.size).map(toHex)).toEqual(v.path);
      const root = hex(VECTOR_ROOTS[v.size] as string);
      expect(verifyInclusion(vectorHashes[v.index] as Buffer, v.index, v.size, v.path.map(hex), root)).toBe(
        true,
      );
    }
  });

  it('generates the published consistency proofs, which verify', () => {
    for (const v of VECTOR_CONSISTENCY) {
      expect(consistencyProof(vectorHashes, v.m, v.n).map(toHex)).toEqual(v.path);
      const r1 = hex(VECTOR_ROOTS[v.m] as string);
      const r2 = hex(VECTOR_ROOTS[v.n] as string);
      expect(verifyConsistency(v.m, v.n, r1, r2, v.path.map(hex))).toBe(true);
    }
  });
});

describe('inclusion proofs', () => {
  it('verify for every leaf of every tree size 1..40, and fail when anything is changed', () => {
    for (let n = 1; n <= N; n++) {
      const root = roots[n] as Buffer;
      expect(rootHash(leaves, n).equals(root)).toBe(true);
      for (let i = 0; i < n; i++) {
        const proof = inclusionProof(leaves, i, n);
        const leaf = leaves[i] as Buffer;
        expect(verifyInclusion(leaf, i, n, proof, root)).toBe(true);
        expect(verifyInclusion(leaves[(i + 1) % N] as Buffer, i, n, proof, root)).toBe(false);
        if (n > 1) expect(verifyInclusion(leaf, (i + 1) % n, n, proof, root)).toBe(false);
        // A wrong size (the probes transparency-dev/merkle uses; n + 1 can share the path shape).
        expect(verifyInclusion(leaf, i, n * 2, proof, root)).toBe(false);
        if (i < Math.floor(n / 2))
          expect(verifyInclusion(leaf, i, Math.floor(n / 2), proof, root)).toBe(false);
        expect(verifyInclusion(leaf, i, n, proof, roots[n - 1] as Buffer)).toBe(false);
        expect(verifyInclusion(leaf, i, n, [...proof, leaf], root)).toBe(false);
        if (proof.length > 0) {
          expect(verifyInclusion(leaf, i, n, proof.slice(0, -1), root)).toBe(false);
          for (let j = 0; j < proof.length; j++)
            expect(verifyInclusion(leaf, i, n, flipped(proof, j), root)).toBe(false);
        }
      }
    }
  });

  it('refuse malformed input without throwing', () => {
    const proof = inclusionProof(leaves, 3, 8);
    const root = roots[8] as Buffer;
    expect(verifyInclusion(leaves[3] as Buffer, 8, 8, proof, root)).toBe(false);
    expect(verifyInclusion(leaves[3] as Buffer, -1, 8, proof, root)).toBe(false);
    expect(verifyInclusion(Buffer.alloc(31), 3, 8, proof, root)).toBe(false);
    expect(verifyInclusion(leaves[3] as Buffer, 3, 8, [Buffer.alloc(31), ...proof.slice(1)], root)).toBe(
      false,
    );
    expect(() => inclusionProof(leaves, 8, 8)).toThrow(RangeError);
  });
});

describe('consistency proofs', () => {
  it('verify for every 1 <= m <= n <= 40, and fail when anything is changed', () => {
    for (let n = 1; n <= N; n++) {
      for (let m = 1; m <= n; m++) {
        const proof = consistencyProof(leaves, m, n);
        const r1 = roots[m] as Buffer;
        const r2 = roots[n] as Buffer;
        expect(verifyConsistency(m, n, r1, r2, proof)).toBe(true);
        if (m === n) {
          expect(proof).toEqual([]);
          expect(verifyConsistency(m, n, r1, roots[n - 1] as Buffer, proof)).toBe(false);
          continue;
        }
        expect(verifyConsistency(m, n, r2, r1, proof)).toBe(false);
        expect(verifyConsistency(m, n, roots[m - 1] as Buffer, r2, proof)).toBe(false);
        expect(verifyConsistency(m, n, r1, roots[n - 1] as Buffer, proof)).toBe(false);
        expect(verifyConsistency(m, n, r1, r2, [])).toBe(false);
        expect(verifyConsistency(m, n, r1, r2, proof.slice(0, -1))).toBe(false);
        expect(verifyConsistency(m, n, r1, r2, [...proof, r2])).toBe(false);
        expect(verifyConsistency(m + 1 <= n ? m + 1 : m - 1, n, r1, r2, proof)).toBe(false);
        for (let j = 0; j < proof.length; j++)
          expect(verifyConsistency(m, n, r1, r2, flipped(proof, j))).toBe(false);
      }
    }
  });

  it('treat size 0 as consistent with anything, from the empty root only', () => {
    expect(verifyConsistency(0, 5, EMPTY_ROOT, roots[5] as Buffer, [])).toBe(true);
    expect(verifyConsistency(0, 5, roots[1] as Buffer, roots[5] as Buffer, [])).toBe(false);
    expect(verifyConsistency(0, 5, EMPTY_ROOT, roots[5] as Buffer, [EMPTY_ROOT])).toBe(false);
    expect(verifyConsistency(5, 4, roots[5] as Buffer, roots[4] as Buffer, [])).toBe(false);
    expect(consistencyRanges(0, 7)).toEqual([]);
  });

  it('prove that a rewritten history is not an extension', () => {
    const rewritten = [...leaves.slice(0, 10)];
    rewritten[3] = leafHash(Buffer.from('a different entry 3'));
    const proof = consistencyProof(rewritten, 7, 10);
    expect(verifyConsistency(7, 10, roots[7] as Buffer, rootHash(rewritten, 10), proof)).toBe(false);
  });
});

describe('MemoryLog (stored complete subtrees)', () => {
  it('gives the same roots and proofs as hashing from the leaves', () => {
    const log = new MemoryLog();
    for (let i = 0; i < N; i++) log.appendLeafHash(leaves[i] as Buffer);
    expect(log.root(0).equals(EMPTY_ROOT)).toBe(true);
    for (let n = 1; n <= N; n++) {
      expect(log.root(n).equals(roots[n] as Buffer)).toBe(true);
      for (let i = 0; i < n; i += 3) expect(log.inclusionProof(i, n)).toEqual(inclusionProof(leaves, i, n));
      for (let m = 1; m <= n; m += 2)
        expect(log.consistencyProof(m, n)).toEqual(consistencyProof(leaves, m, n));
    }
  });

  it('reads O(log n) hashes for a proof, not O(n)', () => {
    const log = new MemoryLog();
    for (let i = 0; i < 1000; i++) log.append(Buffer.from(`entry ${i}`));
    let reads = 0;
    const counting = {
      leafHash: (i: number) => (reads++, log.leafHash(i)),
      perfectSubtree: (s: number, l: number) => (reads++, log.perfectSubtree(s, l)),
    };
    const proof = inclusionProof(counting, 517, 1000);
    expect(verifyInclusion(log.leafHash(517), 517, 1000, proof, log.root())).toBe(true);
    expect(reads).toBeLessThan(40);
  });
});

describe('signed tree heads', () => {
  const log = new MemoryLog();
  for (let i = 0; i < 12; i++) log.append(Buffer.from(`package ${i}`));
  const head = signTreeHead(
    { treeSize: 12, rootHash: log.root(), timestamp: new Date('2025-03-01T10:00:00Z') },
    logKey,
  );

  it('verify with the log key and no other', () => {
    expect(verifyTreeHead(head, logKey.publicKey)).toBe(true);
    expect(verifyTreeHead(head, otherKey.publicKey)).toBe(false);
  });

  it('fail when any member is changed', () => {
    expect(verifyTreeHead({ ...head, treeSize: 13 }, logKey.publicKey)).toBe(false);
    expect(verifyTreeHead({ ...head, rootHash: toHex(log.root(11)) }, logKey.publicKey)).toBe(false);
    expect(verifyTreeHead({ ...head, timestamp: '2025-03-01T10:00:01.000Z' }, logKey.publicKey)).toBe(false);
    expect(verifyTreeHead({ ...head, keyId: otherKey.keyId }, logKey.publicKey)).toBe(false);
    expect(verifyTreeHead({ ...head, extra: 1 }, logKey.publicKey)).toBe(false);
    expect(verifyTreeHead(null, logKey.publicKey)).toBe(false);
  });

  it('anchor JSON inclusion and consistency proofs', () => {
    const inclusion = buildInclusionProof(log, 4, 12);
    expect(inclusion).toEqual({
      leafIndex: 4,
      treeSize: 12,
      leafHash: toHex(log.leafHash(4)),
      path: log.inclusionProof(4).map(toHex),
    });
    expect(checkInclusionProof(inclusion, head.rootHash)).toBe(true);
    expect(checkInclusionProof({ ...inclusion, leafIndex: 5 }, head.rootHash)).toBe(false);
    expect(checkInclusionProof({ ...inclusion, leafIndex: 12 }, head.rootHash)).toBe(false);
    const consistency = buildConsistencyProof(log, 5, 12);
    expect(consistency).toEqual({
      firstSize: 5,
      secondSize: 12,
      firstRoot: toHex(log.root(5)),
      secondRoot: head.rootHash,
      path: log.consistencyProof(5, 12).map(toHex),
    });
    expect(checkConsistencyProof(consistency)).toBe(true);
    expect(checkConsistencyProof({ ...consistency, firstRoot: toHex(log.root(6)) })).toBe(false);
    expect(checkConsistencyProof({ ...consistency, path: ['zz'] })).toBe(false);
  });
});
