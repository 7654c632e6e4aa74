// The native Groth16 verifier against snarkjs on the committed circuits: valid proofs, every coordinate
// and signal changed, points off the curve or outside G2's subgroup, values beyond the fields, malformed
// input; the pairing's bilinearity; and the service's verification gate using it.
import { randomBytes } from 'node:crypto';
import * as ffjavascript from 'ffjavascript';
import * as snarkjs from 'snarkjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { terminateCurves, verifyPolicyProof } from '../../../shared/zk';
import { groth16Backend, useGroth16Verifier, verifyGroth16 } from '../../../shared/zk/groth16';
import { loadNativeInternals, loadNativeVerifier } from '../../../native-prover';
import type { NativeInternals, NativeVerifier } from '../../../native-prover';
import { committedCircuits, committedProofs } from './committed-proofs';
import type { CommittedProof, ProofJson } from './committed-proofs';

const P = 21888242871839275222246405745257275088696311157297823662689037894645226208583n;
const R = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;

const mod = (x: bigint, m: bigint) => ((x % m) + m) % m;
const randomBelow = (m: bigint) => mod(BigInt(`0x${randomBytes(40).toString('hex')}`), m);

// The ffjavascript curve API this test uses (the package ships no types).
interface Field2 {
  random(): Uint8Array;
  add(a: Uint8Array, b: Uint8Array): Uint8Array;
  mul(a: Uint8Array, b: Uint8Array): Uint8Array;
  square(a: Uint8Array): Uint8Array;
  isSquare(a: Uint8Array): boolean;
  sqrt(a: Uint8Array): Uint8Array;
}
interface CurveGroup {
  g: Uint8Array;
  zero: Uint8Array;
  b: Uint8Array;
  F: Field2;
  add(a: Uint8Array, b: Uint8Array): Uint8Array;
  neg(a: Uint8Array): Uint8Array;
  timesFr(a: Uint8Array, s: Uint8Array): Uint8Array;
  timesScalar(a: Uint8Array, s: bigint): Uint8Array;
  toAffine(a: Uint8Array): Uint8Array;
  isZero(a: Uint8Array): boolean;
  isValid(a: Uint8Array): boolean;
  fromObject(o: unknown): Uint8Array;
  toObject(a: Uint8Array): unknown;
}
interface Bn128 {
  G1: CurveGroup;
  G2: CurveGroup;
  Fr: { e(x: bigint): Uint8Array };
  terminate(): Promise<void>;
}
const { buildBn128 } = ffjavascript as unknown as { buildBn128(singleThread?: boolean): Promise<Bn128> };

let verifier: NativeVerifier;
let internals: NativeInternals;
let curve: Bn128;
const cases: CommittedProof[] = [];

const copy = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

async function snarkjsVerdict(
  c: CommittedProof,
  publicSignals: string[],
  proof: ProofJson,
): Promise<boolean> {
  try {
    return await snarkjs.groth16.verify(c.vkey, publicSignals, proof);
  } catch {
    return false;
  }
}

/** A G2 point in the proof's JSON form. */
const g2Json = (point: Uint8Array): string[][] =>
  (curve.G2.toObject(curve.G2.toAffine(point)) as bigint[][]).map((pair) => pair.map(String));

/** A point on the twist y^2 = x^3 + b' that (with overwhelming probability) is not in G2's subgroup. */
function twistPointOutsideG2(): Uint8Array {
  const F = curve.G2.F;
  for (;;) {
    const x = F.random();
    const rhs = F.add(F.mul(F.square(x), x), curve.G2.b);
    if (!F.isSquare(rhs)) continue;
    const point = new Uint8Array(x.length * 2);
    point.set(x);
    point.set(F.sqrt(rhs), x.length);
    return point;
  }
}

beforeAll(async () => {
  const v = loadNativeVerifier();
  const i = loadNativeInternals();
  if (!v || !i) throw new Error('the native prover addon is not built (npm install builds it)');
  verifier = v;
  internals = i;
  curve = await buildBn128(true);
  cases.push(...(await committedProofs()));
}, 240_000);

afterAll(async () => {
  useGroth16Verifier(undefined);
  await curve?.terminate();
  await terminateCurves();
});

describe.each(committedCircuits)('circuit %s', (circuit) => {
  const get = () => cases.find((c) => c.circuit === circuit)!;

  it('accepts the valid proof, as snarkjs does', async () => {
    const c = get();
    expect(await snarkjsVerdict(c, c.publicSignals, c.proof)).toBe(true);
    expect(await verifier.verify(c.vkey, c.publicSignals, c.proof)).toBe(true);
    expect(await internals.verifyReason(c.vkey, c.publicSignals, c.proof)).toBe('');
  });

  it('agrees with snarkjs on every changed coordinate, signal and point, and never accepts what it rejects', async () => {
    const c = get();
    type Mutant = { label: string; proof: ProofJson; signals: string[]; reason?: string; stricter?: boolean };
    const mutants: Mutant[] = [];
    const add = (label: string, change: (p: ProofJson, s: string[]) => void, extra: Partial<Mutant> = {}) => {
      const proof = copy(c.proof);
      const signals = [...c.publicSignals];
      change(proof, signals);
      mutants.push({ label, proof, signals, ...extra });
    };
    const bump = (v: string, m: bigint) => String(mod(BigInt(v) + 1n, m));

    // Each coordinate of A, B and C (x, y and z) moved by one, set at random, and written as itself + p.
    const coords: [string, (p: ProofJson) => string[]][] = [
      ['pi_a', (p) => p.pi_a],
      ['pi_b[0]', (p) => p.pi_b[0]!],
      ['pi_b[1]', (p) => p.pi_b[1]!],
      ['pi_b[2]', (p) => p.pi_b[2]!],
      ['pi_c', (p) => p.pi_c],
    ];
    for (const [name, at] of coords) {
      for (let k = 0; k < at(c.proof).length; k++) {
        add(`${name}[${k}] + 1`, (p) => {
          at(p)[k] = bump(at(p)[k]!, P);
        });
        add(`${name}[${k}] random`, (p) => {
          at(p)[k] = String(randomBelow(P));
        });
        // The same point to snarkjs, which reduces coordinates mod p; the native verifier takes only
        // canonical coordinates.
        add(`${name}[${k}] + p`, (p) => (at(p)[k] = String(BigInt(at(p)[k]!) + P)), {
          stricter: true,
          reason: 'coordinate_out_of_field',
        });
      }
    }
    // Each public signal moved by one, replaced by r (zero mod r) and by itself + r.
    for (let k = 0; k < c.publicSignals.length; k++) {
      add(`signal ${k} + 1`, (_, s) => (s[k] = bump(s[k]!, R)), { reason: 'pairing_mismatch' });
      add(`signal ${k} = r`, (_, s) => (s[k] = String(R)), { reason: 'signal_out_of_field' });
      add(`signal ${k} + r`, (_, s) => (s[k] = String(BigInt(s[k]!) + R)), { reason: 'signal_out_of_field' });
    }
    // snarkjs takes a short list as if the missing signals were zero (and so accepts one whose last
    // signal is zero, as a policy proof's context often is); the native verifier wants the key's count.
    add('one signal fewer', (_, s) => s.pop(), { reason: 'signal_count_mismatch', stricter: true });
    add('one signal more', (_, s) => s.push('1'), { reason: 'signal_count_mismatch' });
    add('A and C swapped', (p) => ([p.pi_a, p.pi_c] = [p.pi_c, p.pi_a]), { reason: 'pairing_mismatch' });
    add('A negated', (p) => (p.pi_a[1] = String(P - BigInt(p.pi_a[1]!))), { reason: 'pairing_mismatch' });
    add('B coefficients swapped', (p) => {
      p.pi_b = p.pi_b.map(([c0, c1], i) => (i < 2 ? [c1!, c0!] : [c0!, c1!]));
    });
    add('A off the curve', (p) => (p.pi_a = ['1', '1', '1']), { reason: 'not_on_curve' });
    add('C at (0, 0)', (p) => (p.pi_c = ['0', '0', '1']), { reason: 'not_on_curve' });
    add('A at infinity', (p) => (p.pi_a = ['0', '1', '0']), { reason: 'point_at_infinity' });
    add(
      'B at infinity',
      (p) =>
        (p.pi_b = [
          ['0', '0'],
          ['1', '0'],
          ['0', '0'],
        ]),
      { reason: 'point_at_infinity' },
    );
    add('A with z = 2', (p) => (p.pi_a[2] = '2'), { reason: 'not_affine' });
    // B on the twist but outside G2's subgroup, alone and as B plus a point of the cofactor's order.
    const outside = twistPointOutsideG2();
    add('B outside the subgroup', (p) => (p.pi_b = g2Json(outside)), { reason: 'not_in_subgroup' });
    const b = curve.G2.fromObject(c.proof.pi_b.map((pair) => pair.map(BigInt)));
    const torsion = curve.G2.timesScalar(twistPointOutsideG2(), R);
    expect(curve.G2.isZero(torsion)).toBe(false);
    add('B plus cofactor torsion', (p) => (p.pi_b = g2Json(curve.G2.add(b, torsion))), {
      reason: 'not_in_subgroup',
    });

    for (const m of mutants) {
      const expected = await snarkjsVerdict(c, m.signals, m.proof);
      const reason = await internals.verifyReason(c.vkey, m.signals, m.proof);
      const got = await verifier.verify(c.vkey, m.signals, m.proof);
      expect(got, m.label).toBe(reason === '');
      // The one property that must hold without exception.
      if (got) expect(expected, `${m.label}: accepted natively, rejected by snarkjs`).toBe(true);
      if (m.stricter) expect(got, m.label).toBe(false);
      else expect(got, m.label).toBe(expected);
      if (m.reason) expect(reason, m.label).toBe(m.reason);
    }
  }, 120_000);
});

describe('malformed input', () => {
  const get = () => cases[0]!;

  async function expectCode(promise: Promise<unknown>, code: string) {
    const err = (await promise.then(
      () => null,
      (e: unknown) => e,
    )) as (Error & { code?: string }) | null;
    expect(err, `expected ${code}`).toBeInstanceOf(Error);
    expect(err?.code).toBe(code);
  }

  it('rejects proofs and signals not in the snarkjs shape with VERIFY_INPUT_INVALID', async () => {
    const c = get();
    const withA = (pi_a: unknown) => ({ ...c.proof, pi_a });
    const bad: [unknown, unknown][] = [
      [c.publicSignals, null],
      [c.publicSignals, 'proof'],
      [c.publicSignals, { pi_a: c.proof.pi_a, pi_b: c.proof.pi_b }],
      [c.publicSignals, withA(c.proof.pi_a.slice(0, 2))],
      [c.publicSignals, withA(['0x1', '2', '1'])],
      [c.publicSignals, withA(['-1', '2', '1'])],
      [c.publicSignals, withA(['1e5', '2', '1'])],
      [c.publicSignals, withA([1, 2, 1])],
      [c.publicSignals, withA(['9'.repeat(79), '2', '1'])],
      // 78 digits, above 2^256.
      [c.publicSignals, withA(['9'.repeat(78), '2', '1'])],
      [c.publicSignals, { ...c.proof, pi_b: [['1', '2'], ['3']] }],
      ['1,2', c.proof],
      [[1, 2], c.proof],
      [['12a'], c.proof],
      [Array.from({ length: 1025 }, () => '1'), c.proof],
    ];
    for (const [signals, proof] of bad) {
      await expectCode(verifier.verify(c.vkey, signals, proof), 'VERIFY_INPUT_INVALID');
      // The service's gate turns them into a plain false.
      expect(await verifyGroth16(c.vkey, signals, proof)).toBe(false);
    }
  });

  it('rejects a key that is malformed, for another curve, or with points it must not hold, with VKEY_INVALID', async () => {
    const c = get();
    const outside = g2Json(twistPointOutsideG2());
    const keys: Record<string, unknown>[] = [
      { ...c.vkey, curve: 'bls12381' },
      { ...c.vkey, protocol: 'plonk' },
      { ...c.vkey, IC: [] },
      { ...c.vkey, nPublic: 99 },
      { ...c.vkey, vk_alpha_1: ['1', '1', '1'] },
      { ...c.vkey, vk_gamma_2: outside },
      {
        ...c.vkey,
        vk_delta_2: [
          ['0', '0'],
          ['1', '0'],
          ['0', '0'],
        ],
      },
      { ...c.vkey, vk_beta_2: undefined },
    ];
    for (const key of keys) await expectCode(verifier.verify(key, c.publicSignals, c.proof), 'VKEY_INVALID');
    await expectCode(verifier.verify(null, c.publicSignals, c.proof), 'VKEY_INVALID');
  });

  it('prepares a key once and never verifies against a stale one after the key object changes', async () => {
    const c = get();
    const key = copy(c.vkey);
    expect(await verifier.verify(key, c.publicSignals, c.proof)).toBe(true);
    (key.IC as string[][])[1] = (cases[1]!.vkey.IC as string[][])[1]!;
    expect(await verifier.verify(key, c.publicSignals, c.proof)).toBe(false);
  });
});

describe('the pairing', () => {
  const g1 = (points: Uint8Array[]) => {
    const out = new Uint8Array(points.length * 64);
    points.forEach((p, i) => {
      if (!curve.G1.isZero(p)) out.set(curve.G1.toAffine(p), i * 64);
    });
    return out;
  };
  const g2 = (points: Uint8Array[]) => {
    const out = new Uint8Array(points.length * 128);
    points.forEach((p, i) => {
      if (!curve.G2.isZero(p)) out.set(curve.G2.toAffine(p), i * 128);
    });
    return out;
  };
  const times = (G: CurveGroup, s: bigint) => G.timesFr(G.g, curve.Fr.e(s));
  const check = (ps: Uint8Array[], qs: Uint8Array[]) => internals.pairingCheck(g1(ps), g2(qs));

  it('is bilinear and non-degenerate', () => {
    for (let round = 0; round < 3; round++) {
      const a = randomBelow(R - 1n) + 1n;
      const b = randomBelow(R - 1n) + 1n;
      const aP = times(curve.G1, a);
      const bQ = times(curve.G2, b);
      // e(aP, bQ) = e(abP, Q) = e(P, abQ)
      expect(check([aP, times(curve.G1, mod(-a * b, R))], [bQ, curve.G2.g])).toBe(true);
      expect(check([aP, curve.G1.neg(curve.G1.g)], [bQ, times(curve.G2, mod(a * b, R))])).toBe(true);
      expect(check([aP, times(curve.G1, mod(-a * b - 1n, R))], [bQ, curve.G2.g])).toBe(false);
      // Additive in each argument.
      const p1 = times(curve.G1, a);
      const p2 = times(curve.G1, b);
      expect(check([curve.G1.add(p1, p2), curve.G1.neg(p1), curve.G1.neg(p2)], [bQ, bQ, bQ])).toBe(true);
      const q1 = times(curve.G2, a);
      const q2 = times(curve.G2, b);
      expect(check([aP, curve.G1.neg(aP), curve.G1.neg(aP)], [curve.G2.add(q1, q2), q1, q2])).toBe(true);
    }
    expect(check([curve.G1.g], [curve.G2.g])).toBe(false);
    // e(P, Q)^r = 1: r P is infinity, so the product of r copies is one.
    expect(check([times(curve.G1, R - 1n), curve.G1.g], [curve.G2.g, curve.G2.g])).toBe(true);
    // A pair with the point at infinity contributes one.
    expect(check([curve.G1.zero], [curve.G2.g])).toBe(true);
  });

  it('refuses G2 points outside the subgroup', () => {
    expect(() => check([curve.G1.g], [twistPointOutsideG2()])).toThrow(RangeError);
    const torsion = curve.G2.timesScalar(twistPointOutsideG2(), R);
    expect(() => check([curve.G1.g], [curve.G2.add(curve.G2.g, torsion)])).toThrow(RangeError);
    expect(() => check([curve.G1.g], [times(curve.G2, randomBelow(R - 1n) + 1n)])).not.toThrow();
  });
});

describe('the service gate (shared/zk/groth16)', () => {
  it('verifies natively when the addon is built, with the same verdicts as snarkjs', async () => {
    useGroth16Verifier(undefined);
    expect(await groth16Backend()).toBe('native');
    const c = cases.find((x) => x.circuit === 'range')!;
    const tampered = copy(c.proof);
    tampered.pi_c = copy(c.proof.pi_a);
    for (const backend of ['native', 'snarkjs'] as const) {
      useGroth16Verifier(backend === 'native' ? undefined : null);
      expect(await groth16Backend()).toBe(backend);
      expect(await verifyGroth16(c.vkey, c.publicSignals, c.proof), backend).toBe(true);
      expect(await verifyGroth16(c.vkey, c.publicSignals, tampered), backend).toBe(false);
      expect(await verifyPolicyProof('range', c.proof, c.publicSignals), backend).toEqual({ valid: true });
      expect(await verifyPolicyProof('range', tampered, c.publicSignals), backend).toEqual({
        valid: false,
        reason: 'proof_invalid',
      });
    }
    useGroth16Verifier(undefined);
  });

  it('lets snarkjs decide when the native verifier fails for its own reasons', async () => {
    const c = cases.find((x) => x.circuit === 'threshold')!;
    const failing = {
      verify: () => Promise.reject(Object.assign(new Error('out of memory'), { code: 'OUT_OF_MEMORY' })),
    };
    useGroth16Verifier(failing);
    expect(await verifyGroth16(c.vkey, c.publicSignals, c.proof)).toBe(true);
    const tampered = copy(c.proof);
    tampered.pi_a = copy(c.proof.pi_c);
    expect(await verifyGroth16(c.vkey, c.publicSignals, tampered)).toBe(false);
    useGroth16Verifier(undefined);
  });
});
