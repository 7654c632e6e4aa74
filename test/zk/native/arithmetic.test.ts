// The native prover's arithmetic: Fq/Fr operations against BigInt, G1/G2 multi-scalar sums against ffjavascript.
import { randomBytes } from 'node:crypto';
import * as ffjavascript from 'ffjavascript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNativeInternals } from '../../../native-prover';
import type { FieldOp, MsmOptions, NativeInternals } from '../../../native-prover';

const P = 21888242871839275222246405745257275088696311157297823662689037894645226208583n;
const R = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;
const MONT = 1n << 256n;

const mod = (x: bigint, m: bigint) => ((x % m) + m) % m;

function modPow(base: bigint, exp: bigint, m: bigint): bigint {
  let result = 1n;
  let b = mod(base, m);
  for (let e = exp; e > 0n; e >>= 1n) {
    if (e & 1n) result = (result * b) % m;
    b = (b * b) % m;
  }
  return result;
}

const modInv = (x: bigint, m: bigint) => modPow(x, m - 2n, m);

function toBytes(x: bigint): Uint8Array {
  const out = new Uint8Array(32);
  let v = x;
  for (let i = 0; i < 32; i++) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

function fromBytes(b: Uint8Array): bigint {
  let v = 0n;
  for (let i = b.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[i]!);
  return v;
}

const randomBelow = (m: bigint) => mod(BigInt(`0x${randomBytes(40).toString('hex')}`), m);

// The ffjavascript curve API this test uses (the package ships no types).
interface CurveGroup {
  g: Uint8Array;
  zero: Uint8Array;
  add(a: Uint8Array, b: Uint8Array): Uint8Array;
  neg(a: Uint8Array): Uint8Array;
  timesFr(a: Uint8Array, s: Uint8Array): Uint8Array;
  toAffine(a: Uint8Array): Uint8Array;
  eq(a: Uint8Array, b: Uint8Array): boolean;
  isZero(a: Uint8Array): boolean;
}
interface Bn128 {
  G1: CurveGroup;
  G2: CurveGroup;
  Fr: { e(x: bigint): Uint8Array };
  terminate(): Promise<void>;
}
const { buildBn128 } = ffjavascript as unknown as { buildBn128(singleThread?: boolean): Promise<Bn128> };

let native: NativeInternals;
let curve: Bn128;

beforeAll(async () => {
  const loaded = loadNativeInternals();
  if (!loaded) throw new Error('the native prover addon is not built (npm install builds it)');
  native = loaded;
  curve = await buildBn128(true);
});

afterAll(async () => {
  await curve?.terminate();
});

describe.each([
  ['fq', P],
  ['fr', R],
] as const)('field %s', (field, m) => {
  const rInv = modInv(MONT % m, m);
  const edges = [0n, 1n, 2n, m - 1n, m - 2n, (m - 1n) / 2n, MONT % m, (1n << 64n) - 1n, 1n << 128n, m >> 1n];
  const values = () => [...edges, ...Array.from({ length: 12 }, () => randomBelow(m))];

  // What each operation means on stored (Montgomery-form) values.
  const reference: Record<FieldOp, (a: bigint, b: bigint) => bigint | null> = {
    add: (a, b) => mod(a + b, m),
    sub: (a, b) => mod(a - b, m),
    neg: (a) => mod(-a, m),
    mul: (a, b) => mod(a * b * rInv, m),
    square: (a) => mod(a * a * rInv, m),
    inverse: (a) => (a === 0n ? null : mod(modInv(a, m) * MONT * MONT, m)),
    toMontgomery: (a) => mod(a * MONT, m),
    fromMontgomery: (a) => mod(a * rInv, m),
  };

  const run = (op: FieldOp, a: bigint, b: bigint, impl?: 'auto' | 'portable' | 'adx') =>
    fromBytes(native.fieldOp(field, op, toBytes(a), toBytes(b), impl));

  it.each(Object.keys(reference) as FieldOp[])('%s matches BigInt on 0, 1, p-1 and random values', (op) => {
    const xs = values();
    const ys = values();
    for (const a of xs) {
      for (const b of ys) {
        const expected = reference[op](a, b);
        if (expected === null) continue;
        expect(run(op, a, b), `${op}(${a}, ${b})`).toBe(expected);
      }
    }
  });

  it('multiplies identically on the portable and the BMI2/ADX paths', () => {
    const impls: ('portable' | 'adx')[] = native.cpu().adx ? ['portable', 'adx'] : ['portable'];
    const xs = values();
    for (const impl of impls) {
      for (const a of xs) {
        for (const b of xs) {
          expect(run('mul', a, b, impl), `${impl} mul`).toBe(reference.mul(a, b));
          expect(run('square', a, 0n, impl), `${impl} square`).toBe(reference.square(a, 0n));
        }
      }
    }
  });

  it('round-trips through Montgomery form and inverts to one', () => {
    for (const x of values()) {
      const mont = native.fieldOp(field, 'toMontgomery', toBytes(x));
      expect(fromBytes(native.fieldOp(field, 'fromMontgomery', mont))).toBe(x);
      if (x === 0n) continue;
      const product = native.fieldOp(field, 'mul', mont, native.fieldOp(field, 'inverse', mont));
      expect(fromBytes(native.fieldOp(field, 'fromMontgomery', product))).toBe(1n);
    }
  });

  it('rejects unreduced operands and the inverse of zero', () => {
    expect(() => native.fieldOp(field, 'add', toBytes(m), toBytes(1n))).toThrow(RangeError);
    expect(() => native.fieldOp(field, 'mul', toBytes(1n), toBytes(MONT - 1n))).toThrow(RangeError);
    expect(() => native.fieldOp(field, 'inverse', toBytes(0n))).toThrow(RangeError);
  });
});

describe.each(['G1', 'G2'] as const)('MSM over %s', (group) => {
  const size = group === 'G1' ? 64 : 128;
  const G = () => curve[group];
  const msm = (points: Uint8Array, scalars: Uint8Array, options?: MsmOptions) =>
    group === 'G1' ? native.msmG1(points, scalars, options) : native.msmG2(points, scalars, options);

  /** A random point, or the point at infinity. */
  const randomPoint = () => G().timesFr(G().g, curve.Fr.e(randomBelow(R - 1n) + 1n));

  /** Points in the zkey layout: affine, Montgomery form, infinity as all zeros. */
  function encode(points: Uint8Array[]): Uint8Array {
    const out = new Uint8Array(points.length * size);
    points.forEach((p, i) => {
      if (!G().isZero(p)) out.set(G().toAffine(p), i * size);
    });
    return out;
  }

  /** The naive sum: one scalar multiplication per point, added up. */
  function naive(points: Uint8Array[], scalars: bigint[]): Uint8Array {
    let acc = G().zero;
    points.forEach((p, i) => {
      acc = G().add(acc, G().timesFr(p, curve.Fr.e(scalars[i]!)));
    });
    return acc;
  }

  function check(points: Uint8Array[], scalars: bigint[], shapes: (MsmOptions | undefined)[]) {
    const expected = naive(points, scalars);
    const encoded = encode(points);
    const scalarBytes = new Uint8Array(scalars.length * 32);
    scalars.forEach((s, i) => scalarBytes.set(toBytes(s), i * 32));
    for (const shape of shapes) {
      const got = msm(encoded, scalarBytes, shape);
      const label = `${points.length} points, ${JSON.stringify(shape ?? 'planned')}`;
      if (G().isZero(expected)) {
        expect(
          got.every((b) => b === 0),
          label,
        ).toBe(true);
      } else {
        expect(G().eq(got, expected), label).toBe(true);
      }
    }
  }

  // The planned table, plain Pippenger, tiny windows (crowded buckets), mixed strides, and two threads.
  const shapes: (MsmOptions | undefined)[] = [
    undefined,
    { copies: 1 },
    { c: 2 },
    { c: 3, copies: 5 },
    { c: 8, copies: 3 },
    { c: 5, threads: 2 },
    { c: 15, copies: 1 },
  ];

  it('matches the naive sum on random points and scalars', () => {
    const n = group === 'G1' ? 48 : 16;
    const points = Array.from({ length: n }, randomPoint);
    const scalars = points.map(() => randomBelow(R));
    check(points, scalars, shapes);
  });

  it('handles zero and one scalars, r - 1, small values and points at infinity', () => {
    const points = Array.from({ length: 12 }, randomPoint);
    points[3] = G().zero;
    points[7] = G().zero;
    const scalars = [0n, 1n, R - 1n, 1n, 2n, 0n, (1n << 64n) + 1n, 5n, 1n, R - 2n, 1n << 200n, 3n];
    check(points, scalars, shapes);
    check(
      points,
      points.map(() => 0n),
      shapes,
    );
    check(
      points,
      points.map(() => 1n),
      shapes,
    );
  });

  it('handles a point meeting itself and its negation in one bucket', () => {
    const p = randomPoint();
    const q = randomPoint();
    const points = [p, p, p, G().neg(p), q, G().neg(q), q, p];
    check(points, [1n, 1n, 1n, 1n, 1n, 1n, 7n, 7n], shapes);
    check(points, [R - 1n, R - 1n, 1n, 1n, 3n, 3n, 3n, 5n], shapes);
    check([p, G().neg(p)], [9n, 9n], shapes);
    check([], [], [undefined]);
  });

  it('rejects points off the curve and scalars not below r', () => {
    const good = encode([randomPoint()]);
    const bad = good.slice();
    bad[0] = bad[0]! ^ 1;
    expect(() => msm(bad, toBytes(5n))).toThrow(RangeError);
    expect(() => msm(good, toBytes(R))).toThrow(RangeError);
    expect(() => msm(good, new Uint8Array(31))).toThrow(TypeError);
  });
});
