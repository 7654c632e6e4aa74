// Builds (once) the small circuits the native prover is tested and benchmarked on, cached in .cache/native-prover.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as snarkjs from 'snarkjs';

const execFileAsync = promisify(execFile);

export const repoRoot = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
export const cacheDir = join(repoRoot, '.cache', 'native-prover');
const sourcesDir = join(repoRoot, 'test', 'zk', 'native', 'circuits');

/** Random below 2^bits, as a decimal string. */
export function randomUint(bits: number): string {
  const bytes = randomBytes(Math.ceil(bits / 8));
  return (BigInt(`0x${bytes.toString('hex')}`) & ((1n << BigInt(bits)) - 1n)).toString();
}

export interface Fixture {
  name: string;
  zkey: string;
  wasm: string;
  vkey: Record<string, unknown>;
  /** A fresh satisfying input with random values on every call. */
  randomInput(): Record<string, string>;
}

export const fixtureNames = ['mixed', 'private', 'chain'] as const;

const circuits: Record<string, () => Record<string, string>> = {
  mixed: () => ({ a: randomUint(60), b: randomUint(250), c: randomUint(64), salt: randomUint(250) }),
  private: () => ({ x: randomUint(250), y: randomUint(250) }),
  chain: () => ({ seed: randomUint(250), key: randomUint(250) }),
};

const quiet: snarkjs.Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** The development powers of tau, made once and reused: regenerating it is the slow part. */
async function ensurePtau(power: number): Promise<string> {
  const file = join(cacheDir, `pot${power}.ptau`);
  if (existsSync(file)) return file;
  // The circuits build keeps an equally insecure development file (committed, 2^14): any file of at least
  // the power serves (snarkjs takes a circuit's domain from a larger one), and making one is the slow
  // part (~1 min for 2^12 on two cores).
  for (let p = power; p <= 14; p++) {
    const shared = join(repoRoot, 'circuits', 'artifacts', `dev-INSECURE-pot${p}.ptau`);
    if (existsSync(shared)) return shared;
  }
  const tmp0 = `${file}.${process.pid}.0`;
  const tmp1 = `${file}.${process.pid}.1`;
  const tmp2 = `${file}.${process.pid}.2`;
  const curve = await snarkjs.curves.getCurveFromName('bn128');
  await snarkjs.powersOfTau.newAccumulator(curve, power, tmp0, quiet);
  await snarkjs.powersOfTau.contribute(tmp0, tmp1, 'dev', randomBytes(32).toString('hex'), quiet);
  await snarkjs.powersOfTau.preparePhase2(tmp1, tmp2, quiet);
  renameSync(tmp2, file);
  rmSync(tmp0, { force: true });
  rmSync(tmp1, { force: true });
  return file;
}

async function buildCircuit(name: string, ptauPower: number, source?: string): Promise<void> {
  const outDir = join(cacheDir, name);
  const zkey = join(outDir, `${name}.zkey`);
  const vkey = join(outDir, `${name}.vkey.json`);
  if (existsSync(zkey) && existsSync(vkey)) return;
  mkdirSync(outDir, { recursive: true });
  const cli = join(repoRoot, 'node_modules', 'circom2', 'cli.js');
  let sourceFile = join(sourcesDir, `${name}.circom`);
  if (source !== undefined) {
    sourceFile = join(outDir, `${name}.circom`);
    writeFileSync(sourceFile, source);
  }
  await execFileAsync(
    process.execPath,
    [cli, sourceFile, '--r1cs', '--wasm', '-l', 'node_modules', '-o', outDir],
    {
      cwd: repoRoot,
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  const ptau = await ensurePtau(ptauPower);
  const tmp = `${zkey}.${process.pid}.tmp`;
  await snarkjs.zKey.newZKey(join(outDir, `${name}.r1cs`), ptau, tmp, quiet);
  const key = await snarkjs.zKey.exportVerificationKey(tmp, quiet);
  writeFileSync(vkey, JSON.stringify(key));
  renameSync(tmp, zkey);
}

export function fixturePaths(name: string) {
  const outDir = join(cacheDir, name);
  return {
    zkey: join(outDir, `${name}.zkey`),
    wasm: join(outDir, `${name}_js`, `${name}.wasm`),
    vkey: join(outDir, `${name}.vkey.json`),
  };
}

/** Compiles and sets up every test circuit that is not cached yet. */
export async function ensureFixtures(): Promise<Fixture[]> {
  mkdirSync(cacheDir, { recursive: true });
  const out: Fixture[] = [];
  for (const [name, randomInput] of Object.entries(circuits)) {
    await buildCircuit(name, 12);
    const paths = fixturePaths(name);
    out.push({
      name,
      zkey: paths.zkey,
      wasm: paths.wasm,
      vkey: JSON.parse(readFileSync(paths.vkey, 'utf8')) as Record<string, unknown>,
      randomInput,
    });
  }
  return out;
}

/** Witness bytes (.wtns image) for an input, computed by the circuit's wasm. */
export async function computeWitness(wasm: string, input: unknown): Promise<Uint8Array> {
  const mem: snarkjs.MemFile = { type: 'mem' };
  await snarkjs.wtns.calculate(input, wasm, mem);
  if (!mem.data) throw new Error('witness calculation produced no data');
  return mem.data;
}

/** A Poseidon chain of `links` hashes (~520 constraints each) for benchmarks; needs a ptau of `ptauPower`. */
export async function ensureChainFixture(links: number, ptauPower: number): Promise<Fixture> {
  const name = `chain${links}`;
  const base = readFileSync(join(sourcesDir, 'chain.circom'), 'utf8');
  const source = base.replace(/Chain\(\d+\);/, `Chain(${links});`);
  await buildCircuit(name, ptauPower, source);
  const paths = fixturePaths(name);
  return {
    name,
    zkey: paths.zkey,
    wasm: paths.wasm,
    vkey: JSON.parse(readFileSync(paths.vkey, 'utf8')) as Record<string, unknown>,
    randomInput: () => ({ seed: randomUint(250), key: randomUint(250) }),
  };
}
