// Builds (once, cached in .cache/bench) a synthetic Poseidon-chain circuit for bench:prover: 126 links fill
// a 2^16 domain, 507 a 2^18 one.
//   node --import tsx bench/large-circuit.ts [--links 126]   builds it ahead of the benchmark
// The development powers of tau comes from bench/host/dev-ptau.cpp (compiled here with the addon's field
// and curve code): 21 s for 2^18 on two cores, where snarkjs's new + contribute + prepare phase2 took
// 38 minutes for 2^16 and would take hours for 2^18. The circuit compile and the zkey setup (snarkjs)
// take 21 s at 2^16 and 87 s at 2^18. Later runs reuse all of it.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

// snarkjs's setup code also calls logger.log for progress.
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

/**
 * Compiles bench/host/dev-ptau.cpp into a temporary folder and runs it once per file, each a ceremony of
 * 2^power with secrets of its own. A missing compiler or a failed run throws with the tool's message.
 */
export async function runDevPtau(power: number, ...files: string[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'dev-ptau-'));
  try {
    const bin = join(dir, 'dev-ptau');
    const source = fileURLToPath(new URL('host/dev-ptau.cpp', import.meta.url));
    const cxx = process.env.CXX ?? 'g++';
    await execFileAsync(cxx, ['-std=c++17', '-O3', '-fexceptions', '-pthread', source, '-o', bin]);
    for (const file of files) await execFileAsync(bin, [String(power), file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The development (INSECURE: one party knew tau) powers of tau, made once. */
export async function ensureBenchPtau(power: number): Promise<string> {
  mkdirSync(benchCacheDir, { recursive: true });
  const file = join(benchCacheDir, `dev-INSECURE-pot${power}.ptau`);
  if (existsSync(file)) return file;
  // A larger ceremony serves smaller circuits too.
  for (let p = power + 1; p <= 20; p++) {
    const bigger = join(benchCacheDir, `dev-INSECURE-pot${p}.ptau`);
    if (existsSync(bigger)) return bigger;
  }
  say(`bench: building a development powers of tau 2^${power} in ${benchCacheDir} (one time)...`);
  const start = performance.now();
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    await runDevPtau(power, tmp);
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
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
