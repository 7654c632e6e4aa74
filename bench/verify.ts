// Groth16 verification, native verifier vs snarkjs in the same run, on a proof of each committed circuit
// (run on demand, not in CI). One verification at a time for each; per core means per second of the
// process's CPU time (every thread), which a shared machine's load disturbs far less than wall time.
// The event loop's time per verification is how long each one keeps every other request waiting.
//   npm run bench:verify [-- --seconds 1.5 --rounds 2]
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import * as snarkjs from 'snarkjs';
import { terminateCurves } from '../shared/zk';
import { committedProofs } from '../test/zk/native/committed-proofs';
import type { CommittedProof } from '../test/zk/native/committed-proofs';
import { loadNativeVerifier } from '../native-prover';
import { printReport } from './report';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} needs a positive number`);
  return v;
}

/** Seconds each backend verifies each circuit's proof, per round. */
const seconds = arg('seconds', 1.5);
/** Rounds alternate the backends, so a change in the machine's load falls on both. */
const rounds = Math.round(arg('rounds', 2));

const native = loadNativeVerifier();
if (!native) throw new Error('the native verifier addon is not built: run npm install');

type Verify = (c: CommittedProof) => Promise<boolean>;
const backends: Record<'native' | 'snarkjs', Verify> = {
  native: (c) => native.verify(c.vkey, c.publicSignals, c.proof),
  snarkjs: (c) => snarkjs.groth16.verify(c.vkey, c.publicSignals, c.proof),
};

interface Tally {
  count: number;
  wallMs: number;
  cpuMs: number;
  /** Time the event loop was busy (not waiting for I/O or a worker thread). */
  loopMs: number;
}
const empty = (): Tally => ({ count: 0, wallMs: 0, cpuMs: 0, loopMs: 0 });

async function measure(verify: Verify, c: CommittedProof, into: Tally): Promise<void> {
  const loop0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < seconds * 1000) {
    if (!(await verify(c))) throw new Error(`${c.circuit}: the proof did not verify`);
    n++;
  }
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const loop = performance.eventLoopUtilization(loop0);
  into.count += n;
  into.wallMs += wallMs;
  into.cpuMs += (cpu.user + cpu.system) / 1000;
  into.loopMs += loop.active;
}

const load = loadavg().map((x) => +x.toFixed(2));
process.stdout.write(`load average ${load.join(' ')}; proving one proof per circuit with snarkjs...\n`);
const cases = await committedProofs();
for (const c of cases) {
  for (const [name, verify] of Object.entries(backends)) {
    for (let i = 0; i < 3; i++) {
      if (!(await verify(c))) throw new Error(`${c.circuit}: ${name} rejects the valid proof`);
    }
  }
}

const tallies = new Map<string, Record<'native' | 'snarkjs', Tally>>(
  cases.map((c) => [c.circuit, { native: empty(), snarkjs: empty() }]),
);
for (let round = 0; round < rounds; round++) {
  for (const c of cases) {
    const t = tallies.get(c.circuit)!;
    const order = round % 2 ? (['native', 'snarkjs'] as const) : (['snarkjs', 'native'] as const);
    for (const name of order) await measure(backends[name], c, t[name]);
  }
}
await terminateCurves();

const perCore = (t: Tally) => (t.count / t.cpuMs) * 1000;
const perWall = (t: Tally) => (t.count / t.wallMs) * 1000;
const loopMsEach = (t: Tally) => t.loopMs / t.count;
const total = (name: 'native' | 'snarkjs'): Tally =>
  [...tallies.values()].reduce(
    (acc, t) => ({
      count: acc.count + t[name].count,
      wallMs: acc.wallMs + t[name].wallMs,
      cpuMs: acc.cpuMs + t[name].cpuMs,
      loopMs: acc.loopMs + t[name].loopMs,
    }),
    empty(),
  );

const col = (s: string | number, w = 11) => String(s).padStart(w);
process.stdout.write(
  `${'circuit'.padEnd(11)}${col('native/core')}${col('snarkjs/core')}${col('speedup', 9)}${col('native/s')}${col('snarkjs/s')}${col('loop ms n/js', 15)}\n`,
);
const figures: Record<string, number> = {};
const baseline: Record<string, number> = {};
for (const [circuit, t] of tallies) {
  const speedup = perCore(t.native) / perCore(t.snarkjs);
  figures[`${circuit}.nativeVerifyPerCoreSec`] = perCore(t.native);
  baseline[`${circuit}.snarkjsVerifyPerCoreSec`] = perCore(t.snarkjs);
  figures[`${circuit}.speedupPerCore`] = speedup;
  process.stdout.write(
    `${circuit.padEnd(11)}${col(perCore(t.native).toFixed(0))}${col(perCore(t.snarkjs).toFixed(1))}${col(`${speedup.toFixed(1)}x`, 9)}${col(perWall(t.native).toFixed(0))}${col(perWall(t.snarkjs).toFixed(1))}${col(`${loopMsEach(t.native).toFixed(3)}/${loopMsEach(t.snarkjs).toFixed(1)}`, 15)}\n`,
  );
}
const n = total('native');
const js = total('snarkjs');
printReport({
  bench: 'verify',
  settings: { seconds, rounds, circuits: cases.map((c) => c.circuit), loadAverage: load },
  figures: {
    ...figures,
    nativeVerifyPerCoreSec: perCore(n),
    nativeVerifyPerSec: perWall(n),
    speedupPerCore: perCore(n) / perCore(js),
    nativeEventLoopMsPerVerify: loopMsEach(n),
  },
  baseline: {
    ...baseline,
    snarkjsVerifyPerCoreSec: perCore(js),
    snarkjsVerifyPerSec: perWall(js),
    snarkjsEventLoopMsPerVerify: loopMsEach(js),
  },
  target: { speedupPerCore: { min: 20 } },
});
