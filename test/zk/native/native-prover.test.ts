// The native Groth16 prover: proofs snarkjs accepts, snarkjs's public signals, the CLI, and clean failures.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as snarkjs from 'snarkjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNativeProver } from '../../../native-prover';
import type { CircuitProver, NativeProver } from '../../../native-prover';
import { computeWitness, ensureFixtures, fixtureNames, repoRoot } from './fixtures';
import type { Fixture } from './fixtures';

const execFileAsync = promisify(execFile);
const R = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;

let native: NativeProver;
let fixtures: Map<string, Fixture>;
const provers = new Map<string, CircuitProver>();
let workDir: string;

function fixture(name: string): Fixture {
  const f = fixtures.get(name);
  if (!f) throw new Error(`no fixture ${name}`);
  return f;
}

async function prover(name: string): Promise<CircuitProver> {
  let p = provers.get(name);
  if (!p) {
    p = await native.load(fixture(name).zkey);
    provers.set(name, p);
  }
  return p;
}

/** Byte offset and size of a section in an iden3 binary file (zkey, wtns). */
function section(file: Uint8Array, id: number): { offset: number; size: number } {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const count = view.getUint32(8, true);
  let pos = 12;
  for (let i = 0; i < count; i++) {
    const type = view.getUint32(pos, true);
    const size = Number(view.getBigUint64(pos + 4, true));
    if (type === id) return { offset: pos + 12, size };
    pos += 12 + size;
  }
  throw new Error(`section ${id} not found`);
}

async function expectCode(promise: Promise<unknown>, code: string, message?: RegExp) {
  const err = (await promise.then(
    () => null,
    (e: unknown) => e,
  )) as (Error & { code?: string }) | null;
  expect(err, `expected a ${code} failure`).toBeInstanceOf(Error);
  expect(err?.code).toBe(code);
  if (message) expect(err?.message).toMatch(message);
}

beforeAll(async () => {
  const loaded = loadNativeProver();
  if (!loaded) throw new Error('the native prover addon is not built (npm install builds it)');
  native = loaded;
  fixtures = new Map((await ensureFixtures()).map((f) => [f.name, f]));
  workDir = mkdtempSync(join(tmpdir(), 'native-prover-'));
}, 600_000);

afterAll(async () => {
  for (const p of provers.values()) p.release();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  await (globalThis as { curve_bn128?: { terminate(): Promise<void> } }).curve_bn128?.terminate();
});

describe.each(fixtureNames)('circuit %s', (name) => {
  it('proves random witnesses that snarkjs verifies, with snarkjs public signals', async () => {
    const f = fixture(name);
    const p = await prover(name);
    for (let round = 0; round < 2; round++) {
      const wtns = await computeWitness(f.wasm, f.randomInput());
      const ours = await p.prove(wtns);
      const theirs = await snarkjs.groth16.prove(f.zkey, wtns);
      expect(ours.publicSignals).toEqual(theirs.publicSignals);
      expect(ours.proof.protocol).toBe('groth16');
      expect(ours.proof.curve).toBe('bn128');
      expect(ours.proof.pi_a[2]).toBe('1');
      expect(ours.proof.pi_b[2]).toEqual(['1', '0']);
      expect(await snarkjs.groth16.verify(f.vkey, ours.publicSignals, ours.proof)).toBe(true);
    }
  });

  it('draws fresh blinding per proof and rejects a proof bound to other signals', async () => {
    const f = fixture(name);
    const p = await prover(name);
    const wtns = await computeWitness(f.wasm, f.randomInput());
    const [one, two] = await Promise.all([p.prove(wtns, { threads: 1 }), p.prove(wtns, { threads: 3 })]);
    expect(one!.proof.pi_a).not.toEqual(two!.proof.pi_a);
    expect(await snarkjs.groth16.verify(f.vkey, one!.publicSignals, one!.proof)).toBe(true);
    expect(await snarkjs.groth16.verify(f.vkey, two!.publicSignals, two!.proof)).toBe(true);
    const forged = { ...one!.proof, pi_c: two!.proof.pi_c };
    expect(await snarkjs.groth16.verify(f.vkey, one!.publicSignals, forged)).toBe(false);
    if (one!.publicSignals.length > 0) {
      const tampered = [...one!.publicSignals];
      tampered[0] = ((BigInt(tampered[0]!) + 1n) % R).toString();
      expect(await snarkjs.groth16.verify(f.vkey, tampered, one!.proof)).toBe(false);
    }
  });

  it('proves many at once on the shared pool, each proof its own and valid', async () => {
    // Concurrent proofs split the pool's threads among themselves (fewer per proof while more run):
    // every one must still be the proof of its own witness.
    const f = fixture(name);
    const p = await prover(name);
    const inputs = await Promise.all(
      Array.from({ length: 12 }, () => computeWitness(f.wasm, f.randomInput())),
    );
    const outs = await Promise.all(inputs.map((w, i) => p.prove(w, { threads: 1 + (i % 4) })));
    for (const [i, out] of outs.entries()) {
      const alone = await p.prove(inputs[i]!, { threads: 1 });
      expect(out.publicSignals).toEqual(alone.publicSignals);
      expect(await snarkjs.groth16.verify(f.vkey, out.publicSignals, out.proof)).toBe(true);
    }
  });
});

describe('inputs', () => {
  it('accepts a raw witness buffer and a zkey given as bytes', async () => {
    const f = fixture('mixed');
    const wtns = await computeWitness(f.wasm, f.randomInput());
    const data = section(wtns, 2);
    const raw = wtns.slice(data.offset, data.offset + data.size);
    const fromBytes = await native.load(readFileSync(f.zkey));
    try {
      const { nVars, nPublic, domainSize } = (await prover('mixed')).info;
      expect(fromBytes.info).toMatchObject({ nVars, nPublic, domainSize });
      const out = await fromBytes.prove(raw, { threads: 2 });
      expect(await snarkjs.groth16.verify(f.vkey, out.publicSignals, out.proof)).toBe(true);
    } finally {
      fromBytes.release();
    }
  });

  it('proves with plain tables, with shifted tables built eagerly, and with ones built in the background', async () => {
    const f = fixture('chain');
    const wtns = await computeWitness(f.wasm, f.randomInput());
    const verify = async (p: CircuitProver) => {
      const out = await p.prove(wtns);
      expect(await snarkjs.groth16.verify(f.vkey, out.publicSignals, out.proof)).toBe(true);
    };
    const off = await native.load(f.zkey, { precompute: 'off' });
    const eager = await native.load(f.zkey, { precompute: 'eager' });
    const background = await native.load(f.zkey, { precompute: 'background' });
    try {
      await verify(off);
      expect(off.info.precomputed).toBe(false);
      expect(eager.info.precomputed).toBe(true);
      expect(eager.info.tableBytes).toBeGreaterThan(2 * off.info.tableBytes);
      await verify(eager);
      await verify(background); // with whichever tables are in at this moment
      for (let i = 0; i < 300 && !background.info.precomputed; i++)
        await new Promise((r) => setTimeout(r, 20));
      expect(background.info.precomputed).toBe(true);
      await verify(background);
    } finally {
      off.release();
      eager.release();
      background.release();
    }
    await expect(native.load(f.zkey, { precompute: 'always' as 'off' })).rejects.toThrow(RangeError);
  });

  it('reports the circuit shape from the zkey header', async () => {
    const p = await prover('chain');
    expect(p.info.domainSize).toBe(4096);
    expect(p.info.nPublic).toBe(2);
    expect((await prover('private')).info.nPublic).toBe(0);
  });
});

describe('CLI (rapidsnark interface)', () => {
  it('writes proof.json and public.json that snarkjs verifies', async () => {
    expect(native.cliPath).not.toBeNull();
    const f = fixture('mixed');
    const wtnsPath = join(workDir, 'mixed.wtns');
    writeFileSync(wtnsPath, await computeWitness(f.wasm, f.randomInput()));
    const proofPath = join(workDir, 'proof.json');
    const publicPath = join(workDir, 'public.json');
    await execFileAsync(native.cliPath!, [f.zkey, wtnsPath, proofPath, publicPath]);
    const proof = JSON.parse(readFileSync(proofPath, 'utf8')) as Record<string, unknown>;
    const pub = JSON.parse(readFileSync(publicPath, 'utf8')) as string[];
    expect(Object.keys(proof)).toEqual(['pi_a', 'pi_b', 'pi_c', 'protocol', 'curve']);
    expect(await snarkjs.groth16.verify(f.vkey, pub, proof)).toBe(true);
  });

  it('exits non-zero with a message on bad arguments and bad files', async () => {
    const f = fixture('mixed');
    await expect(execFileAsync(native.cliPath!, [f.zkey])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/Usage: prover/),
    });
    const bogus = join(workDir, 'bogus.zkey');
    writeFileSync(bogus, 'not a zkey at all');
    await expect(
      execFileAsync(native.cliPath!, [bogus, bogus, join(workDir, 'p.json'), join(workDir, 'q.json')]),
    ).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/ZKEY_INVALID/) });
  });
});

describe('clean failures', () => {
  it('rejects missing, foreign, truncated and corrupted zkeys', async () => {
    const zkey = readFileSync(fixture('mixed').zkey);
    await expectCode(native.load(join(workDir, 'missing.zkey')), 'IO', /cannot open/);
    await expectCode(native.load(new Uint8Array(64)), 'ZKEY_INVALID', /not a zkey/);
    await expectCode(native.load(zkey.subarray(0, zkey.length >> 1)), 'ZKEY_INVALID');

    const badPoint = Uint8Array.from(zkey);
    badPoint[section(zkey, 5).offset + 64 * 3 + 7]! ^= 0x40;
    await expectCode(native.load(badPoint), 'ZKEY_INVALID', /not on the curve/);

    const badCurve = Uint8Array.from(zkey);
    badCurve[section(zkey, 2).offset + 4]! ^= 1;
    await expectCode(native.load(badCurve), 'ZKEY_INVALID', /bn128/);

    const badCoef = Uint8Array.from(zkey);
    const coefs = section(zkey, 4);
    new DataView(badCoef.buffer).setUint32(coefs.offset + 4 + 8, 0xffffff, true);
    await expectCode(native.load(badCoef), 'ZKEY_INVALID', /coefficient/);

    const notGroth = Uint8Array.from(zkey);
    new DataView(notGroth.buffer).setUint32(section(zkey, 1).offset, 2, true);
    await expectCode(native.load(notGroth), 'ZKEY_INVALID', /not groth16/);
  });

  it('rejects witnesses of the wrong size, field or shape', async () => {
    const p = await prover('mixed');
    const other = fixture('chain');
    const foreign = await computeWitness(other.wasm, other.randomInput());
    await expectCode(p.prove(foreign), 'WITNESS_INVALID', /does not match the circuit/);
    await expectCode(p.prove(new Uint8Array(33)), 'WITNESS_INVALID', /multiple of 32/);
    await expectCode(p.prove(new Uint8Array(0)), 'WITNESS_INVALID');

    const f = fixture('mixed');
    const wtns = await computeWitness(f.wasm, f.randomInput());
    await expectCode(p.prove(wtns.subarray(0, wtns.length - 5)), 'WITNESS_INVALID');
    const unreduced = Uint8Array.from(wtns);
    unreduced.fill(0xff, section(wtns, 2).offset + 32, section(wtns, 2).offset + 64);
    await expectCode(p.prove(unreduced), 'WITNESS_INVALID', /not reduced/);

    await expect(p.prove('nope' as unknown as Uint8Array)).rejects.toThrow(TypeError);
    await expect(p.prove(wtns, { threads: 0 })).rejects.toThrow(RangeError);

    // The prover still works after all of that.
    const ok = await p.prove(wtns);
    expect(await snarkjs.groth16.verify(f.vkey, ok.publicSignals, ok.proof)).toBe(true);
  });

  it('rejects proofs on a released key', async () => {
    const p = await native.load(fixture('private').zkey);
    p.release();
    await expectCode(p.prove(new Uint8Array(32 * p.info.nVars)), 'RELEASED');
  });
});

// The project's own circuits, when their artifacts have been built.
const artifactsDir = join(repoRoot, 'circuits', 'artifacts');
const manifestFile = join(artifactsDir, 'manifest.json');
const manifest = existsSync(manifestFile)
  ? (JSON.parse(readFileSync(manifestFile, 'utf8')) as { circuits: Record<string, { policyId: string }> })
  : null;
const samples: Record<string, unknown> = {
  threshold: { value: 10, threshold: 7 },
  range: { value: 5, low: 1, high: 9 },
  membership: { value: 3, set: [1, 2, 3] },
};

describe.runIf(manifest !== null)('project circuits in circuits/artifacts', () => {
  const names = Object.keys(manifest?.circuits ?? {});
  it.each(names)('%s: native proof verifies and matches snarkjs signals', async (circuit) => {
    const zkey = join(artifactsDir, `${circuit}.zkey`);
    const wasm = join(artifactsDir, `${circuit}.wasm`);
    const vkey = JSON.parse(readFileSync(join(artifactsDir, `${circuit}.vkey.json`), 'utf8')) as unknown;
    const p = await native.load(zkey);
    try {
      const policyId = manifest!.circuits[circuit]!.policyId;
      const sample = samples[policyId];
      if (sample === undefined) return;
      const { preparePolicyInput } = await import('../../../shared/zk/policies');
      const { circuitInput } = await preparePolicyInput(policyId, sample);
      const wtns = await computeWitness(wasm, circuitInput);
      const ours = await p.prove(wtns);
      const theirs = await snarkjs.groth16.prove(zkey, wtns);
      expect(ours.publicSignals).toEqual(theirs.publicSignals);
      expect(await snarkjs.groth16.verify(vkey, ours.publicSignals, ours.proof)).toBe(true);
    } finally {
      p.release();
    }
  });
});
