// bench:abuse — what a caller with no credential, or with the cheapest one (a TRIAL license claimed
// here), can make the web spend. It starts this app's `web` process on a fresh database and then:
//
// 1. Every route of the three route tables such a caller reaches, with the worst input within the
//    documented limits: path ids at their longest (the room below where a route takes a room), a JSON
//    body of junk just under the route's own body limit (routeBodyLimit: 16 KB for most, 256 bytes
//    where a route takes none, BODY_LIMIT_BYTES for a package to verify), and for the expensive ones their worst real input — a
//    governance package of 16 invented trustees at threshold 16 signed by nobody's key (to the verify
//    routes and the verify page), a room's key ceremony at its most (16 dealings, 256 complaints, 256
//    answers), headers just under Node's 16 KB, readiness with its chain probe. BENCH_SAMPLES (100)
//    sequential requests each; the web's event-loop CPU per request (its main thread's run time from
//    /proc/<pid>/schedstat, ns) at the median and p99 (nearest rank: of 100, the 99th) and the most,
//    against ≤ 20 ms at p99.
// 2. Honest traffic (a free createJob and a pricing read, alternately, from 127.0.0.1, sent on a clock)
//    at BENCH_LOW_RATE (10/s, one address) and BENCH_HIGH_RATE (100/s, ten addresses) for BENCH_SECONDS (4): alone (the baseline),
//    while 40 slow bodies trickle from 127.0.0.2 (60,000 bytes announced to the governance verifier,
//    which takes a body that long, one byte every 100 ms,
//    reconnecting when cut), and while 127.0.0.2 keeps 16 worst-case verifications in flight (the
//    forged package to the API and the page, the ceremony read). BENCH_ROUNDS (7) rounds, the phases
//    interleaved within each; p99 and 503s per phase, medians over rounds; p99 < 250 ms and no 503.
//
// The route table runs on a web with the per-address budgets raised (one address sends all of it); the
// honest traffic beside the attacks on a web with every default, the budgets included: the attacker
// spends its own network's, the honest callers theirs.
//   npm run bench:abuse
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { routeBodyLimit } from '../api/http/route';
import { buildTables } from '../api/tables';
import { newWallet, trialClaim } from '../cli/client/crypto';
import { createDb } from '../shared/platform/db/knex';
import { forgedPackage, fullCeremonyRows, trustees, TRUSTEES } from '../test/fixtures/trustee-room';
import { printReport } from './report';
import { benchStack, peakMiB, percentile, settled } from './stack';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const LOW_RATE = Number(process.env.BENCH_LOW_RATE ?? 10);
const HIGH_RATE = Number(process.env.BENCH_HIGH_RATE ?? 100);
const PORT = Number(process.env.BENCH_PORT ?? 3995);
const BODY_LIMIT = 64 * 1024; // BODY_LIMIT_BYTES's default, which the web below runs with
const CPU_TARGET_MS = 20;
const P99_TARGET_MS = 250;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The web's main thread (its event loop): run time so far, in ms (ns precision). */
function loopCpuMs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

interface Sent {
  method: string;
  path: string;
  headers?: http.OutgoingHttpHeaders;
  body?: string;
  from?: string;
}

const agents = new Map<string, http.Agent>();
function send(req: Sent): Promise<{ status: number; body: string }> {
  const from = req.from ?? '127.0.0.1';
  let agent = agents.get(from);
  if (!agent) agents.set(from, (agent = new http.Agent({ keepAlive: true, maxSockets: 64 })));
  return new Promise((resolve) => {
    const r = http.request(
      {
        agent,
        host: '127.0.0.1',
        port: PORT,
        localAddress: from,
        method: req.method,
        path: req.path,
        headers: {
          ...req.headers,
          ...(req.body === undefined ? {} : { 'content-length': Buffer.byteLength(req.body) }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    r.on('error', () => resolve({ status: 0, body: '' }));
    r.end(req.body);
  });
}

const json = (value: unknown) => ({
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(value),
});

/** Junk JSON just under `limit`, well-formed: many small objects, what costs a parser most. */
function junkBody(limit: number): string {
  const items: Array<Record<string, string | number>> = [];
  let size = 40;
  for (;;) {
    const item = { k: randomBytes(6).toString('hex'), v: size, s: 'x'.repeat(24) };
    const next = size + JSON.stringify(item).length + 1;
    if (next > limit - 64) break;
    size = next;
    items.push(item);
  }
  const body = JSON.stringify({ items });
  if (Buffer.byteLength(body) >= limit) throw new Error('junk body over the limit');
  return body;
}

type Attack = { kind: 'slowBodies' } | { kind: 'verifies'; worst: Sent[] };

/** Starts an attack from 127.0.0.2; the function it returns stops it. */
function attack(a: Attack): () => Promise<void> {
  let on = true;
  if (a.kind === 'slowBodies') {
    // 40 bodies of 60,000 bytes announced, one byte every 100 ms; a body cut is sent again.
    const sockets = new Set<net.Socket>();
    const open = () => {
      if (!on) return;
      const socket = net.connect({ host: '127.0.0.1', port: PORT, localAddress: '127.0.0.2' });
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.write(
        'POST /api/governance/verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{',
      );
      const drip = setInterval(() => socket.writable && socket.write(' '), 100);
      socket.once('close', () => {
        clearInterval(drip);
        sockets.delete(socket);
        setTimeout(open, 50);
      });
    };
    for (let i = 0; i < 40; i++) open();
    return async () => {
      on = false;
      for (const s of sockets) s.destroy();
      await sleep(200);
    };
  }
  // 16 worst-case verifications always in flight, in turn.
  const loops = Array.from({ length: 16 }, async (_, i) => {
    for (let n = i; on; n++) await send({ ...a.worst[n % a.worst.length]!, from: '127.0.0.2' });
  });
  return async () => {
    on = false;
    await Promise.all(loops);
  };
}

/** The attacker process: starts and stops what it is told, saying when it has. */
function attackerProcess() {
  let stop: (() => Promise<void>) | undefined;
  process.on('message', (m: Attack | 'stop') => {
    void (async () => {
      if (m === 'stop') {
        await stop?.();
        stop = undefined;
      } else stop = attack(m);
      process.send!('ok');
    })();
  });
  process.on('disconnect', () => process.exit(0));
}

async function main() {
  const stack = await benchStack();
  const big = String(1_000_000_000);
  const start = async (extra: Record<string, string>) => {
    const child = stack.spawn('api/main.ts', { PORT: String(PORT), HOST: '127.0.0.1', ...extra });
    for (let i = 0; (await send({ method: 'GET', path: '/api/health' })).status !== 200; i++) {
      if (i > 300) throw new Error('web did not start');
      await sleep(100);
    }
    return child;
  };
  // The routes' costs on a web whose per-address budgets are out of the way (one address sends them
  // all); the honest traffic beside the attacks on one with every default.
  let web = await start({
    RATE_LIMIT_IP_PER_MINUTE: big,
    RATE_LIMIT_KEY_PER_MINUTE: big,
    TRIAL_PER_ADDRESS_PER_DAY: '1000',
  });
  let pid = web.pid!;
  const db = createDb(stack.databaseUrl, { poolMax: 2 });
  let attackerStop: (() => void) | undefined;
  try {
    // The cheapest credential: a TRIAL license, claimed as anyone can.
    const wallet = newWallet();
    const challenge = await send({
      method: 'POST',
      path: '/api/v1/commercial/trial/challenge',
      ...json({ wallet: wallet.address }),
    });
    const prepared = await send({
      method: 'POST',
      path: '/api/v1/commercial/checkout/prepare',
      ...json({
        license: 'TRIAL',
        organization: 'Bench Org',
        email: 'bench@example.com',
        ...trialClaim(wallet, (JSON.parse(challenge.body) as { challenge: string }).challenge),
      }),
    });
    const license = (JSON.parse(prepared.body) as { checkout: { license: { token: string } } }).checkout
      .license.token;
    const auth = { authorization: `Bearer ${license}` };

    // A room at its most: 16 trustees at threshold 16 and a full ceremony, written as the routes take it.
    const room = await send({
      method: 'POST',
      path: '/api/governance/rooms',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Board' }),
    });
    const roomId = (JSON.parse(room.body) as { roomId: string }).roomId;
    const set = trustees(roomId);
    const named = await send({
      method: 'POST',
      path: `/api/governance/rooms/${roomId}/trustees`,
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ threshold: TRUSTEES, trustees: set.members.map(({ index: _i, ...m }) => m) }),
    });
    if (named.status !== 201) throw new Error(`trustees answered ${named.status}: ${named.body}`);
    await db('trustee_messages').insert(fullCeremonyRows(roomId, set));
    const forged = JSON.stringify({ package: forgedPackage() });
    const forgedForm = `package=${encodeURIComponent(JSON.stringify(forgedPackage()))}`;
    const junk = new Map<number, string>();
    const junkFor = (limit: number) => {
      if (!junk.has(limit)) junk.set(limit, junkBody(limit));
      return junk.get(limit)!;
    };

    // 1. Every reachable route, its worst input.
    const reachable = new Set([
      'public',
      'operator-optional',
      'agent-optional',
      'job',
      'operator-or-license',
    ]);
    const requests: Array<{ name: string; req: Sent }> = [];
    const tables = buildTables();
    for (const table of [tables.exchange, tables.commercial, tables.site]) {
      for (const r of table.list()) {
        const mode = r.auth ?? 'public';
        if (!reachable.has(mode) && !r.capability) continue;
        const path = r.path.replace(/\{(\w+)\}/g, (_m, name: string) =>
          name === 'roomId' ? roomId : `${name.replace(/Id$/, '')}_${'a'.repeat(58)}`,
        );
        const headers = mode === 'public' ? {} : auth;
        const verify = /\/verify$/.test(r.path) && r.method === 'post';
        const body =
          r.method === 'get' || r.method === 'delete'
            ? undefined
            : verify
              ? forged
              : junkFor(routeBodyLimit(r, BODY_LIMIT));
        requests.push({
          name: `${r.method.toUpperCase()} ${r.path}`,
          req: {
            method: r.method.toUpperCase(),
            path,
            headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
            body,
          },
        });
      }
    }
    requests.push(
      { name: 'GET / (page)', req: { method: 'GET', path: '/' } },
      { name: 'GET /docs (page)', req: { method: 'GET', path: '/docs' } },
      {
        name: 'POST /proof-workflows/verify/ (page, forged package)',
        req: {
          method: 'POST',
          path: '/proof-workflows/verify/',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: forgedForm,
        },
      },
      {
        name: 'GET /api/services (headers of 15 KB)',
        req: { method: 'GET', path: '/api/services', headers: { 'x-filler': 'f'.repeat(15_000) } },
      },
    );

    await settled([pid]);
    const rows: Array<{ name: string; statuses: string; medianMs: number; p99Ms: number; maxMs: number }> =
      [];
    for (const { name, req } of requests) {
      for (let i = 0; i < 3; i++) await send(req); // warm: what every later request shares
      const costs: number[] = [];
      const statuses = new Set<number>();
      for (let i = 0; i < SAMPLES; i++) {
        const before = loopCpuMs(pid);
        const res = await send(req);
        costs.push(loopCpuMs(pid) - before);
        statuses.add(res.status);
      }
      costs.sort((a, b) => a - b);
      rows.push({
        name,
        statuses: [...statuses].sort().join(','),
        medianMs: percentile(costs, 50),
        p99Ms: percentile(costs, 99),
        maxMs: costs.at(-1)!,
      });
    }
    rows.sort((a, b) => b.p99Ms - a.p99Ms);
    console.log(`bench:abuse — ${rows.length} routes, ${SAMPLES} requests each: web event-loop CPU (ms)`);
    console.log(
      `${'route'.padEnd(72)} ${'status'.padEnd(9)} ${'median'.padStart(7)} ${'p99'.padStart(7)} ${'max'.padStart(7)}`,
    );
    for (const r of rows)
      console.log(
        `${r.name.slice(0, 72).padEnd(72)} ${r.statuses.padEnd(9)} ${r.medianMs.toFixed(2).padStart(7)} ${r.p99Ms.toFixed(2).padStart(7)} ${r.maxMs.toFixed(2).padStart(7)}${r.p99Ms > CPU_TARGET_MS ? '  over' : ''}`,
      );

    // 2. Honest traffic beside the attacks, on a web with the defaults.
    for (const a of agents.values()) a.destroy();
    agents.clear();
    await new Promise<void>((r) => (web.once('exit', () => r()), web.kill('SIGTERM')));
    web = await start({});
    pid = web.pid!;
    await settled([pid]);
    let honestN = 0;
    const honest = (): Sent =>
      honestN++ % 2
        ? { method: 'GET', path: '/api/pricing' }
        : {
            method: 'POST',
            path: '/api/jobs',
            ...json({
              service: 'attest.timestamp',
              input: { digest: randomBytes(32).toString('hex') },
            }),
          };
    // Honest callers: one address at the low rate, ten (10/s each, within their budgets) at the high.
    const openLoop = async (rate: number) => {
      const from = (i: number) => `127.0.0.${11 + (rate > LOW_RATE ? i % 10 : 0)}`;
      const latencies: number[] = [];
      let shed = 0;
      let failed = 0;
      const pending: Promise<void>[] = [];
      const start = performance.now();
      const total = Math.round(rate * SECONDS);
      for (let i = 0; i < total; i++) {
        const due = start + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        const t = performance.now();
        pending.push(
          send({ ...honest(), from: from(i) }).then((res) => {
            latencies.push(performance.now() - t);
            if (res.status === 503) shed++;
            else if (res.status >= 400 || res.status === 0) failed++;
          }),
        );
      }
      await Promise.all(pending);
      latencies.sort((a, b) => a - b);
      return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), shed, failed };
    };

    const worst: Sent[] = [
      {
        method: 'POST',
        path: '/api/governance/verify',
        headers: { 'content-type': 'application/json' },
        body: forged,
      },
      {
        method: 'POST',
        path: '/proof-workflows/verify/',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: forgedForm,
      },
      { method: 'GET', path: `/api/governance/rooms/${roomId}/trustees` },
    ];
    // The attacker runs in a process of its own, as it would: its loops must not slow the honest
    // client's, which shares this process.
    const attacker = fork(fileURLToPath(import.meta.url), ['attacker'], { execArgv: ['--import', 'tsx'] });
    attackerStop = () => attacker.kill();
    const told = (message: Attack | 'stop') =>
      new Promise<void>((r) => (attacker.once('message', () => r()), attacker.send(message)));
    const run = (a: Attack) => async () => {
      await told(a);
      return () => told('stop');
    };
    type Phase = 'alone' | 'slowBodies' | 'verifies';
    const attacks: Record<Phase, () => Promise<() => Promise<void>>> = {
      alone: async () => async () => undefined,
      slowBodies: run({ kind: 'slowBodies' }),
      verifies: run({ kind: 'verifies', worst }),
    };
    const results: Record<string, Array<Awaited<ReturnType<typeof openLoop>>>> = {};
    for (let round = 0; round < ROUNDS; round++) {
      const phases = Object.keys(attacks) as Phase[];
      // Interleaved, in a different order each round.
      for (let k = 0; k < phases.length; k++) {
        const phase = phases[(k + round) % phases.length]!;
        for (const [label, rate] of [
          ['low', LOW_RATE],
          ['high', HIGH_RATE],
        ] as const) {
          const stop = await attacks[phase]();
          await sleep(500);
          const r = await openLoop(rate);
          await stop();
          (results[`${phase}.${label}`] ??= []).push(r);
        }
      }
    }
    const median = (xs: number[]) =>
      percentile(
        [...xs].sort((a, b) => a - b),
        50,
      );
    const figures: Record<string, number> = {
      routes: rows.length,
      worstRouteP99Ms: rows[0]!.p99Ms,
      worstRequestMs: Math.max(...rows.map((r) => r.maxMs)),
      routesOverTarget: rows.filter((r) => r.p99Ms > CPU_TARGET_MS).length,
    };
    const baseline: Record<string, number> = {};
    console.log(`\nhonest traffic (createJob and pricing, alternately): medians of ${ROUNDS} rounds`);
    for (const [key, runs] of Object.entries(results)) {
      const p99 = median(runs.map((r) => r.p99));
      const p50 = median(runs.map((r) => r.p50));
      const shed = runs.reduce((a, r) => a + r.shed, 0);
      const failed = runs.reduce((a, r) => a + r.failed, 0);
      console.log(
        `  ${key.padEnd(18)} p50 ${p50.toFixed(1).padStart(7)} ms  p99 ${p99.toFixed(1).padStart(7)} ms  503s ${shed}  other errors ${failed}`,
      );
      const target = key.startsWith('alone') ? baseline : figures;
      target[`${key}.p99Ms`] = p99;
      target[`${key}.shed`] = shed;
      if (!key.startsWith('alone'))
        figures[`${key}.vsAlone`] = p99 / median(results[`alone.${key.split('.')[1]}`]!.map((r) => r.p99));
    }
    figures.webPeakRssMiB = peakMiB(pid);
    const target: Record<string, { max: number }> = {
      worstRouteP99Ms: { max: CPU_TARGET_MS },
      routesOverTarget: { max: 0 },
    };
    for (const phase of ['slowBodies', 'verifies'])
      for (const label of ['low', 'high']) {
        target[`${phase}.${label}.p99Ms`] = { max: P99_TARGET_MS };
        target[`${phase}.${label}.shed`] = { max: 0 };
      }
    printReport({
      bench: 'abuse',
      settings: {
        samples: SAMPLES,
        rounds: ROUNDS,
        seconds: SECONDS,
        rates: [LOW_RATE, HIGH_RATE],
        cores: cpus().length,
        loadAvg1m: loadavg()[0],
      },
      figures,
      baseline,
      target,
    });
  } finally {
    attackerStop?.();
    for (const a of agents.values()) a.destroy();
    await db.destroy();
    await stack.close();
  }
}

if (process.argv[2] === 'attacker') attackerProcess();
else
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
