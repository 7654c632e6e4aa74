// host-kit — what bench/host/prover-host.sh needs on a host without Node, made here with Node:
// for each policy circuit and the ~2^16 bench circuit (BENCH_LINKS, comma-separated, for others), its
// zkey, one witness (.wtns) and its verification key, in .cache/host-kit (or the folder given).
//   npm run host-kit [-- <dir>]                  writes the kit
//   npm run host-kit -- --check <proofs> [kit]   verifies, with snarkjs, every <name>.*.proof.json the
//                                                host run wrote against the kit's <name>.vkey.json
// Copy the kit and the repository to the host, run `bench/host/prover-host.sh <kit> <out>` there, then
// check its proofs here: a scaling table means nothing if the proofs it timed are not valid.
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as snarkjs from 'snarkjs';
import {
  artifactPaths,
  describePolicies,
  policyIds,
  preparePolicyInput,
  terminateCurves,
} from '../shared/zk/index';
import type { PolicyId } from '../shared/zk/index';
import { defaultLinks, ensureLargeCircuit } from './large-circuit';
import { witnessFor } from './proving';
import { sampleQueryInput } from '../shared/credentials/sample';

const inputs: Record<PolicyId, Record<string, unknown>> = {
  threshold: { value: '720', threshold: '650' },
  range: { value: 42, low: 18, high: 65 },
  membership: { value: '840', set: ['124', '250', '840', '276', '991', '12'] },
  credential: sampleQueryInput,
};

async function writeKit(dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const circuits: string[] = [];
  for (const policy of policyIds) {
    const { circuit, constraints } = describePolicies().find((p) => p.id === policy)!;
    const paths = artifactPaths(circuit);
    const prepared = await preparePolicyInput(policy, inputs[policy]);
    copyFileSync(paths.zkey, join(dir, `${circuit}.zkey`));
    copyFileSync(paths.vkey, join(dir, `${circuit}.vkey.json`));
    writeFileSync(join(dir, `${circuit}.wtns`), await witnessFor(paths.wasm, prepared.circuitInput));
    circuits.push(`${circuit}:${constraints}`);
  }
  const links = (process.env.BENCH_LINKS ?? String(defaultLinks))
    .split(',')
    .filter((s) => s.trim() !== '')
    .map(Number);
  for (const n of links) {
    const large = await ensureLargeCircuit(n);
    copyFileSync(large.zkey, join(dir, `${large.name}.zkey`));
    writeFileSync(join(dir, `${large.name}.vkey.json`), JSON.stringify(large.vkey));
    writeFileSync(join(dir, `${large.name}.wtns`), await witnessFor(large.wasm, large.randomInput()));
    circuits.push(`${large.name}:${large.constraints}`);
  }
  // name:constraints per line, smallest first; the host script reads this list.
  writeFileSync(join(dir, 'circuits.txt'), `${circuits.join('\n')}\n`);
  console.log(`host kit in ${dir}: ${circuits.join(', ')}`);
}

async function checkProofs(dir: string, kit: string): Promise<void> {
  const proofs = readdirSync(dir).filter((f) => f.endsWith('.proof.json'));
  if (proofs.length === 0) throw new Error(`no *.proof.json in ${dir}`);
  let bad = 0;
  for (const file of proofs.sort()) {
    const [name] = file.split('.');
    const vkeyFile = join(kit, `${name}.vkey.json`);
    if (!existsSync(vkeyFile)) throw new Error(`no verification key for ${file} in ${kit}`);
    const vkey = JSON.parse(readFileSync(vkeyFile, 'utf8')) as unknown;
    const proof = JSON.parse(readFileSync(join(dir, file), 'utf8')) as unknown;
    const signals = JSON.parse(
      readFileSync(join(dir, file.replace(/\.proof\.json$/, '.public.json')), 'utf8'),
    ) as unknown;
    const ok = await snarkjs.groth16.verify(vkey as never, signals as never, proof as never);
    if (!ok) bad++;
    console.log(`${ok ? 'valid  ' : 'INVALID'} ${file}`);
  }
  if (bad > 0) process.exitCode = 1;
}

const args = process.argv.slice(2);
if (args[0] === '--check') await checkProofs(resolve(args[1] ?? '.'), resolve(args[2] ?? '.cache/host-kit'));
else await writeKit(resolve(args[0] ?? '.cache/host-kit'));
await terminateCurves();
