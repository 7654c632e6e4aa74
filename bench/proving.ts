// Proving time alone, backend against backend on one witness: native (warm key), snarkjs, and the CLIs.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as snarkjs from 'snarkjs';
import { loadNativeProver } from '../native-prover';

const execFileAsync = promisify(execFile);

export interface SideBySide {
  nativeLoadMs: number | null;
  nativeMs: number | null;
  snarkjsMs: number;
  nativeCliMs: number | null;
  rapidsnarkMs: number | null;
  threads: number | null;
  /** Whether snarkjs accepted the native proof (null when there was none). */
  nativeVerified: boolean | null;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

/** The witness (.wtns image) of an input, from the circuit's wasm. */
export async function witnessFor(wasm: string, input: unknown): Promise<Uint8Array> {
  const mem: snarkjs.MemFile = { type: 'mem' };
  await snarkjs.wtns.calculate(input, wasm, mem);
  if (!mem.data) throw new Error('witness calculation produced no data');
  return mem.data;
}

/**
 * Median proving time of each backend over `runs` proofs of the same witness, after one warm-up each.
 * snarkjs proves from the zkey bytes in memory, as the snarkjs backend does; the CLIs (ours and
 * rapidsnark's, when `rapidsnarkBin` is given) are timed per process, zkey loading included.
 */
export async function sideBySide(options: {
  zkey: string;
  vkey: unknown;
  wtns: Uint8Array;
  runs: number;
  snarkjsRuns?: number;
  rapidsnarkBin?: string | undefined;
}): Promise<SideBySide> {
  const { zkey, wtns, runs } = options;
  const native = loadNativeProver();
  const dir = mkdtempSync(join(tmpdir(), 'px-bench-'));
  try {
    const wtnsFile = join(dir, 'witness.wtns');
    writeFileSync(wtnsFile, wtns);
    const out = [join(dir, 'proof.json'), join(dir, 'public.json')];

    let nativeLoadMs: number | null = null;
    let nativeMs: number | null = null;
    let nativeCliMs: number | null = null;
    let nativeVerified: boolean | null = null;
    if (native) {
      const t = performance.now();
      const prover = await native.load(zkey, { precompute: 'eager' });
      nativeLoadMs = performance.now() - t;
      try {
        const first = await prover.prove(wtns);
        nativeVerified = await snarkjs.groth16.verify(options.vkey, first.publicSignals, first.proof);
        const xs: number[] = [];
        for (let i = 0; i < runs; i++) xs.push(await time(() => prover.prove(wtns)));
        nativeMs = median(xs);
      } finally {
        prover.release();
      }
      if (native.cliPath) {
        const cli = native.cliPath;
        await execFileAsync(cli, [zkey, wtnsFile, ...out]);
        const xs: number[] = [];
        for (let i = 0; i < Math.min(runs, 3); i++)
          xs.push(await time(() => execFileAsync(cli, [zkey, wtnsFile, ...out])));
        nativeCliMs = median(xs);
      }
    }

    let rapidsnarkMs: number | null = null;
    if (options.rapidsnarkBin) {
      const bin = options.rapidsnarkBin;
      await execFileAsync(bin, [zkey, wtnsFile, ...out]);
      const xs: number[] = [];
      for (let i = 0; i < Math.min(runs, 3); i++)
        xs.push(await time(() => execFileAsync(bin, [zkey, wtnsFile, ...out])));
      rapidsnarkMs = median(xs);
    }

    const zkeyMem = { type: 'mem' as const, data: new Uint8Array(readFileSync(zkey)) };
    const wtnsMem = { type: 'mem' as const, data: wtns };
    await snarkjs.groth16.prove(zkeyMem, wtnsMem);
    const js: number[] = [];
    for (let i = 0; i < (options.snarkjsRuns ?? runs); i++) {
      js.push(await time(() => snarkjs.groth16.prove(zkeyMem, wtnsMem)));
    }
    return {
      nativeLoadMs,
      nativeMs,
      snarkjsMs: median(js),
      nativeCliMs,
      rapidsnarkMs,
      threads: native?.defaultThreads ?? null,
      nativeVerified,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One line: native and snarkjs side by side, the speedup, and the CLIs when timed. */
export function formatSideBySide(r: SideBySide, fmt: (n: number, d?: number) => string): string {
  const parts: string[] = [];
  if (r.nativeMs === null) {
    parts.push('native not built');
  } else {
    parts.push(
      `native ${fmt(r.nativeMs)} ms (${r.threads} threads, key load ${fmt(r.nativeLoadMs ?? NaN)} ms)`,
    );
  }
  parts.push(`snarkjs ${fmt(r.snarkjsMs)} ms`);
  if (r.nativeMs !== null) parts.push(`native ×${fmt(r.snarkjsMs / r.nativeMs)}`);
  const cli: string[] = [];
  if (r.nativeCliMs !== null) cli.push(`native ${fmt(r.nativeCliMs)} ms`);
  if (r.rapidsnarkMs !== null) cli.push(`rapidsnark ${fmt(r.rapidsnarkMs)} ms`);
  if (cli.length) parts.push(`CLI per process: ${cli.join(', ')}`);
  if (r.nativeVerified === false) parts.push('NATIVE PROOF REJECTED BY SNARKJS');
  return parts.join(' | ');
}

/**
 * The side-by-side runs as report figures (per circuit: native warm, native CLI) and baseline
 * (snarkjs, rapidsnark), with the two ratios the targets bound: the slowest native CLI against
 * rapidsnark, whole process each, and the smallest warm speedup over snarkjs.
 */
export function sideBySideFigures(sides: Record<string, SideBySide>): {
  figures: Record<string, number | null>;
  baseline: Record<string, number | null>;
} {
  const figures: Record<string, number | null> = {};
  const baseline: Record<string, number | null> = {};
  const overRapidsnark: number[] = [];
  const speedups: number[] = [];
  for (const [name, r] of Object.entries(sides)) {
    figures[`${name}.nativeMs`] = r.nativeMs;
    figures[`${name}.nativeCliMs`] = r.nativeCliMs;
    baseline[`${name}.snarkjsMs`] = r.snarkjsMs;
    baseline[`${name}.rapidsnarkMs`] = r.rapidsnarkMs;
    if (r.nativeMs !== null) speedups.push(r.snarkjsMs / r.nativeMs);
    if (r.nativeCliMs !== null && r.rapidsnarkMs !== null)
      overRapidsnark.push(r.nativeCliMs / r.rapidsnarkMs);
  }
  figures.worstNativeCliOverRapidsnark = overRapidsnark.length ? Math.max(...overRapidsnark) : null;
  figures.minNativeSpeedupOverSnarkjs = speedups.length ? Math.min(...speedups) : null;
  return { figures, baseline };
}
