// bench:approvals — what an anonymous workflow approval costs its approver and the service: a
// membership proof made by the approver's client (witness and snarkjs Groth16, ballot circuit, a set of
// 16), and its verification through the Groth16 gate (native when built), against snarkjs's own verify
// of the same proof, interleaved in every run. Prints every run, then the report line.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import * as snarkjs from 'snarkjs';
import { printReport } from './report';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createIdentity, loadMembershipArtifacts, makeApproval } from '../shared/workflows/approval-client';
import { groth16Backend } from '../shared/zk/groth16';
import { verifyMembershipProof } from '../shared/zk/anonymity';
import { terminateCurves } from '../shared/zk';

const RUNS = Number(process.env.BENCH_APPROVALS ?? 8);
const dir = join(process.cwd(), 'circuits', 'artifacts');
const artifacts = await loadMembershipArtifacts(dir);
const vkey = JSON.parse(readFileSync(join(dir, 'ballot.vkey.json'), 'utf8')) as unknown;
const ids = await Promise.all(Array.from({ length: 16 }, () => createIdentity()));
const members = ids.map((i) => i.commitment);
const prove: number[] = [];
const verify: number[] = [];
const snarkjsVerify: number[] = [];
const loads: number[] = [];
for (let i = 0; i <= RUNS; i++) {
  const t0 = performance.now();
  const a = await makeApproval({
    identity: ids[i % ids.length]!,
    target: {
      proofId: 'prf_bench',
      stage: 'approval',
      setId: 'aps_bench',
      contentHash: 'ab'.repeat(32),
      members,
    },
    artifacts,
  });
  const t1 = performance.now();
  if (!(await verifyMembershipProof(vkey, a.proof, a.publicSignals)))
    throw new Error('a proof did not verify');
  const t2 = performance.now();
  if (!(await snarkjs.groth16.verify(vkey as object, a.publicSignals, a.proof as snarkjs.Groth16Proof)))
    throw new Error('snarkjs did not verify a proof');
  const t3 = performance.now();
  // The first run compiles the witness calculator and warms the curve: left out of the medians.
  if (i > 0) {
    prove.push(t1 - t0);
    verify.push(t2 - t1);
    snarkjsVerify.push(t3 - t2);
    loads.push(loadavg()[0]!);
    process.stdout.write(
      `run ${i}: prove ${(t1 - t0).toFixed(0)} ms, verify ${(t2 - t1).toFixed(1)} ms, snarkjs verify ${(t3 - t2).toFixed(1)} ms\n`,
    );
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
printReport({
  bench: 'approvals',
  settings: {
    runs: RUNS,
    members: members.length,
    verifier: await groth16Backend(),
    loadAverage: Number(median(loads).toFixed(2)),
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  },
  figures: { proveMedianMs: median(prove), verifyMedianMs: median(verify) },
  baseline: { snarkjsVerifyMedianMs: median(snarkjsVerify) },
  target: {},
});
await terminateCurves();
