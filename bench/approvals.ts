// bench:approvals — what an anonymous workflow approval costs its approver and the service: a
// membership proof made by the approver's client (witness and snarkjs Groth16, ballot circuit, a set of
// 16), and its verification through the Groth16 gate (native when built). Prints medians and every run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createIdentity, loadMembershipArtifacts, makeApproval } from '../shared/workflows/approvalClient';
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
  // The first run compiles the witness calculator and warms the curve: left out of the medians.
  if (i > 0) {
    prove.push(t1 - t0);
    verify.push(t2 - t1);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const report = {
  runs: RUNS,
  proveMedianMs: Math.round(median(prove)),
  proveMs: prove.map(Math.round),
  verifyMedianMs: Number(median(verify).toFixed(1)),
  verifier: await groth16Backend(),
};
process.stdout.write(`${JSON.stringify(report)}\n`);
await terminateCurves();
