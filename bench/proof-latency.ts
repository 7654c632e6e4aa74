// bench:proof-latency — what a user waits for a policy proof, against what the proof itself costs.
//   npm run bench:proof-latency
// For the threshold policy and the four-predicate credential query, in rounds (the order turning each
// round): `inProcess`, the witness from a resident calculator and the proof from the native prover with
// its key loaded, in this process, one after another; `api`, one proof at a time as a user makes it,
// POST /api/proof-workflows/blind-policy/prove, then GET …/status?proofId=… with `wait` (a long poll)
// until the proof is readable there; `queue`, BENCH_BATCH proofs sent with BENCH_IN_FLIGHT in flight
// until all are stored, against `inProcess` back to back. Every proof is verified. It reports medians
// over the rounds, where a user's wait went (the row written after the request was sent, the 202 after
// the row, the prover's claim, witness, proving, the prover's other work, the store, the proof readable
// on the status route after it was stored), load and peak memory.
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import {
  describePolicies,
  loadVerificationKey,
  nativeBackend,
  policies,
  preparePolicyInput,
  terminateCurves,
  verifyPolicyProof,
  warmCircuit,
} from '../shared/zk/index';
import type { PolicyId, ProverBackend } from '../shared/zk/index';
import { sampleQueryInput } from '../shared/credentials/sample';
import { loadNativeProver } from '../native-prover';
import { freePort } from '../dev/stack/redis';
import { printReport } from './report';
import { benchStack, httpClient, percentile, pool, settled } from './stack';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SEQUENTIAL = Number(process.env.BENCH_PROOFS ?? 10);
const BATCH = Number(process.env.BENCH_BATCH ?? 40);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 8);
/** BENCH_POLL_MS=n: poll the status route every n ms instead of a long poll. */
const POLL_MS = process.env.BENCH_POLL_MS ? Number(process.env.BENCH_POLL_MS) : undefined;
const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '–');
const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

const subjects: Array<{ policy: PolicyId; inputs: Record<string, unknown> }> = [
  { policy: 'threshold', inputs: { value: '720', threshold: '650' } },
  { policy: 'credential', inputs: sampleQueryInput },
];

const native = loadNativeProver();
if (!native) throw new Error('bench:proof-latency needs the native prover built (npm ci builds it)');
// The prover process's own backend, without its check: what proving alone costs here.
const local: ProverBackend = nativeBackend(native, { check: false, precompute: 'eager' });

const stack = await benchStack();
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const web = stack.spawn('api/main.ts', {
  PORT: String(port),
  HOST: '127.0.0.1',
  RATE_LIMIT_ENABLED: 'false',
  PROVE_MAX_IN_FLIGHT: '100000',
  PROVE_ANON_PER_MINUTE: '1000000',
  OVERLOAD_TARGET_MS: '0',
});
const prover = stack.spawn('workers/prover/main.ts', {});
const request = httpClient(base, IN_FLIGHT + 2);
const db = new pg.Client({ connectionString: stack.databaseUrl });
db.on('error', () => {});

interface Stored {
  id: string;
  status: string;
  proof: unknown;
  publicSignals: string[];
}

async function submit(policy: PolicyId, inputs: unknown): Promise<string> {
  const res = await request(
    'POST',
    '/api/proof-workflows/blind-policy/prove',
    JSON.stringify({ policy, inputs }),
  );
  if (res.status !== 202) throw new Error(`prove answered ${res.status}: ${res.body}`);
  return (JSON.parse(res.body) as { proof: { id: string } }).proof.id;
}

/** Reads the status route until the proof is readable there (long poll, or polls every POLL_MS). */
async function readable(id: string): Promise<Stored> {
  for (;;) {
    const wait = POLL_MS === undefined ? '&wait=10' : '';
    const res = await request('GET', `/api/proof-workflows/blind-policy/status?proofId=${id}${wait}`);
    if (res.status !== 200) throw new Error(`status answered ${res.status}: ${res.body}`);
    const { proof } = JSON.parse(res.body) as { proof: Stored };
    if (proof.status === 'succeeded') return proof;
    if (proof.status === 'failed') throw new Error(`proof ${id} failed`);
    if (POLL_MS !== undefined) await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function checked(policy: PolicyId, stored: Stored): Promise<void> {
  const v = await verifyPolicyProof(policy, stored.proof as never, stored.publicSignals);
  if (!v.valid) throw new Error(`a ${policy} proof from the API does not verify`);
}

function vmHwmMiB(pid: number | undefined): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmHWM:'));
    return Number(line!.split(/\s+/)[1]) / 1024;
  } catch {
    return NaN;
  }
}

type Figures = {
  inProcess: number[];
  api: number[];
  inProcessRate: number[];
  queueRate: number[];
  split: Record<string, number[]>;
};

const results = new Map<PolicyId, Figures>();
const loads: number[] = [];
try {
  await db.connect();
  for (let i = 0; i < 300; i++) {
    const ok = await request('GET', '/api/health').then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const { policy } of subjects) {
    await warmCircuit(policy);
    await loadVerificationKey(policies[policy].circuit);
    await local.warm?.(policy);
  }
  const prepared = new Map(
    await Promise.all(
      subjects.map(
        async (s) => [s.policy, (await preparePolicyInput(s.policy, s.inputs)).circuitInput] as const,
      ),
    ),
  );
  // Warm-up: JIT, connections, the prover's tables.
  for (const { policy, inputs } of subjects) {
    for (let i = 0; i < 3; i++) {
      await local.prove(policy, prepared.get(policy)!);
      await readable(await submit(policy, inputs));
    }
  }
  await settled([web.pid!, prover.pid!]);
  const constraints = Object.fromEntries(describePolicies().map((p) => [p.id, p.constraints]));
  console.log(
    `bench:proof-latency — ${ROUNDS} rounds; a round: ${SEQUENTIAL} proofs one at a time in-process and through the API (${POLL_MS === undefined ? 'status long poll' : `status polled every ${POLL_MS} ms`}), ${BATCH} through the queue with ${IN_FLIGHT} in flight and ${BATCH} in-process back to back; ${cpus().length} cores`,
  );
  for (const { policy } of subjects) {
    results.set(policy, { inProcess: [], api: [], inProcessRate: [], queueRate: [], split: {} });
  }

  const phases = {
    async inProcess(policy: PolicyId) {
      const input = prepared.get(policy)!;
      const times: number[] = [];
      for (let i = 0; i < SEQUENTIAL; i++) {
        const t = performance.now();
        const out = await local.prove(policy, input);
        times.push(performance.now() - t);
        if (i === 0 && !(await verifyPolicyProof(policy, out.proof, out.publicSignals)).valid)
          throw new Error(`an in-process ${policy} proof does not verify`);
      }
      results.get(policy)!.inProcess.push(median(times));
      const t = performance.now();
      for (let i = 0; i < BATCH; i++) await local.prove(policy, input);
      results.get(policy)!.inProcessRate.push(BATCH / ((performance.now() - t) / 1000));
    },
    async api(policy: PolicyId, inputs: unknown) {
      const times: number[] = [];
      const marks = new Map<string, { sent: number; answered: number; read: number }>();
      const now = () => performance.timeOrigin + performance.now();
      for (let i = 0; i < SEQUENTIAL; i++) {
        const sent = now();
        const id = await submit(policy, inputs);
        const answered = now();
        const stored = await readable(id);
        const read = now();
        times.push(read - sent);
        marks.set(id, { sent, answered, read });
        if (i === 0) await checked(policy, stored);
      }
      results.get(policy)!.api.push(median(times));
      // The rows' times are Postgres's clock, which is this host's: set against the client's marks.
      const { rows } = await db.query<Record<string, string | number>>(
        `select id, queue_ms, witness_ms, proving_ms, total_ms,
           extract(epoch from created_at) * 1000 as created, extract(epoch from started_at) * 1000 as started,
           extract(epoch from finished_at) * 1000 as finished
         from proofs where id = any($1)`,
        [[...marks.keys()]],
      );
      const split = results.get(policy)!.split;
      const parts = rows.map((r) => {
        const m = marks.get(String(r.id))!;
        const [created, started, finished] = [r.created, r.started, r.finished].map(Number) as [
          number,
          number,
          number,
        ];
        return {
          written: created - m.sent,
          answered: m.answered - created,
          claimed: started - created,
          witness: Number(r.witness_ms),
          proving: Number(r.proving_ms),
          proverRest: Number(r.total_ms) - Number(r.witness_ms) - Number(r.proving_ms),
          stored: finished - started - Number(r.total_ms),
          readable: m.read - finished,
        };
      });
      for (const k of Object.keys(parts[0]!) as Array<keyof (typeof parts)[number]>)
        (split[k] ??= []).push(median(parts.map((p) => p[k])));
    },
    async queue(policy: PolicyId, inputs: unknown) {
      const t = performance.now();
      const stored: Stored[] = [];
      await pool([...Array(BATCH).keys()], IN_FLIGHT, async () => {
        stored.push(await readable(await submit(policy, inputs)));
      });
      results.get(policy)!.queueRate.push(BATCH / ((performance.now() - t) / 1000));
      await checked(policy, stored[0]!);
    },
  };
  const order = ['inProcess', 'api', 'queue'] as const;
  for (let round = 0; round < ROUNDS; round++) {
    const turned = [...order.slice(round % 3), ...order.slice(0, round % 3)];
    for (const { policy, inputs } of subjects) {
      for (const phase of turned) await phases[phase](policy, inputs);
    }
    loads.push(loadavg()[0]!);
  }

  const figures: Record<string, number> = {};
  const baseline: Record<string, number> = {};
  for (const { policy } of subjects) {
    const r = results.get(policy)!;
    const inProc = median(r.inProcess);
    const api = median(r.api);
    const rateIn = median(r.inProcessRate);
    const rateQ = median(r.queueRate);
    const s = Object.fromEntries(Object.entries(r.split).map(([k, v]) => [k, median(v)]));
    console.log(`\n${policy} (${constraints[policy]} constraints)`);
    console.log(
      `  latency p50: in-process ${fmt(inProc, 2)} ms (witness + proof), through the API ${fmt(api, 2)} ms: ×${fmt(api / inProc, 2)}  (rounds: ${r.api.map((x) => fmt(x)).join(' ')})`,
    );
    console.log(
      `  where it went, ms (medians): ${Object.entries(s)
        .map(([k, v]) => `${k} ${fmt(v, 2)}`)
        .join(', ')}`,
    );
    console.log(
      `  throughput: in-process back to back ${fmt(rateIn)}/s, through the queue (${IN_FLIGHT} in flight) ${fmt(rateQ)}/s: ${fmt((rateQ / rateIn) * 100)} %`,
    );
    figures[`${policy}.apiLatencyP50Ms`] = api;
    figures[`${policy}.latencyRatio`] = api / inProc;
    figures[`${policy}.queueProofsPerSecond`] = rateQ;
    figures[`${policy}.throughputShare`] = rateQ / rateIn;
    baseline[`${policy}.inProcessLatencyMs`] = inProc;
    baseline[`${policy}.inProcessProofsPerSecond`] = rateIn;
  }
  console.log(
    `\nload average over the rounds ${fmt(Math.min(...loads), 2)}–${fmt(Math.max(...loads), 2)}; peak memory: web ${fmt(vmHwmMiB(web.pid))} MiB, prover ${fmt(vmHwmMiB(prover.pid))} MiB, this process ${fmt(vmHwmMiB(process.pid))} MiB`,
  );
  printReport({
    bench: 'proof-latency',
    settings: {
      rounds: ROUNDS,
      sequential: SEQUENTIAL,
      batch: BATCH,
      inFlight: IN_FLIGHT,
      pollMs: POLL_MS ?? null,
    },
    figures,
    baseline,
    target: {
      'threshold.latencyRatio': { max: 1.5 },
      'credential.latencyRatio': { max: 1.5 },
      'threshold.throughputShare': { min: 0.8 },
    },
  });
} finally {
  await db.end().catch(() => {});
  await terminateCurves();
  await stack.close();
}
process.exit(0);
