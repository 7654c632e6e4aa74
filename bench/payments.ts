// bench:payments — payments verified per second through the `payments` queue (worker process, Postgres,
// receipts) against a local EVM node, beside that node's raw JSON-RPC round-trip rate in the same run.
// One file, three roles: the driver (default), the node (ganache) and a payments-only worker.
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { cpus, loadavg } from 'node:os';
import type { Asset } from '../shared/chains/assets';
import { printReport } from './report';
import type { BenchReport } from './report';

const N = Number(process.env.BENCH_PAYMENTS ?? 1000);
/** Payments checked before the timing starts, so the figure is the worker's steady state, not its JIT warm-up. */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 200);
const TOTAL = N + WARMUP;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const RPC_CALLS = Number(process.env.BENCH_RPC_CALLS ?? 3 * N);
const PORT = Number(process.env.BENCH_PORT ?? 3997);
const CHAIN_ID = 1337;
/** 50 cents (attest.batch) at 2000 USD per ETH. */
const PRICE_WEI = 250_000_000_000_000n;
const fmt = (n: number) => n.toFixed(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The node, alone in its process as a real one would be: ganache, instamine, deterministic wallet. */
async function chainRole() {
  const { default: ganache } = await import('ganache');
  // ganache's bundled typings resolve the options type to `undefined` under this tsconfig.
  const startServer = ganache.server as (options: object) => ReturnType<typeof ganache.server>;
  const server = startServer({
    logging: { quiet: true },
    chain: { chainId: CHAIN_ID },
    wallet: { deterministic: true, totalAccounts: CONCURRENCY + 1, defaultBalance: 10_000 },
  });
  await server.listen(Number(process.env.BENCH_RPC_PORT), '127.0.0.1');
  process.on('SIGTERM', () => void server.close().finally(() => process.exit(0)));
}

/** The `payments` consumer exactly as workers/main.ts builds it, without the other queues' work. */
async function workerRole() {
  const { createDb } = await import('../shared/platform/db/knex');
  const { createRedis } = await import('../shared/platform/redis');
  const { startWorker } = await import('../workers/pool');
  const { env } = await import('../shared/platform/env');
  const { paymentsProcessor } = await import('../workers/processors/payments');
  const { chainRpcCalls, chainRpcRequests } = await import('../shared/platform/metrics');
  const db = createDb();
  // Every statement this worker sends (BEGIN and COMMIT included): it does nothing but check payments.
  let statements = 0;
  db.on('query', () => statements++);
  const redis = createRedis('worker');
  // The profile starts with the first payment, so it shows the checks and not the start-up.
  let profile: Promise<(file: string) => Promise<void>> | undefined;
  const processor = paymentsProcessor(db);
  const worker = startWorker(
    'payments',
    (job, token) => {
      if (process.env.BENCH_PROFILE) profile ??= startProfile();
      return processor(job, token);
    },
    redis,
    { concurrency: env.PAYMENTS_CONCURRENCY },
  );
  process.on('SIGTERM', async () => {
    await (
      await profile
    )?.(process.env.BENCH_PROFILE!);
    await worker.close();
    const requests = (await chainRpcRequests.get()).values.reduce((n, v) => n + v.value, 0);
    const calls = (await chainRpcCalls.get()).values.reduce((n, v) => n + v.value, 0);
    writeFileSync(process.env.BENCH_COUNTS!, JSON.stringify({ statements, requests, calls }));
    redis.disconnect();
    await db.destroy();
    process.exit(0);
  });
}

/** BENCH_PROFILE=file: the worker's CPU profile (open in Chrome DevTools) from its first payment on. */
async function startProfile() {
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async (file: string) => {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(file, JSON.stringify(profile));
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** CPU time (user + system) a process has used so far, in ms; Linux only, else NaN. */
function cpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in USER_HZ ticks
  } catch {
    return NaN;
  }
}

async function until(what: string, ok: () => Promise<boolean>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen in time`);
    await sleep(50);
  }
}

async function driver() {
  const { Queue } = await import('bullmq');
  const { Redis } = await import('ioredis');
  const { default: pg } = await import('pg');
  const { createHash } = await import('node:crypto');
  const { benchStack, httpClient, percentile, pool } = await import('./stack');
  const { createEvmAdapter } = await import('../shared/chains/evm');
  const { env } = await import('../shared/platform/env');
  const GROUP = env.PAYMENT_CHECK_BATCH;

  const stack = await benchStack();
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const countsFile = join(mkdtempSync(join(tmpdir(), 'bench-payments-')), 'counts.json');
  let report: BenchReport | undefined;
  let finish: ((counts: { statements: number; requests: number; calls: number }) => void) | undefined;
  try {
    const rpcPort = await freePort();
    const rpcUrl = `http://127.0.0.1:${rpcPort}`;
    const node = stack.spawn('bench/payments.ts', {
      BENCH_PAYMENTS_ROLE: 'chain',
      BENCH_RPC_PORT: String(rpcPort),
    });
    const rpcCall = httpClient(rpcUrl, CONCURRENCY);
    let rpcId = 0;
    async function rpc<T>(method: string, params: unknown[] = []): Promise<T> {
      const res = await rpcCall('POST', '/', JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }));
      const doc = JSON.parse(res.body) as { result: T; error?: { message: string } };
      if (doc.error) throw new Error(`${method}: ${doc.error.message}`);
      return doc.result;
    }
    await until('the EVM node', async () => Boolean(await rpc<string>('eth_chainId')));
    const accounts = await rpc<string[]>('eth_accounts');
    const treasury = accounts[0]!;
    const payers = accounts.slice(1);

    const paymentEnv = {
      EVM_RPC_URL: rpcUrl,
      EVM_CONFIRMATIONS: '1',
      TREASURY_EVM: treasury,
      ASSETS_JSON: JSON.stringify({
        ETH: { network: `eip155:${CHAIN_ID}` },
        'USDC-ETH': { disabled: true },
        'WBTC-ETH': { disabled: true },
      }),
      RATES_USD: 'ETH=2000',
    };
    const base = `http://127.0.0.1:${PORT}`;
    stack.spawn('api/main.ts', {
      ...paymentEnv,
      PORT: String(PORT),
      HOST: '127.0.0.1',
      // A closed loop measures what a request costs: its requests are never shed for their time in
      // the process (bench:overload measures shedding).
      OVERLOAD_TARGET_MS: '0',
      RATE_LIMIT_ENABLED: 'false',
      // Every job comes from this one address: let it hold an amount for each.
      AMOUNT_HOLDS_PER_CALLER: String(N + WARMUP),
    });
    const worker = stack.spawn('bench/payments.ts', {
      ...paymentEnv,
      BENCH_PAYMENTS_ROLE: 'worker',
      BENCH_COUNTS: countsFile,
    });
    const connection = new Redis(stack.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue('payments', { connection, prefix: stack.prefix });
    // Held until every payment is submitted, so the timed part is verification alone.
    await queue.pause();
    const call = httpClient(base, CONCURRENCY);
    await until('web', async () => (await call('GET', '/api/health')).status === 200);
    await until('the payments worker', async () => (await queue.getWorkersCount()) > 0);
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    // Dropping the database at the end cuts this connection; a failure before then must stay visible.
    db.on('error', () => undefined);
    await db.connect();

    console.log(
      `bench:payments — ${N} ETH payments timed after ${WARMUP} of warm-up, ${CONCURRENCY} in flight, EVM_CONFIRMATIONS=1, on ${cpus().length} cores`,
    );

    // 1. Priced jobs: each ETH quote asks for its own amount (the price plus a unique offset).
    let t = performance.now();
    const jobs: Array<{ id: string; token: string; wei: bigint }> = [];
    await pool([...Array(TOTAL).keys()], CONCURRENCY, async (i) => {
      const digest = createHash('sha256').update(`bench payment ${i}`).digest('hex');
      const job = await call(
        'POST',
        '/api/jobs',
        JSON.stringify({ service: 'attest.batch', input: { digests: [digest] } }),
      );
      if (job.status !== 402) throw new Error(`createJob answered ${job.status}: ${job.body}`);
      const body = JSON.parse(job.body) as {
        job: { id: string };
        accessToken: string;
        payment: { quotes: Array<{ asset: string; amount: string }> };
      };
      jobs[i] = {
        id: body.job.id,
        token: body.accessToken,
        wei: BigInt(body.payment.quotes.find((q) => q.asset === 'ETH')!.amount),
      };
    });

    // 2. Real transfers of those amounts, mined after the quotes. One lane per payer: the node numbers
    // each sender's transactions in turn.
    t = performance.now();
    const hashes: string[] = [];
    let claimed = 0;
    await pool(payers, payers.length, async (from) => {
      for (let i = claimed++; i < TOTAL; i = claimed++) {
        const value = `0x${jobs[i]!.wei.toString(16)}`;
        hashes[i] = await rpc<string>('eth_sendTransaction', [{ from, to: treasury, value, gas: '0x5208' }]);
      }
    });
    const transfersPerSecond = TOTAL / ((performance.now() - t) / 1000);

    // 3. A payment submitted for each (held in the paused queue).
    t = performance.now();
    await pool([...Array(TOTAL).keys()], CONCURRENCY, async (i) => {
      const paid = await call(
        'POST',
        `/api/jobs/${jobs[i]!.id}/payment`,
        JSON.stringify({ asset: 'ETH', txRef: hashes[i] }),
        { authorization: `Bearer ${jobs[i]!.token}` },
      );
      if (paid.status !== 202) throw new Error(`submitPayment answered ${paid.status}: ${paid.body}`);
    });
    const submitPerSecond = TOTAL / ((performance.now() - t) / 1000);

    // 3. The node's raw round trip: eth_getTransactionReceipt, same concurrency, same keep-alive client.
    await pool(
      hashes.slice(0, Math.min(N, 200)),
      CONCURRENCY,
      async (h) => void (await rpc('eth_getTransactionReceipt', [h])),
    );
    t = performance.now();
    const rpcLat = await pool([...Array(RPC_CALLS).keys()], CONCURRENCY, async (i) => {
      const receipt = await rpc<{ status: string } | null>('eth_getTransactionReceipt', [hashes[i % N]]);
      if (!receipt) throw new Error('receipt missing');
    });
    const rpcPerSecond = RPC_CALLS / ((performance.now() - t) / 1000);

    // 4. The adapter alone (the worker's chain calls, no queue or database), in this process: lone
    // checks at the same concurrency, then groups of PAYMENT_CHECK_BATCH, the most the worker makes.
    const asset: Asset = {
      id: 'ETH',
      symbol: 'ETH',
      name: 'Ether',
      family: 'evm',
      network: `eip155:${CHAIN_ID}`,
      decimals: 18,
      stable: false,
    };
    const adapter = createEvmAdapter({ rpcUrl, confirmations: 1, timeoutMs: 10_000, retries: 0 });
    const verify = async (h: string) => {
      const r = await adapter.verifyTransfer({ asset, txRef: h, to: treasury, minAmount: PRICE_WEI });
      if (r.status !== 'confirmed') throw new Error(`adapter: ${r.status} ${r.reason ?? ''}`);
    };
    await pool(hashes.slice(0, Math.min(N, 200)), CONCURRENCY, verify);
    t = performance.now();
    await pool(hashes.slice(0, N), CONCURRENCY, verify);
    const adapterPerSecond = N / ((performance.now() - t) / 1000);
    const groups: string[][] = [];
    for (let i = 0; i < N; i += GROUP) groups.push(hashes.slice(i, i + GROUP));
    t = performance.now();
    await pool(groups, 2, async (group) => {
      const results = await adapter.verifyTransfers!(
        group.map((h) => ({ asset, txRef: h, to: treasury, minAmount: PRICE_WEI })),
      );
      const bad = results.find((r) => r.status !== 'confirmed');
      if (bad) throw new Error(`adapter: ${bad.status} ${bad.reason ?? ''}`);
    });
    const adapterBatchedPerSecond = N / ((performance.now() - t) / 1000);

    // 5. Through the queue: release the held payments, time until every one is confirmed.
    const counts = async () => {
      const { rows } = await db.query<{ status: string; n: string }>(
        'select status, count(*) n from payments group by status',
      );
      return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)])) as Record<string, number>;
    };
    // Postgres: the backends serving this run's database (the worker's pool among them); Redis: the
    // whole server, which other users of the same Redis share.
    const backends = async () =>
      (
        await db.query<{ pid: number }>(
          'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
        )
      ).rows.map((r) => r.pid);
    const pgCpu = async () => new Map((await backends()).map((pid) => [pid, cpuMs(pid) || 0]));
    const redisCpu = async () => {
      const info = await connection.info('cpu');
      const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? NaN);
      return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
    };
    const cpuAt = async () => ({
      worker: cpuMs(worker.pid),
      node: cpuMs(node.pid),
      pg: await pgCpu(),
      redis: await redisCpu(),
    });
    let cpuBefore = await cpuAt();
    let loadBefore = loadavg()[0]!;
    const resumed = performance.now();
    t = 0;
    let confirmedAtStart = 0;
    await queue.resume();
    for (;;) {
      const c = await counts();
      const confirmed = c.confirmed ?? 0;
      if (!t && confirmed >= WARMUP) {
        t = performance.now();
        confirmedAtStart = confirmed;
        cpuBefore = await cpuAt();
        loadBefore = loadavg()[0]!;
      }
      if (confirmed >= TOTAL) break;
      const settledOtherwise = Object.entries(c).filter(
        ([s]) => !['pending', 'verifying', 'confirmed'].includes(s),
      );
      if (settledOtherwise.length) throw new Error(`payments not confirmed: ${JSON.stringify(c)}`);
      await sleep(10);
    }
    const coldPerSecond = TOTAL / ((performance.now() - resumed) / 1000);
    // Timed from the first poll that saw the warm-up done (a group may have gone past it).
    const timed = TOTAL - confirmedAtStart;
    const elapsed = (performance.now() - t) / 1000;
    const workerCpu = (cpuMs(worker.pid) - cpuBefore.worker) / timed;
    const nodeCpu = (cpuMs(node.pid) - cpuBefore.node) / timed;
    // Backends that appeared during the run count from zero.
    let pgUsed = 0;
    for (const [pid, ms] of await pgCpu()) pgUsed += ms - (cpuBefore.pg.get(pid) ?? 0);
    const postgresCpu = pgUsed / timed;
    const redisServerCpu = ((await redisCpu()) - cpuBefore.redis) / timed;
    const paymentsPerSecond = timed / elapsed;
    const { rows } = await db.query<{ checks: string; receipts: string; queued: string }>(
      `select (select sum(checks) from payments) checks, (select count(*) from receipts) receipts,
              (select count(*) from jobs where status = 'queued') queued`,
    );
    const stats = rows[0]!;
    await db.end();
    await queue.close();
    connection.disconnect();

    // What one check needs when it is alone: the transaction, its receipt, the head and its block.
    const callsPerCheck = 4;
    const rpcBound = rpcPerSecond / callsPerCheck;
    const loadAfter = loadavg()[0]!;
    const lines = [
      `transfers sent and mined (ganache):        ${fmt(transfersPerSecond)} tx/s`,
      `createJob + submitPayment over HTTP:       ${fmt(submitPerSecond)} payments/s`,
      `raw RPC eth_getTransactionReceipt:         ${fmt(rpcPerSecond)} calls/s  (p50/p99 ${fmt(percentile(rpcLat, 50))} / ${fmt(percentile(rpcLat, 99))} ms)`,
      `EVM adapter alone, lone checks:            ${fmt(adapterPerSecond)} verifications/s  (${callsPerCheck} RPC calls each, 2 HTTP requests)`,
      `EVM adapter alone, groups of ${GROUP}:          ${fmt(adapterBatchedPerSecond)} verifications/s`,
      `payments verified through the queue:       ${fmt(paymentsPerSecond)} payments/s  (${timed} in ${elapsed.toFixed(2)} s after ${confirmedAtStart}; all ${TOTAL}: ${stats.checks} checks, ${stats.receipts} receipts, ${stats.queued} jobs queued)`,
      `  the same from a cold worker, warm-up included: ${fmt(coldPerSecond)} payments/s`,
      `CPU per payment, worker / node / Postgres / Redis: ${workerCpu.toFixed(2)} / ${nodeCpu.toFixed(2)} / ${postgresCpu.toFixed(2)} / ${redisServerCpu.toFixed(2)} ms  (Redis: the whole server, shared)`,
      `ratio through the queue / (raw RPC ÷ ${callsPerCheck}):  ${((paymentsPerSecond / rpcBound) * 100).toFixed(1)} %  (raw ${fmt(rpcPerSecond)} calls/s ÷ ${callsPerCheck} = ${fmt(rpcBound)} checks/s)`,
      `ratio through the queue / adapter alone:   ${((paymentsPerSecond / adapterBatchedPerSecond) * 100).toFixed(1)} % (grouped)`,
      `load average (1 min), before / after:      ${loadBefore.toFixed(2)} / ${loadAfter.toFixed(2)}`,
    ];
    for (const line of lines) console.log(line);
    finish = (counts) => {
      // The worker's counts cover its whole run, warm-up included.
      const perPayment = (n: number) => n / TOTAL;
      console.log(
        `per payment (worker): SQL statements ${perPayment(counts.statements).toFixed(2)}, HTTP requests to the node ${perPayment(counts.requests).toFixed(3)}, RPC calls ${perPayment(counts.calls).toFixed(2)}`,
      );
      report = {
        bench: 'payments',
        settings: {
          payments: N,
          warmup: WARMUP,
          inFlight: CONCURRENCY,
          paymentsConcurrency: env.PAYMENTS_CONCURRENCY,
          checkBatch: GROUP,
          rpcCalls: RPC_CALLS,
          callsPerCheck,
          loadAverage1m: { before: +loadBefore.toFixed(2), after: +loadAfter.toFixed(2) },
        },
        figures: {
          paymentsPerSecond,
          coldPaymentsPerSecond: coldPerSecond,
          ratioToRpcBound: paymentsPerSecond / rpcBound,
          ratioToAdapter: paymentsPerSecond / adapterBatchedPerSecond,
          submitPerSecond,
          workerCpuMsPerPayment: workerCpu,
          nodeCpuMsPerPayment: nodeCpu,
          postgresCpuMsPerPayment: postgresCpu,
          redisServerCpuMsPerPayment: redisServerCpu,
          sqlStatementsPerPayment: perPayment(counts.statements),
          httpRequestsPerPayment: perPayment(counts.requests),
          rpcCallsPerPayment: perPayment(counts.calls),
        },
        baseline: {
          rawRpcCallsPerSecond: rpcPerSecond,
          adapterPerSecond,
          adapterBatchedPerSecond,
          transfersPerSecond,
        },
        target: { paymentsPerSecond: { min: 1000 }, ratioToRpcBound: { min: 0.5 } },
      };
    };
  } finally {
    await stack.close();
  }
  // The worker writes its counts as it stops (stack.close), so they cover the timed part and only it.
  if (finish) finish(JSON.parse(readFileSync(countsFile, 'utf8')));
  if (report) printReport(report);
}

const role = process.env.BENCH_PAYMENTS_ROLE;
if (role === 'chain') await chainRole();
else if (role === 'worker') await workerRole();
else {
  await driver();
  process.exit(0);
}
