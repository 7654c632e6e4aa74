// bench:prover-scaling — how proving time falls with cores, on the ~2^16-constraint bench circuit
// (bench/large-circuit.ts, built once into .cache/bench). For 1, 2, 4, … up to this host's cores, each
// prover runs as its own process pinned with `taskset` to that many cores: the project's native CLI
// (PROVER_THREADS set to the core count) and, when RAPIDSNARK_BIN is set, rapidsnark (its thread count
// follows the pinned cores through a preloaded get_nprocs, below), both timed per process with the
// proving key loaded, median of BENCH_RUNS. Hosts without Node: bench/host/prover-host.sh. Efficiency at n
// cores is t(1) / (n · t(n)). The baseline is rapidsnark at the same core count, measured in the same run.
//   RAPIDSNARK_BIN=/path/to/prover [BENCH_LINKS=507 for 2^18] npm run bench:prover-scaling
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { terminateCurves } from '../shared/zk/index';
import { loadNativeProver } from '../native-prover';
import { defaultLinks, ensureLargeCircuit } from './large-circuit';
import { witnessFor } from './proving';
import { printReport } from './report';
import type { Figures, Target } from './report';

const execFileAsync = promisify(execFile);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const RAPIDSNARK_BIN = process.env.RAPIDSNARK_BIN || undefined;
const cores = cpus().length;
const counts: number[] = [];
for (let n = 1; n < cores; n *= 2) counts.push(n);
counts.push(cores);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number | null, d = 0) => (n === null ? '–' : n.toFixed(d));

/**
 * rapidsnark, pinned to n cores, would still run one thread per host core (bench/host/nprocs.c says
 * why); preloading that file's get_nprocs() gives it n, as PROVER_THREADS gives the native CLI. Built
 * with the host's C compiler; without one, rapidsnark runs as it is.
 */
async function affinityShim(dir: string): Promise<string | undefined> {
  const lib = join(dir, 'nprocs.so');
  try {
    await execFileAsync('cc', [
      '-O2',
      '-shared',
      '-fPIC',
      fileURLToPath(new URL('host/nprocs.c', import.meta.url)),
      '-o',
      lib,
    ]);
    return lib;
  } catch {
    console.log('no C compiler: rapidsnark runs one thread per host core whatever it is pinned to');
    return undefined;
  }
}

/** Median wall time of `bin zkey wtns proof public` pinned to the first `n` cores, after one warm-up. */
async function timed(
  bin: string,
  n: number,
  files: string[],
  threadVar: string,
  extraEnv: Record<string, string> = {},
): Promise<number> {
  const args = ['-c', `0-${n - 1}`, bin, ...files];
  const options = { env: { ...process.env, ...extraEnv, [threadVar]: String(n) } };
  await execFileAsync('taskset', args, options);
  const xs: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await execFileAsync('taskset', args, options);
    xs.push(performance.now() - t);
  }
  return median(xs);
}

const native = loadNativeProver();
if (!native?.cliPath)
  throw new Error('the native prover is not built: run npm ci (it builds the addon and its CLI)');
const large = await ensureLargeCircuit(Number(process.env.BENCH_LINKS ?? defaultLinks));
const dir = mkdtempSync(join(tmpdir(), 'px-scaling-'));
const rows: Array<{ n: number; nativeMs: number; rapidsnarkMs: number | null }> = [];
try {
  const wtns = join(dir, 'witness.wtns');
  writeFileSync(wtns, await witnessFor(large.wasm, large.randomInput()));
  await terminateCurves();
  const files = [large.zkey, wtns, join(dir, 'proof.json'), join(dir, 'public.json')];
  const shim = RAPIDSNARK_BIN ? await affinityShim(dir) : undefined;
  console.log(
    `bench:prover-scaling — ${large.name} (${large.constraints} constraints), ${cores} cores, median of ${RUNS} per process (key load included), load average ${loadavg()[0]!.toFixed(1)}`,
  );
  for (const n of counts) {
    const nativeMs = await timed(native.cliPath, n, files, 'PROVER_THREADS');
    const rapidsnarkMs = RAPIDSNARK_BIN
      ? await timed(RAPIDSNARK_BIN, n, files, 'OMP_NUM_THREADS', shim ? { LD_PRELOAD: shim } : {})
      : null;
    rows.push({ n, nativeMs, rapidsnarkMs });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const first = rows[0]!;
console.log(
  '\n| cores | native ms | speedup | efficiency | rapidsnark ms | efficiency | native / rapidsnark |',
);
console.log('|---|---|---|---|---|---|---|');
const figures: Figures = {};
const baseline: Figures = {};
const target: Record<string, Target> = {};
for (const r of rows) {
  const eff = first.nativeMs / (r.n * r.nativeMs);
  const rEff = r.rapidsnarkMs && first.rapidsnarkMs ? first.rapidsnarkMs / (r.n * r.rapidsnarkMs) : null;
  const ratio = r.rapidsnarkMs ? r.nativeMs / r.rapidsnarkMs : null;
  console.log(
    `| ${r.n} | ${fmt(r.nativeMs)} | ${fmt(first.nativeMs / r.nativeMs, 2)}× | ${fmt(eff * 100)} % | ${fmt(r.rapidsnarkMs)} | ${rEff === null ? '–' : `${fmt(rEff * 100)} %`} | ${fmt(ratio, 2)} |`,
  );
  figures[`native.ms.${r.n}`] = r.nativeMs;
  figures[`native.efficiency.${r.n}`] = eff;
  figures[`nativeOverRapidsnark.${r.n}`] = ratio;
  baseline[`rapidsnark.ms.${r.n}`] = r.rapidsnarkMs;
  target[`nativeOverRapidsnark.${r.n}`] = { max: 1.0 };
}
printReport({
  bench: 'prover-scaling',
  settings: {
    circuit: large.name,
    constraints: large.constraints,
    cores,
    runs: RUNS,
    rapidsnark: !!RAPIDSNARK_BIN,
  },
  figures,
  baseline,
  target,
});
