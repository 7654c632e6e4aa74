// Builds (once, cached in .cache/bench) a synthetic Poseidon-chain circuit of about 2^16 constraints for bench:prover.
//   node --import tsx bench/large-circuit.ts [--links 126]   builds it ahead of the benchmark
// The one-time cost is the development powers of tau (snarkjs): power 16 took 38 minutes on a busy 2-core
// machine (its preparePhase2 is most of it); the circuit compile and zkey setup under a minute more.
// Later runs reuse both.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as snarkjs from 'snarkjs';

const execFileAsync = promisify(execFile);

const repoRoot = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const benchCacheDir = join(repoRoot, '.cache', 'bench');

/** Links in the default chain: each Poseidon(2) link is 517 constraints, so 126 links fill a 2^16 domain. */
export const defaultLinks = 126;
const constraintsPerLink = 517;

export interface LargeCircuit {
  name: string;
  zkey: string;
  wasm: string;
  vkey: Record<string, unknown>;
  constraints: number;
  /** A fresh satisfying input with random values on every call. */
  randomInput(): Record<string, string>;
}

// snarkjs's ceremony code also calls logger.log for progress.
const quiet = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  log: () => {},
} as snarkjs.Logger;
const say = (line: string) => process.stdout.write(`${line}\n`);

function randomField(): string {
  return (BigInt(`0x${randomBytes(31).toString('hex')}`) >> 2n).toString();
}

function chainSource(links: number): string {
  return `pragma circom 2.1.0;
// Synthetic benchmark circuit: a chain of Poseidon(2) hashes keyed by one public input.
include "circomlib/circuits/poseidon.circom";

template Chain(n) {
    signal input seed;
    signal input key;
    signal output out;
    component h[n];
    signal acc[n + 1];
    acc[0] <== seed;
    for (var i = 0; i < n; i++) {
        h[i] = Poseidon(2);
        h[i].inputs[0] <== acc[i];
        h[i].inputs[1] <== key;
        acc[i + 1] <== h[i].out;
    }
    out <== acc[n];
}

component main {public [key]} = Chain(${links});
`;
}

/** The smallest power of two domain (as snarkjs sizes it) that holds `constraints` plus the public inputs. */
export function ptauPowerFor(constraints: number, publicInputs: number): number {
  let power = 1;
  while (2 ** power < constraints + publicInputs + 1) power++;
  return power;
}

/** The development (INSECURE, random single contribution) powers of tau, made once. */
export async function ensureBenchPtau(power: number): Promise<string> {
  mkdirSync(benchCacheDir, { recursive: true });
  const file = join(benchCacheDir, `pot${power}.ptau`);
  if (existsSync(file)) return file;
  // A larger ceremony serves smaller circuits too.
  for (let p = power + 1; p <= 20; p++) {
    const bigger = join(benchCacheDir, `pot${p}.ptau`);
    if (existsSync(bigger)) return bigger;
  }
  say(
    `bench: building a development powers of tau 2^${power} in ${benchCacheDir} (one time; about 40 minutes on 2 cores)...`,
  );
  const start = performance.now();
  const tmp = [0, 1, 2].map((i) => `${file}.${process.pid}.${i}`);
  try {
    const curve = await snarkjs.curves.getCurveFromName('bn128');
    await snarkjs.powersOfTau.newAccumulator(curve, power, tmp[0]!, quiet);
    say(`bench:   accumulator done (${((performance.now() - start) / 1000).toFixed(0)} s)`);
    await snarkjs.powersOfTau.contribute(tmp[0]!, tmp[1]!, 'bench', randomBytes(32).toString('hex'), quiet);
    say(`bench:   contribution done (${((performance.now() - start) / 1000).toFixed(0)} s)`);
    await snarkjs.powersOfTau.preparePhase2(tmp[1]!, tmp[2]!, quiet);
    renameSync(tmp[2]!, file);
  } finally {
    for (const t of tmp) rmSync(t, { force: true });
  }
  say(`bench:   powers of tau 2^${power} ready (${((performance.now() - start) / 1000).toFixed(0)} s)`);
  return file;
}

/** nConstraints from an r1cs header section: n8, prime, nWires, nPubOut, nPubIn, nPrvIn, u64 nLabels, nConstraints. */
function r1csConstraints(file: Buffer): number {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const nSections = view.getUint32(8, true);
  let pos = 12;
  for (let i = 0; i < nSections; i++) {
    const type = view.getUint32(pos, true);
    const size = Number(view.getBigUint64(pos + 4, true));
    if (type === 1) {
      const n8 = view.getUint32(pos + 12, true);
      return view.getUint32(pos + 12 + 4 + n8 + 4 * 4 + 8, true);
    }
    pos += 12 + size;
  }
  throw new Error('r1cs file has no header section');
}

/** Compiles and sets up the chain circuit of `links` Poseidon hashes unless it is cached already. */
export async function ensureLargeCircuit(links = defaultLinks): Promise<LargeCircuit> {
  const name = `chain${links}`;
  const outDir = join(benchCacheDir, name);
  const zkey = join(outDir, `${name}.zkey`);
  const vkeyFile = join(outDir, `${name}.vkey.json`);
  const infoFile = join(outDir, `${name}.info.json`);
  const wasm = join(outDir, `${name}_js`, `${name}.wasm`);
  if (!(existsSync(zkey) && existsSync(vkeyFile) && existsSync(infoFile) && existsSync(wasm))) {
    mkdirSync(outDir, { recursive: true });
    const power = ptauPowerFor(links * constraintsPerLink, 2);
    const ptau = await ensureBenchPtau(power);
    say(`bench: compiling and setting up ${name} (one time; a few minutes)...`);
    const start = performance.now();
    const source = join(outDir, `${name}.circom`);
    writeFileSync(source, chainSource(links));
    const cli = join(repoRoot, 'node_modules', 'circom2', 'cli.js');
    await execFileAsync(
      process.execPath,
      [cli, source, '--r1cs', '--wasm', '-l', 'node_modules', '-o', outDir],
      { cwd: repoRoot, maxBuffer: 16 * 1024 * 1024 },
    );
    const r1cs = join(outDir, `${name}.r1cs`);
    const tmp = `${zkey}.${process.pid}.tmp`;
    try {
      await snarkjs.zKey.newZKey(r1cs, ptau, tmp, quiet);
      const key = await snarkjs.zKey.exportVerificationKey(tmp, quiet);
      writeFileSync(vkeyFile, JSON.stringify(key));
      writeFileSync(infoFile, JSON.stringify({ constraints: r1csConstraints(readFileSync(r1cs)) }));
      renameSync(tmp, zkey);
    } finally {
      rmSync(tmp, { force: true });
    }
    say(`bench:   ${name} ready (${((performance.now() - start) / 1000).toFixed(0)} s)`);
  }
  const { constraints } = JSON.parse(readFileSync(infoFile, 'utf8')) as { constraints: number };
  return {
    name,
    zkey,
    wasm,
    vkey: JSON.parse(readFileSync(vkeyFile, 'utf8')) as Record<string, unknown>,
    constraints,
    randomInput: () => ({ seed: randomField(), key: randomField() }),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--links');
  const links = i < 0 ? defaultLinks : Number(process.argv[i + 1]);
  if (!Number.isInteger(links) || links < 1) throw new Error('--links needs a positive integer');
  const c = await ensureLargeCircuit(links);
  say(`${c.name}: ${c.constraints} constraints, zkey ${c.zkey}`);
  await (globalThis as { curve_bn128?: { terminate(): Promise<void> } }).curve_bn128?.terminate();
}
