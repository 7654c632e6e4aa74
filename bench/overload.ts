// bench:overload — the web process at several times what it can serve: an open-loop load of createJob
// requests (sent on a clock, whether or not earlier ones were answered) at BENCH_OVERLOAD (5) times the
// capacity measured just before in the same run (closed loop, 32 in flight), for BENCH_SECONDS (5) and
// at most BENCH_MAX_REQUESTS (40,000), over loopback. It reports what the web accepted and shed (503
// `overloaded` with Retry-After), the accepted requests' latency, the health checks sent every 100 ms
// through it all, the web's resident memory sampled every 250 ms, and whether every accepted job is in
// the database (nothing accepted lost).
//   npm run bench:overload
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { printReport } from './report';
import type { BenchReport } from './report';
import { benchStack, cpuMs, httpClient, percentile, pool, settled } from './stack';

const FACTOR = Number(process.env.BENCH_OVERLOAD ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const MAX_REQUESTS = Number(process.env.BENCH_MAX_REQUESTS ?? 40_000);
const CAPACITY_REQUESTS = Number(process.env.BENCH_CAPACITY_REQUESTS ?? 3000);
const CONCURRENCY = 32;
const PORT = Number(process.env.BENCH_PORT ?? 3994);
const hex = (s: string) => createHash('sha256').update(s).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssMiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

async function main() {
  const stack = await benchStack();
  const base = `http://127.0.0.1:${PORT}`;
  let report: BenchReport | undefined;
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  try {
    const big = String(1_000_000_000);
    const web = stack.spawn('api/main.ts', {
      PORT: String(PORT),
      HOST: '127.0.0.1',
      RATE_LIMIT_IP_PER_MINUTE: big,
      RATE_LIMIT_KEY_PER_MINUTE: big,
    });
    for (let i = 0; ; i++) {
      if (
        await fetch(`${base}/api/health`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      if (i > 300) throw new Error('web did not start');
      await sleep(100);
    }
    await settled([web.pid!]);
    await db.connect();
    const jobs = async () => Number((await db.query('select count(*) n from jobs')).rows[0].n);

    let n = 0;
    const body = () =>
      JSON.stringify({ service: 'attest.timestamp', input: { digest: hex(`overload ${n++}`) } });
    const call = httpClient(base, CONCURRENCY);
    const create = async () => {
      const res = await call('POST', '/api/jobs', body());
      if (res.status !== 202) throw new Error(`createJob answered ${res.status}: ${res.body}`);
    };
    // Warm-up, then capacity: createJob, closed loop.
    await pool([...Array(500).keys()], CONCURRENCY, create);
    let t = performance.now();
    await pool([...Array(CAPACITY_REQUESTS).keys()], CONCURRENCY, create);
    const capacity = CAPACITY_REQUESTS / ((performance.now() - t) / 1000);
    const rate = capacity * FACTOR;
    const total = Math.min(MAX_REQUESTS, Math.round(rate * SECONDS));
    console.log(
      `bench:overload — capacity ${capacity.toFixed(0)} createJob/s (closed loop, ${CONCURRENCY} in flight); offering ${rate.toFixed(0)}/s (×${FACTOR}) for ${SECONDS} s, ${total} requests, on ${cpus().length} cores`,
    );

    // The open loop: requests go out on the clock, each on a pool of sockets large enough that the
    // client does not queue them (the server sees the load as offered), all kept open when idle (an
    // agent keeps 256 idle sockets by default and closes the rest).
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1024, maxFreeSockets: 1024 });
    // Every socket of the pool is opened before the clock starts: the bench measures how the web
    // handles requests, not a burst of new connections into a saturated process (a connection the
    // kernel completes while the listen queue is full waits for the handshake to be retried 1 s, then
    // 3 s later: sockets opened during the load made the seconds-long tail of earlier runs).
    await Promise.all(
      [...Array(1024).keys()].map(
        () =>
          new Promise<void>((resolve, reject) => {
            const req = http.get({ agent, host: '127.0.0.1', port: PORT, path: '/api/health' }, (res) => {
              res.resume();
              res.on('end', resolve);
            });
            req.on('error', reject);
          }),
      ),
    );
    const accepted: number[] = [];
    // The same requests' latency from the moment their bytes were handed to the kernel: what the web
    // took, without any wait in this driver (its event loop, or a socket not yet free).
    const acceptedFromWrite: number[] = [];
    const statuses = new Map<number, number>();
    let shedWithoutRetryAfter = 0;
    let failed = 0;
    let outstanding = 0;
    const send = () =>
      new Promise<void>((resolve) => {
        const payload = body();
        const start = performance.now();
        let written = NaN;
        outstanding++;
        const req = http.request(
          {
            agent,
            host: '127.0.0.1',
            port: PORT,
            method: 'POST',
            path: '/api/jobs',
            headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
          },
          (res) => {
            res.resume();
            res.on('end', () => {
              outstanding--;
              const status = res.statusCode ?? 0;
              statuses.set(status, (statuses.get(status) ?? 0) + 1);
              if (status === 202) {
                accepted.push(performance.now() - start);
                acceptedFromWrite.push(performance.now() - written);
              }
              if (status === 503 && res.headers['retry-after'] === undefined) shedWithoutRetryAfter++;
              resolve();
            });
          },
        );
        req.on('error', () => {
          outstanding--;
          failed++;
          resolve();
        });
        req.on('finish', () => (written = performance.now()));
        req.end(payload);
      });

    // Health, every 100 ms, on its own connection.
    const healthAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const health: Array<{ status: number; ms: number }> = [];
    let running = true;
    const healthLoop = (async () => {
      while (running) {
        const start = performance.now();
        const status = await new Promise<number>((resolve) => {
          const req = http.get(
            { agent: healthAgent, host: '127.0.0.1', port: PORT, path: '/api/health' },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode ?? 0));
            },
          );
          req.setTimeout(5000, () => req.destroy());
          req.on('error', () => resolve(0));
        });
        health.push({ status, ms: performance.now() - start });
        await sleep(100);
      }
    })();
    const memory: number[] = [rssMiB(web.pid!)];
    // Requests this driver holds for want of a free socket: the load reaches the web as offered only
    // while this stays at 0.
    let agentQueuedMax = 0;
    const memoryLoop = setInterval(() => {
      memory.push(rssMiB(web.pid!));
      const queued = Object.values(agent.requests).reduce((n, q) => n + (q?.length ?? 0), 0);
      agentQueuedMax = Math.max(agentQueuedMax, queued);
    }, 250);

    const jobsBefore = await jobs();
    const loadBefore = loadavg()[0]!;
    const cpuBefore = cpuMs(web.pid!);
    const sent: Promise<void>[] = [];
    // How late this driver sent a request after its time on the clock (its own event loop's lag).
    let sendLagMaxMs = 0;
    t = performance.now();
    while (sent.length < total) {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - t) / 1000) * rate));
      if (due > sent.length) sendLagMaxMs = Math.max(sendLagMaxMs, now - t - (sent.length / rate) * 1000);
      while (sent.length < due) sent.push(send());
      await new Promise((r) => setImmediate(r));
    }
    const sendingSeconds = (performance.now() - t) / 1000;
    // Every request gets its answer (or its error) within 30 s of the last one sent.
    await Promise.race([Promise.all(sent), sleep(30_000)]);
    const lastAnswer = (performance.now() - t) / 1000;
    running = false;
    await healthLoop;
    clearInterval(memoryLoop);
    await sleep(500);
    memory.push(rssMiB(web.pid!));
    const webCpu = cpuMs(web.pid!) - cpuBefore;
    const jobsWritten = (await jobs()) - jobsBefore;
    agent.destroy();
    healthAgent.destroy();

    accepted.sort((a, b) => a - b);
    acceptedFromWrite.sort((a, b) => a - b);
    const healthLat = health.map((h) => h.ms).sort((a, b) => a - b);
    const shed = statuses.get(503) ?? 0;
    const acceptedN = accepted.length;
    const unexpected = [...statuses].filter(([s]) => s !== 202 && s !== 503 && s !== 429);
    const lost = acceptedN - jobsWritten;
    const memStart = memory[0]!;
    const memMax = Math.max(...memory);
    const memEnd = memory[memory.length - 1]!;
    console.log(`| measure | value |`);
    console.log(`|---|---|`);
    const rows: Array<[string, string]> = [
      [
        'offered',
        `${total} requests in ${sendingSeconds.toFixed(1)} s (${(total / sendingSeconds).toFixed(0)}/s)`,
      ],
      ['accepted (202)', `${acceptedN} (${(acceptedN / lastAnswer).toFixed(0)}/s)`],
      [
        'shed (503 overloaded)',
        `${shed}${shedWithoutRetryAfter ? `, ${shedWithoutRetryAfter} without Retry-After` : ''}`,
      ],
      ['other answers', unexpected.map(([s, c]) => `${s}: ${c}`).join(', ') || 'none'],
      ['connection errors, unanswered', `${failed}, ${outstanding}`],
      [
        'accepted latency p50 / p99 / max ms',
        `${percentile(accepted, 50).toFixed(1)} / ${percentile(accepted, 99).toFixed(1)} / ${(accepted[acceptedN - 1] ?? NaN).toFixed(1)}`,
      ],
      [
        'accepted latency from the write p50 / p99 / max ms',
        `${percentile(acceptedFromWrite, 50).toFixed(1)} / ${percentile(acceptedFromWrite, 99).toFixed(1)} / ${(acceptedFromWrite[acceptedN - 1] ?? NaN).toFixed(1)}`,
      ],
      [
        'driver: most requests waiting for a socket, latest send after its time',
        `${agentQueuedMax}, ${sendLagMaxMs.toFixed(0)} ms`,
      ],
      [
        'health checks answered 200',
        `${health.filter((h) => h.status === 200).length} of ${health.length}; p99 ${percentile(healthLat, 99).toFixed(1)} ms`,
      ],
      ['accepted jobs in the database', `${jobsWritten} (lost: ${lost})`],
      [
        'web resident memory start / max / end MiB',
        `${memStart.toFixed(0)} / ${memMax.toFixed(0)} / ${memEnd.toFixed(0)}`,
      ],
      ['web CPU ms per request offered', (webCpu / total).toFixed(3)],
      ['load average (1 min) before / after', `${loadBefore.toFixed(2)} / ${loadavg()[0]!.toFixed(2)}`],
    ];
    for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);

    report = {
      bench: 'overload',
      settings: { factor: FACTOR, seconds: SECONDS, maxRequests: MAX_REQUESTS, route: 'createJob' },
      figures: {
        offered: total,
        offeredPerSecond: total / sendingSeconds,
        accepted: acceptedN,
        shed,
        shedWithoutRetryAfter,
        unexpectedAnswers: unexpected.reduce((a, [, c]) => a + c, 0),
        connectionErrors: failed,
        unanswered: outstanding,
        acceptedP50Ms: percentile(accepted, 50),
        acceptedP99Ms: percentile(accepted, 99),
        acceptedFromWriteP50Ms: percentile(acceptedFromWrite, 50),
        acceptedFromWriteP99Ms: percentile(acceptedFromWrite, 99),
        driverQueuedMax: agentQueuedMax,
        driverSendLagMaxMs: sendLagMaxMs,
        healthAnsweredFraction: health.filter((h) => h.status === 200).length / health.length,
        healthP99Ms: percentile(healthLat, 99),
        lost,
        memoryGrowthMiB: memEnd - memStart,
        memoryMaxMiB: memMax,
        loadAverage: loadavg()[0]!,
      },
      baseline: { capacityPerSecond: capacity },
      target: {
        acceptedP99Ms: { max: 250 },
        healthAnsweredFraction: { min: 1 },
        lost: { max: 0 },
        unanswered: { max: 0 },
        shedWithoutRetryAfter: { max: 0 },
        unexpectedAnswers: { max: 0 },
      },
    };
  } finally {
    await db.end().catch(() => undefined);
    await stack.close();
  }
  if (report) printReport(report);
}

await main();
