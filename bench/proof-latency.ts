// bench:proof-latency — what a user waits for a policy proof, against what the proof itself costs and
// against the same pipeline built bare.
//   npm run bench:proof-latency
// For the threshold policy and the four-predicate credential query, in rounds (the order turning each
// round): `inProcess`, the witness from a resident calculator and the proof from the native prover with
// its key loaded, in this process, one after another; `api`, one proof at a time as a user makes it,
// POST /api/proof-workflows/blind-policy/prove, then GET …/status?proofId=… with `wait` (a long poll)
// until the proof is readable there; `queue`, BENCH_BATCH proofs sent with BENCH_IN_FLIGHT in flight
// until all are readable, against `inProcess` back to back. `bareApi` and `bareQueue` do the same
// through the pipeline a user would build bare from the same parts: an Express 5 web (the inputs
// checked and committed as ours does, a row inserted through pg, a BullMQ job added; a long poll woken
// by a Redis message) and a BullMQ worker process (claims the row, proves with the same native backend
// and check, stores the proof, publishes its id): what the hops alone cost on this host, the bound of
// `api`. Every proof is verified. It reports medians over the rounds, where a user's wait went (the row
// written after the request was sent, the 202 after the row, the prover's claim, witness, proving, the
// prover's other work, the proof readable on the status route after it was stored), load and peak
// memory. One file, three roles: the driver (default), the bare web (BENCH_PROOF_ROLE=web) and the
// bare prover (BENCH_PROOF_ROLE=prover).
import { Queue, Worker } from 'bullmq';
import express from 'express';
import { randomUUID } from 'node:crypto';
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
import { createRedis } from '../shared/platform/redis';
import { loadNativeProver } from '../native-prover';
import { freePort } from '../dev/stack/redis';
import { printReport } from './report';
import { benchStack, httpClient, peakMiB, percentile, pool, settled } from './stack';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SEQUENTIAL = Number(process.env.BENCH_PROOFS ?? 10);
const BATCH = Number(process.env.BENCH_BATCH ?? 40);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 8);
const ROLE = process.env.BENCH_PROOF_ROLE;
const BARE_TABLE = 'bare_proofs';
const bareChannel = () => `${process.env.QUEUE_PREFIX}:bare-proofs`;
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

interface Stored {
  id: string;
  status: string;
  proof: unknown;
  publicSignals: string[];
}

/** The bare web: checks and commits the inputs, inserts the row, adds the job; a long poll per proof. */
async function bareWeb() {
  const db = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const queue = new Queue('bare-proofs', {
    connection: createRedis('api'),
    prefix: process.env.QUEUE_PREFIX,
  });
  const sub = createRedis('worker');
  const waiters = new Map<string, Set<() => void>>();
  sub.on('message', (_channel: string, id: string) => {
    const set = waiters.get(id);
    waiters.delete(id);
    for (const w of set ?? []) w();
  });
  await sub.subscribe(bareChannel());
  const app = express();
  app.use(express.json());
  app.post('/prove', async (req, res) => {
    const { policy, inputs } = req.body as { policy: PolicyId; inputs: unknown };
    const prepared = await preparePolicyInput(policy, inputs);
    const id = randomUUID();
    await db.query(`insert into ${BARE_TABLE} (id, policy, input, status) values ($1, $2, $3, 'queued')`, [
      id,
      policy,
      JSON.stringify(prepared.circuitInput),
    ]);
    await queue.add('prove', { id }, { jobId: id, removeOnComplete: { count: 1000 } });
    res.status(202).json({ proof: { id, status: 'queued' }, salts: prepared.salts });
  });
  app.get('/proofs/:id', async (req, res) => {
    const id = req.params.id;
    const read = async () =>
      (
        await db.query(
          `select id, status, proof, public_signals as "publicSignals" from ${BARE_TABLE} where id = $1`,
          [id],
        )
      ).rows[0] as Stored;
    const wait = Number(req.query.wait ?? 0);
    // Listening before the read, so an end between the two is heard.
    let woken = () => {};
    const hint = new Promise<void>((resolve) => (woken = resolve));
    if (!waiters.has(id)) waiters.set(id, new Set());
    waiters.get(id)!.add(woken);
    let row = await read();
    if (wait > 0 && row.status !== 'succeeded' && row.status !== 'failed') {
      await Promise.race([hint, new Promise((r) => setTimeout(r, wait * 1000))]);
      row = await read();
    }
    waiters.get(id)?.delete(woken);
    res.json({ proof: row });
  });
  app.listen(Number(process.env.PORT), '127.0.0.1');
}

/** The bare prover: claims the row, proves as the prover does (same backend and check), stores, publishes. */
async function bareProver() {
  const db = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const pub = createRedis('api');
  const backend = nativeBackend(native!);
  for (const { policy } of subjects) {
    await warmCircuit(policy);
    await loadVerificationKey(policies[policy].circuit);
    await backend.warm?.(policy);
  }
  new Worker(
    'bare-proofs',
    async (job) => {
      const { id } = job.data as { id: string };
      const { rows } = await db.query(
        `update ${BARE_TABLE} set status = 'running', started_at = now() where id = $1 and status = 'queued'
         returning policy, input`,
        [id],
      );
      if (!rows[0]) return;
      const out = await backend.prove(rows[0].policy as PolicyId, rows[0].input as never);
      await db.query(
        `update ${BARE_TABLE} set status = 'succeeded', proof = $2, public_signals = $3, finished_at = now()
         where id = $1`,
        [id, JSON.stringify(out.proof), JSON.stringify(out.publicSignals)],
      );
      await pub.publish(bareChannel(), id);
    },
    {
      connection: createRedis('worker'),
      prefix: process.env.QUEUE_PREFIX,
      concurrency: cpus().length,
      removeOnComplete: { count: 1000 },
    },
  );
}

/** One way in: this service's routes, or the bare pipeline's. */
interface Side {
  submit(policy: PolicyId, inputs: unknown): Promise<string>;
  /** Reads the status until the proof is readable there (long polls). */
  readable(id: string): Promise<Stored>;
}

function side(base: string, paths: { prove: string; status: (id: string) => string }): Side {
  const request = httpClient(base, IN_FLIGHT + 2);
  return {
    async submit(policy, inputs) {
      const res = await request('POST', paths.prove, JSON.stringify({ policy, inputs }));
      if (res.status !== 202) throw new Error(`prove answered ${res.status}: ${res.body}`);
      return (JSON.parse(res.body) as { proof: { id: string } }).proof.id;
    },
    async readable(id) {
      for (;;) {
        const res = await request('GET', paths.status(id));
        if (res.status !== 200) throw new Error(`status answered ${res.status}: ${res.body}`);
        const { proof } = JSON.parse(res.body) as { proof: Stored };
        if (proof.status === 'succeeded') return proof;
        if (proof.status === 'failed') throw new Error(`proof ${id} failed`);
      }
    },
  };
}

async function checked(policy: PolicyId, stored: Stored): Promise<void> {
  const v = await verifyPolicyProof(policy, stored.proof as never, stored.publicSignals);
  if (!v.valid) throw new Error(`a ${policy} proof does not verify`);
}

/** Each proof's client-side times: request sent, 202 in hand, proof in hand (epoch ms). */
type Marks = Map<string, { sent: number; answered: number; read: number }>;

interface Figures {
  inProcess: number[];
  api: number[];
  bareApi: number[];
  inProcessRate: number[];
  queueRate: number[];
  bareQueueRate: number[];
  split: Record<string, number[]>;
  bareSplit: Record<string, number[]>;
}

async function driver() {
  // The prover process's own backend, without its check: what witness and proof alone cost here.
  const local: ProverBackend = nativeBackend(native!, { check: false, precompute: 'eager' });
  const stack = await benchStack();
  const [port, barePort] = [await freePort(), await freePort()];
  const web = stack.spawn('api/main.ts', {
    PORT: String(port),
    HOST: '127.0.0.1',
    RATE_LIMIT_ENABLED: 'false',
    PROVE_MAX_IN_FLIGHT: '100000',
    PROVE_ANON_PER_MINUTE: '1000000',
    OVERLOAD_TARGET_MS: '0',
  });
  const prover = stack.spawn('workers/prover/main.ts', {});
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  db.on('error', () => {});
  const results = new Map<PolicyId, Figures>();
  const loads: number[] = [];
  try {
    await db.connect();
    await db.query(
      `create table ${BARE_TABLE} (id text primary key, policy text not null, input jsonb, status text not null,
         proof jsonb, public_signals jsonb, created_at timestamptz not null default now(), started_at timestamptz,
         finished_at timestamptz)`,
    );
    const bareWebProcess = stack.spawn('bench/proof-latency.ts', {
      BENCH_PROOF_ROLE: 'web',
      PORT: String(barePort),
    });
    const bareProverProcess = stack.spawn('bench/proof-latency.ts', { BENCH_PROOF_ROLE: 'prover' });
    const ours = side(`http://127.0.0.1:${port}`, {
      prove: '/api/proof-workflows/blind-policy/prove',
      status: (id) => `/api/proof-workflows/blind-policy/status?proofId=${id}&wait=10`,
    });
    const bare = side(`http://127.0.0.1:${barePort}`, {
      prove: '/prove',
      status: (id) => `/proofs/${id}?wait=10`,
    });
    const probe = httpClient(`http://127.0.0.1:${port}`, 1);
    const bareProbe = httpClient(`http://127.0.0.1:${barePort}`, 1);
    for (let i = 0; i < 600; i++) {
      const up = await Promise.all([
        probe('GET', '/api/health').then(
          (r) => r.status === 200,
          () => false,
        ),
        bareProbe('GET', '/proofs/none').then(
          () => true,
          () => false,
        ),
      ]);
      if (up.every(Boolean)) break;
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
    // Warm-up: JIT, connections, the provers' tables.
    for (const { policy, inputs } of subjects) {
      for (let i = 0; i < 3; i++) {
        await local.prove(policy, prepared.get(policy)!);
        await ours.readable(await ours.submit(policy, inputs));
        await bare.readable(await bare.submit(policy, inputs));
      }
    }
    await settled([web.pid!, prover.pid!, bareWebProcess.pid!, bareProverProcess.pid!]);
    const constraints = Object.fromEntries(describePolicies().map((p) => [p.id, p.constraints]));
    console.log(
      `bench:proof-latency — ${ROUNDS} rounds; a round, for each policy: ${SEQUENTIAL} proofs one at a time in-process, through the API and through the bare pipeline (status long polls); ${BATCH} in-process back to back, through the queue and through the bare queue, ${IN_FLIGHT} in flight; ${cpus().length} cores`,
    );
    for (const { policy } of subjects) {
      results.set(policy, {
        inProcess: [],
        api: [],
        bareApi: [],
        inProcessRate: [],
        queueRate: [],
        bareQueueRate: [],
        split: {},
        bareSplit: {},
      });
    }
    const now = () => performance.timeOrigin + performance.now();
    /** One proof at a time through a side: the median latency, and each proof's marks. */
    const sequential = async (through: Side, policy: PolicyId, inputs: unknown) => {
      const times: number[] = [];
      const marks: Marks = new Map();
      for (let i = 0; i < SEQUENTIAL; i++) {
        const sent = now();
        const id = await through.submit(policy, inputs);
        const answered = now();
        const stored = await through.readable(id);
        const read = now();
        times.push(read - sent);
        marks.set(id, { sent, answered, read });
        if (i === 0) await checked(policy, stored);
      }
      return { latency: median(times), marks };
    };
    const batch = async (through: Side, policy: PolicyId, inputs: unknown) => {
      const t = performance.now();
      const stored: Stored[] = [];
      await pool([...Array(BATCH).keys()], IN_FLIGHT, async () => {
        stored.push(await through.readable(await through.submit(policy, inputs)));
      });
      await checked(policy, stored[0]!);
      return BATCH / ((performance.now() - t) / 1000);
    };

    /**
     * Where each proof's wait went, by its row's times (Postgres's clock, this host's) set against the
     * client's marks: the row written after the request was sent, the 202 after the row, the claim after
     * the row, the claim to the stored proof, and the stored proof (its final write's statement) to the
     * answer in hand; with the row's `own` columns.
     */
    const timelines = async (table: string, marks: Marks, own = '') => {
      const { rows } = await db.query<Record<string, string | number>>(
        `select id${own}, extract(epoch from created_at) * 1000 as created,
           extract(epoch from started_at) * 1000 as started, extract(epoch from finished_at) * 1000 as finished
         from ${table} where id = any($1)`,
        [[...marks.keys()]],
      );
      return rows.map((row) => {
        const m = marks.get(String(row.id))!;
        const [created, started, finished] = [row.created, row.started, row.finished].map(Number) as [
          number,
          number,
          number,
        ];
        return {
          row,
          written: created - m.sent,
          answered: m.answered - created,
          claimed: started - created,
          stored: finished - started,
          readable: m.read - finished,
        };
      });
    };
    /** Each figure's median over a phase's proofs, added to its round list. */
    const record = (split: Record<string, number[]>, parts: Array<Record<string, number>>) => {
      for (const k of Object.keys(parts[0]!)) (split[k] ??= []).push(median(parts.map((p) => p[k]!)));
    };

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
        const { latency, marks } = await sequential(ours, policy, inputs);
        results.get(policy)!.api.push(latency);
        const rows = await timelines('proofs', marks, ', witness_ms, proving_ms, total_ms');
        record(
          results.get(policy)!.split,
          rows.map(({ row, written, answered, claimed, readable }) => ({
            written,
            answered,
            claimed,
            witness: Number(row.witness_ms),
            proving: Number(row.proving_ms),
            proverRest: Number(row.total_ms) - Number(row.witness_ms) - Number(row.proving_ms),
            readable,
          })),
        );
      },
      async bareApi(policy: PolicyId, inputs: unknown) {
        const { latency, marks } = await sequential(bare, policy, inputs);
        results.get(policy)!.bareApi.push(latency);
        const rows = await timelines(BARE_TABLE, marks);
        record(
          results.get(policy)!.bareSplit,
          rows.map(({ written, answered, claimed, stored, readable }) => ({
            written,
            answered,
            claimed,
            proving: stored,
            readable,
          })),
        );
      },
      async queue(policy: PolicyId, inputs: unknown) {
        results.get(policy)!.queueRate.push(await batch(ours, policy, inputs));
      },
      async bareQueue(policy: PolicyId, inputs: unknown) {
        results.get(policy)!.bareQueueRate.push(await batch(bare, policy, inputs));
      },
    };
    const order = ['inProcess', 'api', 'bareApi', 'queue', 'bareQueue'] as const;
    for (let round = 0; round < ROUNDS; round++) {
      const turned = [...order.slice(round % order.length), ...order.slice(0, round % order.length)];
      for (const { policy, inputs } of subjects) {
        for (const phase of turned) await phases[phase](policy, inputs);
      }
      loads.push(loadavg()[0]!);
    }

    const figures: Record<string, number> = {};
    const baseline: Record<string, number> = {};
    for (const { policy } of subjects) {
      const r = results.get(policy)!;
      const [inProc, api, bareApi] = [median(r.inProcess), median(r.api), median(r.bareApi)];
      const [rateIn, rateQ, rateBare] = [
        median(r.inProcessRate),
        median(r.queueRate),
        median(r.bareQueueRate),
      ];
      const s = Object.fromEntries(Object.entries(r.split).map(([k, v]) => [k, median(v)]));
      const bs = Object.fromEntries(Object.entries(r.bareSplit).map(([k, v]) => [k, median(v)]));
      console.log(`\n${policy} (${constraints[policy]} constraints)`);
      console.log(
        `  latency p50: in-process ${fmt(inProc, 2)} ms (witness + proof); through the API ${fmt(api, 2)} ms: ×${fmt(api / inProc, 2)}; through the bare pipeline ${fmt(bareApi, 2)} ms: ×${fmt(bareApi / inProc, 2)}  (API ÷ bare ${fmt(api / bareApi, 2)})`,
      );
      console.log(
        `  where the API's went, ms (medians): ${Object.entries(s)
          .map(([k, v]) => `${k} ${fmt(v, 2)}`)
          .join(', ')}`,
      );
      console.log(
        `  where the bare pipeline's went, ms (medians): ${Object.entries(bs)
          .map(([k, v]) => `${k} ${fmt(v, 2)}`)
          .join(', ')} (proving: from the claim to the stored proof)`,
      );
      console.log(
        `  throughput: in-process back to back ${fmt(rateIn)}/s; through the queue (${IN_FLIGHT} in flight) ${fmt(rateQ)}/s: ${fmt((rateQ / rateIn) * 100)} %; through the bare queue ${fmt(rateBare)}/s: ${fmt((rateBare / rateIn) * 100)} %`,
      );
      figures[`${policy}.apiLatencyP50Ms`] = api;
      figures[`${policy}.latencyRatio`] = api / inProc;
      figures[`${policy}.latencyOverBare`] = api / bareApi;
      figures[`${policy}.queueProofsPerSecond`] = rateQ;
      figures[`${policy}.throughputShare`] = rateQ / rateIn;
      baseline[`${policy}.inProcessLatencyMs`] = inProc;
      baseline[`${policy}.bareLatencyRatio`] = bareApi / inProc;
      baseline[`${policy}.inProcessProofsPerSecond`] = rateIn;
      baseline[`${policy}.bareThroughputShare`] = rateBare / rateIn;
    }
    console.log(
      `\nload average over the rounds ${fmt(Math.min(...loads), 2)}–${fmt(Math.max(...loads), 2)}; peak memory MiB: web ${fmt(peakMiB(web.pid))}, prover ${fmt(peakMiB(prover.pid))}, bare web ${fmt(peakMiB(bareWebProcess.pid))}, bare prover ${fmt(peakMiB(bareProverProcess.pid))}, this process ${fmt(peakMiB(process.pid))}`,
    );
    printReport({
      bench: 'proof-latency',
      settings: { rounds: ROUNDS, sequential: SEQUENTIAL, batch: BATCH, inFlight: IN_FLIGHT },
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
}

if (ROLE === 'web') await bareWeb();
else if (ROLE === 'prover') await bareProver();
else await driver();
