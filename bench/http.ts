// bench:http — what one request costs the web process, route by route, against a bare Express 5 app
// measured in the same run: `express.json()`, one GET route, one select by primary key through a `pg`
// pool (the baseline); this app's floor (a GET through the whole app that runs one select); and the hot
// routes: createJob, jobStatus, a workflow event, verify, submitPayment (and beside it the bare app
// calling the same database function and queueing the same check). The phases run in rounds, each
// round every phase once (the order turning round by round), and each figure is the median over the
// rounds: a shared host's speed drifts within a run. Every response's status is checked.
// Web CPU per request is the web process's own CPU (user + system, from /proc) over the phase; host CPU
// per request is every process's (the driver, the servers, Postgres, Redis), and busy cores the host's
// busy time over the phase's wall time: near the host's core count, the host is what bounds the rate.
//   npm run bench:http
// BENCH_CLIENT=undici drives every server with undici's pool (32 connections by default) instead of
// node:http's client: the high-rate regime, where per-request costs the low-rate one hides dominate. A
// bare node:http server with the same select stands beside bare Express as the limit.
// BENCH_ROUNDS (7), BENCH_REQUESTS (1000 per phase and round), BENCH_CONCURRENCY (32),
// BENCH_RATE_LIMIT=off to run the app with its rate limits off (they are on, with budgets no phase
// reaches, by default: production runs with them). BENCH_CPU_PROF=<dir> writes each child's CPU profile.
// One file, three roles: the driver (default), the bare Express app (BENCH_HTTP_ROLE=bare) and bare
// node:http (BENCH_HTTP_ROLE=node).
import { createHash, randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { printReport } from './report';
import type { BenchReport } from './report';
import { benchClient, benchStack, cpuMs, hostBusyMs, peakMiB, percentile, pool, settled } from './stack';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const N = Number(process.env.BENCH_REQUESTS ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const PORT = Number(process.env.BENCH_PORT ?? 3996);
const BARE_PORT = Number(process.env.BENCH_BARE_PORT ?? 3995);
const NODE_PORT = Number(process.env.BENCH_NODE_PORT ?? 3994);
const RATE_LIMIT = process.env.BENCH_RATE_LIMIT !== 'off';
const TOKEN = 'op_bench_token_0123456789';
const TEMPLATE = 'Vendor Onboarding';
const CHAIN_ID = 1337;
const hex = (s: string) => createHash('sha256').update(s).digest('hex');
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/**
 * The baseline: a bare Express 5 app, one route, one select by primary key through a pg pool (and, for
 * bench:workflows, one route that inserts one row).
 */
async function bareRole() {
  const { default: express } = await import('express');
  const db = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const app = express();
  app.use(express.json());
  app.get('/rows/:id', async (req, res) => {
    const { rows } = await db.query('select id, v from bench_rows where id = $1', [Number(req.params.id)]);
    if (!rows[0]) return void res.status(404).json({ error: 'not found' });
    res.json(rows[0]);
  });
  // bench:workflows' ceiling for a write over HTTP: its raw insert's row, one insert, through Express.
  app.post('/inserts', async (req, res) => {
    const b = req.body as Record<string, string | number>;
    const { rows } = await db.query(
      `insert into bench_inserts (workflow_id, seq, stage, action, actor_commitment, evidence_commitment, at, prev_hash, entry_hash)
       values ($1, $2, 'application', 'attach_evidence', $3, $4, $5, $6, $7) returning id`,
      [b.workflowId, b.seq, b.actor, b.evidence, new Date().toISOString(), b.prev, b.hash],
    );
    res.json(rows[0]);
  });
  // submitPayment's own baseline: the same database function the app calls (one statement: the job's
  // lock, the caller's token by its hash, the transfer's lock, the checks, the insert) and a queued
  // check, behind Express, without the app's middleware, validation, problems or views.
  const { Queue } = await import('bullmq');
  const { Redis } = await import('ioredis');
  const checks = new Queue('bare-payments', {
    connection: new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: null }),
    prefix: process.env.QUEUE_PREFIX,
  });
  app.post('/jobs/:id/payment', async (req, res) => {
    const b = req.body as { asset: string; txRef: string };
    const token = (req.headers.authorization ?? '').slice('Bearer '.length);
    const { rows } = await db.query<{ verdict: string; id: string }>(
      `select r.verdict, (r.payment).*
         from submit_payment(p_job_id => $1, p_asset => $2, p_tx_ref => $3, p_reference => null,
                             p_now => $4, p_late_ms => 0, p_operator => false, p_agent_id => null,
                             p_license_id => null, p_token_hash => $5, p_with_deliveries => false,
                             p_id => $6, p_payer => null, p_tx_key => null) r`,
      [
        req.params.id,
        b.asset,
        b.txRef.toLowerCase(),
        new Date(),
        createHash('sha256').update(token).digest('hex'),
        `pay_${randomBytes(13).toString('hex')}`,
      ],
    );
    if (rows[0]!.verdict !== 'created') return void res.status(409).json({ error: rows[0]!.verdict });
    await checks.add('check', { paymentId: rows[0]!.id });
    res.status(202).json({ payment: rows[0] });
  });
  const server = app.listen(BARE_PORT, '127.0.0.1');
  process.on('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void checks
      .obliterate({ force: true })
      .then(() => checks.close())
      .finally(() => void db.end().finally(() => process.exit(0)));
  });
}

/** The limit: node:http alone, the same select through the same pool, JSON out. No framework at all. */
async function nodeHttpRole() {
  const { createServer } = await import('node:http');
  const db = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const server = createServer((req, res) => {
    const m = /^\/rows\/(\d+)$/.exec(req.url ?? '');
    if (req.method !== 'GET' || !m) {
      res.writeHead(404).end();
      return;
    }
    db.query('select id, v from bench_rows where id = $1', [Number(m[1])]).then(
      ({ rows }) => {
        const body = JSON.stringify(rows[0] ?? { error: 'not found' });
        res.writeHead(rows[0] ? 200 : 404, { 'content-type': 'application/json' }).end(body);
      },
      () => res.writeHead(500).end(),
    );
  });
  server.keepAliveTimeout = 60_000;
  server.listen(NODE_PORT, '127.0.0.1');
  process.on('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void db.end().finally(() => process.exit(0));
  });
}

interface Phase {
  name: string;
  key: string;
  /** Which process serves it: the bare Express app, bare node:http, or ours. */
  server: 'bare' | 'node' | 'web';
  /** Called before each round's timed run (untimed): makes what the round's requests need. */
  prepare?: () => Promise<void>;
  request: (i: number) => Promise<void>;
}

async function main() {
  const stack = await benchStack();
  const base = `http://127.0.0.1:${PORT}`;
  const bareBase = `http://127.0.0.1:${BARE_PORT}`;
  const nodeBase = `http://127.0.0.1:${NODE_PORT}`;
  let report: BenchReport | undefined;
  try {
    const setup = new pg.Client({ connectionString: stack.databaseUrl });
    await setup.connect();
    await setup.query('create table bench_rows (id int primary key, v text not null)');
    await setup.query(`insert into bench_rows select g, md5(g::text) from generate_series(1, 1000) g`);
    await setup.end();

    const paymentEnv = {
      // No node answers here: the web only records a payment and queues its check, which no worker
      // of this bench takes.
      EVM_RPC_URL: 'http://127.0.0.1:9',
      EVM_CONFIRMATIONS: '1',
      TREASURY_EVM: '0x90F8bf6A479f320ead074411a4B0e7944Ea8c9C1',
      ASSETS_JSON: JSON.stringify({
        ETH: { network: `eip155:${CHAIN_ID}` },
        'USDC-ETH': { disabled: true },
        'WBTC-ETH': { disabled: true },
      }),
      RATES_USD: 'ETH=2000',
    };
    const big = String(1_000_000_000);
    const web = stack.spawn('api/main.ts', {
      ...paymentEnv,
      PORT: String(PORT),
      HOST: '127.0.0.1',
      OPERATOR_TOKEN: TOKEN,
      // A closed loop measures what a request costs: its requests are never shed for their time in
      // the process (bench:overload measures shedding).
      OVERLOAD_TARGET_MS: '0',
      RATE_LIMIT_ENABLED: RATE_LIMIT ? 'true' : 'false',
      RATE_LIMIT_IP_PER_MINUTE: big,
      RATE_LIMIT_KEY_PER_MINUTE: big,
      VERIFY_PER_MINUTE: big,
      AMOUNT_HOLDS_PER_CALLER: big,
    });
    const bare = stack.spawn('bench/http.ts', { BENCH_HTTP_ROLE: 'bare' });
    const node = stack.spawn('bench/http.ts', { BENCH_HTTP_ROLE: 'node' });
    const prover = stack.spawn('workers/prover/main.ts');
    for (const b of [`${base}/api/health`, `${bareBase}/rows/1`, `${nodeBase}/rows/1`]) {
      for (let i = 0; ; i++) {
        if (
          await fetch(b).then(
            (r) => r.ok,
            () => false,
          )
        )
          break;
        if (i > 300) throw new Error(`${b} did not answer`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const waited = await settled([web.pid!, bare.pid!, node.pid!, prover.pid!]);
    console.log(`bench: the processes settled after ${(waited / 1000).toFixed(1)} s`);

    const call = benchClient(base, CONCURRENCY);
    const bareCall = benchClient(bareBase, CONCURRENCY);
    const nodeCall = benchClient(nodeBase, CONCURRENCY);
    const op = { authorization: `Bearer ${TOKEN}` };
    const expect = async (
      p: Promise<{ status: number; body: string }>,
      status: number,
      what: string,
    ): Promise<Record<string, unknown>> => {
      const res = await p;
      if (res.status !== status) throw new Error(`${what} answered ${res.status}: ${res.body.slice(0, 300)}`);
      return JSON.parse(res.body) as Record<string, unknown>;
    };
    const post = (path: string, body: unknown, status: number, headers: Record<string, string> = op) =>
      expect(call('POST', path, JSON.stringify(body), headers), status, path);

    // Workflows: one for events, and finished ones (signed and logged by the prover) for verify.
    const prepareWorkflow = async () =>
      (await post('/api/proof-workflows/prepare', { template: TEMPLATE }, 201)) as {
        workflowId: string;
        proofId: string;
      };
    const event = (workflowId: string, stage: string, action: string, who: string, evidence?: string) =>
      post(
        '/api/proof-workflows/event',
        {
          workflowId,
          stage,
          action,
          actorCommitment: hex(who),
          ...(evidence ? { evidenceHash: hex(evidence) } : {}),
        },
        200,
      );
    const eventFlows = await Promise.all(Array.from({ length: 20 }, () => prepareWorkflow()));
    const finished = await Promise.all(Array.from({ length: 20 }, () => prepareWorkflow()));
    await pool(finished, 4, async ({ workflowId }) => {
      await event(workflowId, 'application', 'attach_evidence', 'vendor', `${workflowId} doc`);
      await event(workflowId, 'application', 'submit', 'vendor');
      for (const stage of ['due_diligence', 'security_review']) {
        await event(workflowId, stage, 'attach_evidence', 'analyst', `${workflowId} ${stage}`);
        await event(workflowId, stage, 'approve', `${stage} reviewer`);
      }
      await event(workflowId, 'approval', 'approve', 'procurement');
    });
    for (let i = 0; ; i++) {
      const head = await expect(call('GET', '/api/proof-workflows/log/head'), 200, 'log head');
      if (Number(head.treeSize) >= finished.length) break;
      if (i > 600) throw new Error('packages were not logged in time');
      await new Promise((r) => setTimeout(r, 100));
    }

    // Jobs for jobStatus, each with its access token.
    const jobBody = (i: number) => ({
      service: 'attest.timestamp',
      input: { digest: hex(`bench http ${i} ${randomBytes(4).toString('hex')}`) },
    });
    const jobs: Array<{ id: string; token: string }> = [];
    await pool([...Array(200).keys()], CONCURRENCY, async (i) => {
      const created = (await post('/api/jobs', jobBody(i), 202, {} as typeof op)) as {
        job: { id: string };
        accessToken: string;
      };
      jobs.push({ id: created.job.id, token: created.accessToken });
    });
    // Priced jobs for submitPayment, made before each round (one payment each).
    let priced: Array<{ id: string; token: string }> = [];
    const makePriced = async () => {
      priced = [];
      await pool([...Array(N).keys()], CONCURRENCY, async (i) => {
        const created = (await post(
          '/api/jobs',
          {
            service: 'attest.batch',
            input: { digests: [hex(`priced ${i} ${randomBytes(4).toString('hex')}`)] },
          },
          402,
          {} as typeof op,
        )) as { job: { id: string }; accessToken: string };
        priced.push({ id: created.job.id, token: created.accessToken });
      });
    };

    // The i-th priced job's payment (a fresh ETH transfer hash), with its token, to either server.
    const pay = async (via: typeof call, jobs: string, i: number, what: string) => {
      const job = priced[i]!;
      await expect(
        via(
          'POST',
          `${jobs}/${job.id}/payment`,
          JSON.stringify({ asset: 'ETH', txRef: `0x${randomBytes(32).toString('hex')}` }),
          { authorization: `Bearer ${job.token}` },
        ),
        202,
        what,
      );
    };

    let eventCount = 0;
    const phases: Phase[] = [
      {
        name: 'baseline: bare Express 5, GET + one select',
        key: 'bare',
        server: 'bare',
        request: async (i) => {
          await expect(bareCall('GET', `/rows/${(i % 1000) + 1}`), 200, 'bare');
        },
      },
      {
        name: 'limit: bare node:http, GET + one select',
        key: 'nodehttp',
        server: 'node',
        request: async (i) => {
          await expect(nodeCall('GET', `/rows/${(i % 1000) + 1}`), 200, 'node:http');
        },
      },
      {
        name: 'floor: GET log head (one select)',
        key: 'floor',
        server: 'web',
        request: async () => {
          await expect(call('GET', '/api/proof-workflows/log/head'), 200, 'log head');
        },
      },
      {
        name: 'createJob',
        key: 'createJob',
        server: 'web',
        request: async (i) => {
          await post('/api/jobs', jobBody(i), 202, {} as typeof op);
        },
      },
      {
        name: 'jobStatus',
        key: 'jobStatus',
        server: 'web',
        request: async (i) => {
          const job = jobs[i % jobs.length]!;
          await expect(
            call('GET', `/api/jobs/${job.id}`, undefined, { authorization: `Bearer ${job.token}` }),
            200,
            'jobStatus',
          );
        },
      },
      {
        name: 'workflow event',
        key: 'event',
        server: 'web',
        request: async (i) => {
          const n = eventCount++;
          await event(
            eventFlows[i % eventFlows.length]!.workflowId,
            'application',
            'attach_evidence',
            `bench actor ${n % 7}`,
            `bench document ${n}`,
          );
        },
      },
      {
        name: 'verify',
        key: 'verify',
        server: 'web',
        request: async (i) => {
          // As the public verifies: verify takes no credential, and a third party has none to send.
          const v = await post(
            '/api/proof-workflows/verify',
            { proofId: finished[i % finished.length]!.proofId },
            200,
            {},
          );
          if (v.notAltered !== true || v.inclusionValid !== true) throw new Error('verify did not confirm');
        },
      },
      {
        name: 'baseline of submitPayment: bare Express 5 + pg + BullMQ, the same statement and queued check',
        key: 'bareSubmit',
        server: 'bare',
        prepare: makePriced,
        request: (i) => pay(bareCall, '/jobs', i, 'bare submitPayment'),
      },
      {
        name: 'submitPayment',
        key: 'submitPayment',
        server: 'web',
        prepare: makePriced,
        request: (i) => pay(call, '/api/jobs', i, 'submitPayment'),
      },
    ];
    const pids = { bare: bare.pid!, node: node.pid!, web: web.pid! };

    // Warm-up: every phase once, unmeasured (connections, JIT, prepared plans).
    for (const phase of phases) {
      await phase.prepare?.();
      await pool([...Array(Math.min(N, 300)).keys()], CONCURRENCY, phase.request);
    }

    type Sample = {
      perSecond: number;
      cpuMs: number;
      hostMs: number;
      busyCores: number;
      p50: number;
      p99: number;
    };
    const samples = new Map<string, Sample[]>(phases.map((p) => [p.key, []]));
    const loads: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // The order turns each round, so no phase always follows the same one.
      const order = phases.map((_, i) => phases[(i + round) % phases.length]!);
      for (const phase of order) {
        await phase.prepare?.();
        const pid = pids[phase.server];
        const cpuBefore = cpuMs(pid);
        const hostBefore = hostBusyMs();
        const t = performance.now();
        const from = process.hrtime.bigint();
        const latencies = await pool([...Array(N).keys()], CONCURRENCY, phase.request);
        const seconds = (performance.now() - t) / 1000;
        const hostMs = hostBusyMs() - hostBefore;
        // The phase's window on the monotonic clock the CPU profiles' sample times use (µs), for
        // bench/profile.ts.
        if (process.env.BENCH_CPU_PROF)
          console.error(`phase ${phase.key} ${N} ${from / 1000n} ${process.hrtime.bigint() / 1000n}`);
        samples.get(phase.key)!.push({
          perSecond: N / seconds,
          cpuMs: (cpuMs(pid) - cpuBefore) / N,
          hostMs: hostMs / N,
          busyCores: hostMs / 1000 / seconds,
          p50: percentile(latencies, 50),
          p99: percentile(latencies, 99),
        });
      }
      loads.push(loadavg()[0]!);
      console.log(`round ${round + 1}/${ROUNDS} done (load ${loadavg()[0]!.toFixed(2)})`);
    }

    const med = (key: string, f: keyof Sample) => median(samples.get(key)!.map((s) => s[f]));
    // Ratio to the baseline per round (same round, so the same host speed), then the median.
    const cpuRatio = (key: string) =>
      median(samples.get(key)!.map((s, r) => s.cpuMs / samples.get('bare')![r]!.cpuMs));
    const rateRatio = (key: string) =>
      median(samples.get(key)!.map((s, r) => s.perSecond / samples.get('bare')![r]!.perSecond));
    const memory = { web: peakMiB(web.pid!), bare: peakMiB(bare.pid!) };

    console.log(
      `\nbench:http — ${ROUNDS} rounds × ${N} requests a phase, ${CONCURRENCY} in flight, rate limits ${RATE_LIMIT ? 'on' : 'off'}, ${cpus().length} cores; medians over the rounds`,
    );
    console.log(
      '| phase | requests/s | web CPU ms/request | CPU × bare Express | rate × bare Express | host CPU ms/request | busy cores | p50 ms | p99 ms |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const p of phases) {
      console.log(
        `| ${p.name} | ${med(p.key, 'perSecond').toFixed(0)} | ${med(p.key, 'cpuMs').toFixed(3)} | ${cpuRatio(p.key).toFixed(2)} | ${rateRatio(p.key).toFixed(3)} | ${med(p.key, 'hostMs').toFixed(3)} | ${med(p.key, 'busyCores').toFixed(2)} | ${med(p.key, 'p50').toFixed(1)} | ${med(p.key, 'p99').toFixed(1)} |`,
      );
    }
    console.log(
      `load average (1 min) over the rounds: ${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}; peak memory: web ${memory.web.toFixed(0)} MiB, bare ${memory.bare.toFixed(0)} MiB, driver ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
    );

    // submitPayment against its own baseline, round by round.
    const vsBareSubmit = median(
      samples.get('submitPayment')!.map((s, r) => s.perSecond / samples.get('bareSubmit')![r]!.perSecond),
    );
    console.log(
      `submitPayment ÷ its bare baseline (rate, per round, median): ${vsBareSubmit.toFixed(3)}; web CPU ${med('submitPayment', 'cpuMs').toFixed(3)} vs ${med('bareSubmit', 'cpuMs').toFixed(3)} ms`,
    );
    const figures: Record<string, number> = {};
    for (const p of phases.slice(1)) {
      figures[`${p.key}PerSecond`] = med(p.key, 'perSecond');
      figures[`${p.key}CpuMs`] = med(p.key, 'cpuMs');
      figures[`${p.key}CpuRatio`] = cpuRatio(p.key);
      figures[`${p.key}P99Ms`] = med(p.key, 'p99');
      figures[`${p.key}HostCpuMs`] = med(p.key, 'hostMs');
    }
    figures.submitPaymentVsBare = vsBareSubmit;
    figures.webPeakMiB = memory.web;
    figures.loadAverageMax = Math.max(...loads);
    report = {
      bench: `http${RATE_LIMIT ? '' : ' --rate-limit=off'}${process.env.BENCH_CLIENT === 'undici' ? ' (undici)' : ''}`,
      settings: {
        rounds: ROUNDS,
        requests: N,
        inFlight: CONCURRENCY,
        rateLimit: RATE_LIMIT,
        client: process.env.BENCH_CLIENT === 'undici' ? 'undici' : 'node:http',
      },
      figures,
      baseline: {
        barePerSecond: med('bare', 'perSecond'),
        bareCpuMs: med('bare', 'cpuMs'),
        bareP99Ms: med('bare', 'p99'),
        barePeakMiB: memory.bare,
      },
      target: {
        floorCpuRatio: { max: 1.5 },
        verifyPerSecond: { min: 1000 },
        submitPaymentPerSecond: { min: 1000 },
      },
    };
  } finally {
    await stack.close();
  }
  if (report) printReport(report);
}

if (process.env.BENCH_HTTP_ROLE === 'bare') await bareRole();
else if (process.env.BENCH_HTTP_ROLE === 'node') await nodeHttpRole();
else await main();
