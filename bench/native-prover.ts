// Native prover vs snarkjs on the same witnesses, per circuit size (run on demand, not in CI).
//   node --import tsx bench/native-prover.ts [--max-power 12] [--runs 5] [--threads N]
// Powers above 12 make a larger development ptau once (slow) in .cache/native-prover.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as snarkjs from 'snarkjs';
import { computeWitness, ensureChainFixture, ensureFixtures, repoRoot } from '../test/zk/native/fixtures';
import type { Fixture } from '../test/zk/native/fixtures';
import { loadNativeProver } from '../native-prover';
import { printReport } from './report';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} needs a positive integer`);
  return v;
}

const maxPower = arg('max-power', 12);
const runs = arg('runs', 5);
const native = loadNativeProver();
if (!native) throw new Error('native prover addon is not built: run npm install');
const threads = arg('threads', native.defaultThreads);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number) => x.toFixed(1).padStart(9);

async function time<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t = performance.now();
  const out = await fn();
  return [performance.now() - t, out];
}

const targets: Fixture[] = [];
const fixtures = await ensureFixtures();
targets.push(...fixtures.filter((f) => f.name !== 'private'));
// Chains of Poseidon links sized to fill each power-of-two domain above 4096.
const linksForPower: Record<number, number> = { 13: 15, 14: 31, 15: 63, 16: 126, 17: 252 };
for (let p = 13; p <= maxPower; p++) {
  const links = linksForPower[p];
  if (!links) break;
  process.stdout.write(`preparing chain circuit for 2^${p} (first time builds ptau 2^${maxPower})...\n`);
  targets.push(await ensureChainFixture(links, maxPower));
}
const artifacts = join(repoRoot, 'circuits', 'artifacts');
const manifestFile = join(artifacts, 'manifest.json');
const projectCircuits: { name: string; zkey: string; wasm: string; input: () => Promise<unknown> }[] = [];
if (existsSync(manifestFile)) {
  const samples: Record<string, unknown> = {
    threshold: { value: 10, threshold: 7 },
    range: { value: 5, low: 1, high: 9 },
    membership: { value: 3, set: [1, 2, 3] },
  };
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as {
    circuits: Record<string, { policyId: string }>;
  };
  const { preparePolicyInput } = await import('../shared/zk/policies');
  for (const [name, c] of Object.entries(manifest.circuits)) {
    const sample = samples[c.policyId];
    if (sample === undefined) continue;
    projectCircuits.push({
      name,
      zkey: join(artifacts, `${name}.zkey`),
      wasm: join(artifacts, `${name}.wasm`),
      input: async () => (await preparePolicyInput(c.policyId, sample)).circuitInput,
    });
  }
}

const figures: Record<string, number> = {};
const baseline: Record<string, number> = {};
const speedups: number[] = [];
const all = [
  ...targets.map((f) => ({ name: f.name, zkey: f.zkey, wasm: f.wasm, input: async () => f.randomInput() })),
  ...projectCircuits,
];

process.stdout.write(
  `threads=${threads} runs=${runs} (median ms; warm prover: zkey loaded and its tables built, which 'load' times)\n`,
);
process.stdout.write(
  `${'circuit'.padEnd(12)} ${'domain'.padStart(7)} ${'load'.padStart(9)} ${'native'.padStart(9)} ${'native1t'.padStart(9)} ${'snarkjs'.padStart(9)} ${'speedup'.padStart(8)}\n`,
);
for (const c of all) {
  const [loadMs, prover] = await time(() => native.load(c.zkey, { threads, precompute: 'eager' }));
  const wtns = await computeWitness(c.wasm, await c.input());
  await prover.prove(wtns, { threads });
  await snarkjs.groth16.prove(c.zkey, wtns);
  const nat: number[] = [];
  const nat1: number[] = [];
  const js: number[] = [];
  for (let i = 0; i < runs; i++) {
    nat.push((await time(() => prover.prove(wtns, { threads })))[0]);
    nat1.push((await time(() => prover.prove(wtns, { threads: 1 })))[0]);
    js.push((await time(() => snarkjs.groth16.prove(c.zkey, wtns)))[0]);
  }
  const speedup = median(js) / median(nat);
  figures[`${c.name}.nativeMs`] = median(nat);
  figures[`${c.name}.native1tMs`] = median(nat1);
  baseline[`${c.name}.snarkjsMs`] = median(js);
  speedups.push(speedup);
  process.stdout.write(
    `${c.name.padEnd(12)} ${String(prover.info.domainSize).padStart(7)} ${ms(loadMs)} ${ms(median(nat))} ${ms(median(nat1))} ${ms(median(js))} ${speedup.toFixed(1).padStart(7)}x\n`,
  );
  prover.release();
}
await (globalThis as { curve_bn128?: { terminate(): Promise<void> } }).curve_bn128?.terminate();
printReport({
  bench: 'native-prover',
  settings: { maxPower, runs, threads },
  figures: { ...figures, minSpeedupOverSnarkjs: speedups.length ? Math.min(...speedups) : null },
  baseline,
  target: { minSpeedupOverSnarkjs: { min: 5 } },
});
