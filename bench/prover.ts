// bench:prover — blind policy proofs per second and per-proof latency through the queue (POST prove over
// HTTP → web → Postgres + BullMQ → prover process → Postgres; web and prover as child processes, as
// deployed) against snarkjs.groth16.fullProve called directly in this process, for each policy; then
// proving time alone, native prover and snarkjs side by side on each policy circuit and on synthetic
// Poseidon-chain circuits, ~2^16 constraints by default, BENCH_LINKS=126,507 for 2^16 and 2^18
// (rapidsnark too when RAPIDSNARK_BIN is set).
// The synthetic circuits are built once into .cache/bench (bench/large-circuit.ts): the first run spends
// about two minutes on 2^18 (its development powers of tau, compile and setup); BENCH_LARGE=0 skips them.
import { createServer } from 'node:net';
import { cpus } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pg from 'pg';
import * as snarkjs from 'snarkjs';
import {
  artifactPaths,
  describePolicies,
  loadVerificationKey,
  policyIds,
  preparePolicyInput,
  terminateCurves,
} from '../shared/zk/index';
import type { PolicyId } from '../shared/zk/index';
import { defaultLinks, ensureLargeCircuit } from './large-circuit';
import { formatSideBySide, sideBySide, sideBySideFigures, witnessFor } from './proving';
import type { SideBySide } from './proving';
import { printReport } from './report';
import { benchStack, percentile, pool } from './stack';
import { sampleQueryInput } from '../shared/credentials/sample';

const N = Number(process.env.BENCH_PROOFS ?? 24);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? Math.max(2, cpus().length * 2));
const PROVING_RUNS = Number(process.env.BENCH_PROVING_RUNS ?? 5);
const LARGE = process.env.BENCH_LARGE !== '0';
// Chain lengths of the synthetic circuits: 126 links fill 2^16, 507 fill 2^18 (BENCH_LINKS=126,507).
const LARGE_LINKS = (process.env.BENCH_LINKS ?? String(defaultLinks))
  .split(',')
  .filter((s) => s.trim() !== '')
  .map(Number);
if (LARGE_LINKS.some((n) => !Number.isInteger(n) || n < 1))
  throw new Error('BENCH_LINKS: chain lengths, comma-separated');
const RAPIDSNARK_BIN = process.env.RAPIDSNARK_BIN || undefined;
const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '–');

const inputs: Record<PolicyId, Record<string, unknown>> = {
  threshold: { value: '720', threshold: '650' },
  range: { value: 42, low: 18, high: 65 },
  membership: { value: '840', set: ['124', '250', '840', '276', '991', '12'] },
  credential: sampleQueryInput,
};

/** A port nobody listens on now, so the bench never talks to another process's server. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

// Typed here: the project's snarkjs declarations cover only what shared/zk uses.
const groth16 = snarkjs.groth16 as unknown as {
  fullProve(input: unknown, wasm: string, zkey: string): Promise<unknown>;
};
const fullProve = (input: unknown, wasm: string, zkey: string) => groth16.fullProve(input, wasm, zkey);

async function waitHealthy(base: string) {
  for (let i = 0; i < 300; i++) {
    const ok = await fetch(`${base}/api/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('web did not start');
}

interface Run {
  proofsPerSecond: number;
  latencyP50: number;
  latencyP95: number;
}

/** snarkjs.groth16.fullProve in this process: N in sequence (latency), then N with CONCURRENCY in flight. */
async function direct(
  policy: PolicyId,
): Promise<Run & { sequentialPerSecond: number; loopDelayMaxMs: number }> {
  const circuit = describePolicies().find((p) => p.id === policy)!.circuit;
  const paths = artifactPaths(circuit);
  const prepared = await Promise.all(
    [...Array(N).keys()].map(() => preparePolicyInput(policy, inputs[policy])),
  );
  await fullProve(prepared[0]!.circuitInput, paths.wasm, paths.zkey); // warm-up
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const seqStart = performance.now();
  const seq = await pool(prepared, 1, async (p) => {
    await fullProve(p.circuitInput, paths.wasm, paths.zkey);
  });
  const seqSeconds = (performance.now() - seqStart) / 1000;
  const start = performance.now();
  await pool(prepared, CONCURRENCY, async (p) => {
    await fullProve(p.circuitInput, paths.wasm, paths.zkey);
  });
  const seconds = (performance.now() - start) / 1000;
  loop.disable();
  return {
    proofsPerSecond: N / seconds,
    sequentialPerSecond: N / seqSeconds,
    latencyP50: percentile(seq, 50),
    latencyP95: percentile(seq, 95),
    loopDelayMaxMs: loop.max / 1e6,
  };
}

interface Row {
  status: string;
  witness_ms: number;
  proving_ms: number;
  total_ms: number;
  queue_ms: number;
  latency_ms: number;
}

async function throughQueue(
  base: string,
  db: pg.Client,
  policy: PolicyId,
  n = N,
): Promise<Run & { witnessP50: number; provingP50: number; proverP50: number; queueP50: number }> {
  const submit = async () => {
    const res = await fetch(`${base}/api/proof-workflows/blind-policy/prove`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ policy, inputs: inputs[policy] }),
    });
    if (res.status !== 202) throw new Error(`prove answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { proof: { id: string } }).proof.id;
  };
  const ids: string[] = [];
  const start = performance.now();
  await pool([...Array(n).keys()], CONCURRENCY, async () => {
    ids.push(await submit());
  });
  let rows: Row[] = [];
  for (;;) {
    rows = (
      await db.query(
        `select status, witness_ms, proving_ms, total_ms, queue_ms,
           extract(epoch from (finished_at - created_at)) * 1000 as latency_ms
         from proofs where id = any($1) and status in ('succeeded', 'failed')`,
        [ids],
      )
    ).rows as Row[];
    if (rows.length === n) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const seconds = (performance.now() - start) / 1000;
  const failed = rows.filter((r) => r.status !== 'succeeded').length;
  if (failed) throw new Error(`${failed} ${policy} proofs failed`);
  const sorted = (k: keyof Row) => rows.map((r) => Number(r[k])).sort((a, b) => a - b);
  // Latency per proof in isolation: one at a time, submit → stored.
  const single: number[] = [];
  for (let i = 0; i < Math.min(n, 8); i++) {
    const t = performance.now();
    const id = await submit();
    for (;;) {
      const { rows: r } = await db.query(`select status from proofs where id = $1`, [id]);
      if (r[0]?.status === 'succeeded') break;
      await new Promise((res) => setTimeout(res, 5));
    }
    single.push(performance.now() - t);
  }
  single.sort((a, b) => a - b);
  return {
    proofsPerSecond: n / seconds,
    latencyP50: percentile(single, 50),
    latencyP95: percentile(single, 95),
    witnessP50: percentile(sorted('witness_ms'), 50),
    provingP50: percentile(sorted('proving_ms'), 50),
    proverP50: percentile(sorted('total_ms'), 50),
    queueP50: percentile(sorted('queue_ms'), 50),
  };
}

const stack = await benchStack();
const sides: Record<string, SideBySide> = {};
const queueRates: Record<string, number> = {};
const directRates: Record<string, number> = {};
try {
  const PORT = Number(process.env.BENCH_PORT ?? (await freePort()));
  const base = `http://127.0.0.1:${PORT}`;
  // One anonymous caller sends every proof: lift the per-caller caps that protect a shared service.
  stack.spawn('api/main.ts', {
    PORT: String(PORT),
    HOST: '127.0.0.1',
    RATE_LIMIT_ENABLED: 'false',
    PROVE_MAX_IN_FLIGHT: '100000',
    PROVE_ANON_PER_MINUTE: '1000000',
  });
  stack.spawn('workers/prover/main.ts', {});
  await waitHealthy(base);
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  // Closing the stack ends its database's connections: that must not hide the error that closed it.
  db.on('error', () => {});
  await db.connect();
  const status = (await (await fetch(`${base}/api/proof-workflows/blind-policy/status`)).json()) as {
    prover: { configuredBackend: string };
  };
  console.log(
    `bench:prover — ${N} proofs per policy, ${CONCURRENCY} in flight, ${cpus().length} cores, prover backend ${status.prover.configuredBackend} (PROVER_BACKEND)`,
  );
  const constraints = Object.fromEntries(describePolicies().map((p) => [p.id, p.constraints]));
  const proving: string[] = [];
  for (const policy of policyIds) {
    const d = await direct(policy);
    const circuit = describePolicies().find((p) => p.id === policy)!.circuit;
    const paths = artifactPaths(circuit);
    const prepared = await preparePolicyInput(policy, inputs[policy]);
    const side = await sideBySide({
      zkey: paths.zkey,
      vkey: await loadVerificationKey(circuit),
      wtns: await witnessFor(paths.wasm, prepared.circuitInput),
      runs: PROVING_RUNS,
      rapidsnarkBin: RAPIDSNARK_BIN,
    });
    proving.push(`  ${policy.padEnd(12)} ${formatSideBySide(side, fmt)}`);
    sides[policy] = side;
    await terminateCurves(); // leave the cores to the prover process
    await throughQueue(base, db, policy, 2); // warm-up: connections, JIT
    const q = await throughQueue(base, db, policy);
    queueRates[`${policy}.queueProofsPerSecond`] = q.proofsPerSecond;
    directRates[`${policy}.directProofsPerSecond`] = d.proofsPerSecond;
    const { rows } = await db.query(
      `select backend from proofs where status = 'succeeded' order by finished_at desc limit 1`,
    );
    console.log(`\n${policy} (${constraints[policy]} constraints; queue proofs by ${rows[0]?.backend})`);
    console.log(
      `  direct fullProve:   ${fmt(d.proofsPerSecond)} proofs/s with ${CONCURRENCY} in flight, ${fmt(d.sequentialPerSecond)}/s one at a time; latency p50/p95 ${fmt(d.latencyP50)} / ${fmt(d.latencyP95)} ms; event-loop delay max ${fmt(d.loopDelayMaxMs)} ms`,
    );
    console.log(
      `  through the queue:  ${fmt(q.proofsPerSecond)} proofs/s; latency (submit → stored, alone) p50/p95 ${fmt(q.latencyP50)} / ${fmt(q.latencyP95)} ms`,
    );
    console.log(
      `  prover split p50:   witness ${fmt(q.witnessP50)} ms, proving ${fmt(q.provingP50)} ms, prover total ${fmt(q.proverP50)} ms, waiting in queue ${fmt(q.queueP50)} ms (under load)`,
    );
    console.log(
      `  ratios queue/direct: throughput ${fmt((q.proofsPerSecond / d.proofsPerSecond) * 100)} %, latency p50 ×${fmt(q.latencyP50 / d.latencyP50, 2)}`,
    );
  }
  await db.end();
  console.log(
    `\nproving only (median of ${PROVING_RUNS}, same witness, warm: key loaded once, snarkjs from zkey bytes)`,
  );
  for (const line of proving) console.log(line);
  for (const links of LARGE ? LARGE_LINKS : []) {
    const large = await ensureLargeCircuit(links);
    const input = large.randomInput();
    const side = await sideBySide({
      zkey: large.zkey,
      vkey: large.vkey,
      wtns: await witnessFor(large.wasm, input),
      runs: PROVING_RUNS,
      snarkjsRuns: 3,
      rapidsnarkBin: RAPIDSNARK_BIN,
    });
    console.log(
      `  ${large.name.padEnd(12)} ${formatSideBySide(side, fmt)}  [${large.constraints} constraints]`,
    );
    sides[large.name] = side;
  }
} finally {
  await terminateCurves();
  await stack.close();
}
const sideFigures = sideBySideFigures(sides);
printReport({
  bench: 'prover',
  settings: {
    proofs: N,
    inFlight: CONCURRENCY,
    provingRuns: PROVING_RUNS,
    large: LARGE ? LARGE_LINKS : false,
    rapidsnark: !!RAPIDSNARK_BIN,
  },
  figures: { ...queueRates, ...sideFigures.figures },
  baseline: { ...directRates, ...sideFigures.baseline },
  target: { worstNativeCliOverRapidsnark: { max: 1.0 }, minNativeSpeedupOverSnarkjs: { min: 5 } },
});
process.exit(0);
