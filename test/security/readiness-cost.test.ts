// Readiness and health are unauthenticated and pass the rate limiter by (a monitor behind a busy
// address must see the truth), so what they cost must not grow with how often they are asked: 200
// concurrent requests of either share one run of their probes (READINESS_CACHE_MS), counted where the
// probes land — a chain endpoint the test runs on loopback, the app's database queries, its Redis
// commands. Health says whether each dependency answers, never how much work waits in the queues.
import { EventEmitter } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { createInterface } from 'node:readline';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** A JSON-RPC endpoint on loopback serving Ethereum mainnet's chain id, counting what it is asked. */
const rpcCalls: string[] = [];
const node = http.createServer((req, res) => {
  let text = '';
  req.on('data', (c: Buffer) => (text += c.toString()));
  req.on('end', () => {
    const body = JSON.parse(text) as { id: number; method: string } | Array<{ id: number; method: string }>;
    const answer = (call: { id: number; method: string }) => {
      rpcCalls.push(call.method);
      const result =
        call.method === 'eth_chainId' ? '0x1' : call.method === 'eth_blockNumber' ? '0x10' : null;
      return { jsonrpc: '2.0', id: call.id, result };
    };
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(Array.isArray(body) ? body.map(answer) : answer(body)));
  });
});
await new Promise<void>((r) => node.listen(0, '127.0.0.1', r));
Object.assign(process.env, {
  EVM_RPC_URL: `http://127.0.0.1:${(node.address() as AddressInfo).port}`,
  TREASURY_EVM: '0x1111111111111111111111111111111111111111',
  CHAIN_RPC_RETRIES: '0',
  // The default, set here because the test suite runs without the cache (test/setup/file.ts).
  READINESS_CACHE_MS: '2000',
});

const { createApp } = await import('../../api/app');
const { testApp } = await import('../helpers');
const { env } = await import('../../shared/platform/env');
const { untagged, waitReady } = await import('../../shared/platform/redis');

/**
 * MONITOR on a plain socket, emitting `monitor` (time, args, source) for each command Redis reports.
 * ioredis's own monitor can lose its place when Redis's first lines arrive with the OK of MONITOR
 * itself (it then throws "Command queue state error" on a busy server); a line-by-line reader cannot.
 */
async function monitorRedis(url: string): Promise<EventEmitter & { disconnect(): void }> {
  const { hostname, port, username, password } = new URL(url);
  const socket = net.connect(Number(port || 6379), hostname);
  const events = Object.assign(new EventEmitter(), { disconnect: () => socket.destroy() });
  // Each command is answered +OK (AUTH first where the URL has a password), MONITOR's last; an error
  // reply ends the wait.
  const commands = [
    ...(password ? [['AUTH', ...[username, password].filter(Boolean).map(decodeURIComponent)]] : []),
    ['MONITOR'],
  ];
  let oks = commands.length;
  const started = new Promise<void>((resolve, reject) => {
    createInterface({ input: socket, crlfDelay: Infinity }).on('line', (line) => {
      if (line === '+OK' && --oks === 0) resolve();
      if (line.startsWith('-')) reject(new Error(`Redis refused the monitor: ${line}`));
      // +1712098529.327989 [0 127.0.0.1:62763] "scan" "0" "MATCH" "…"
      const m = /^\+(\S+) \[\d+ ([^\]]+)\] (.*)$/.exec(line);
      if (!m) return;
      const args = [...m[3]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((a) => a[1]!.replace(/\\(.)/g, '$1'));
      events.emit('monitor', m[1], args, m[2]);
    });
    socket.on('error', reject);
  });
  // As RESP arrays, so a password is sent as it is, spaces and all.
  for (const c of commands)
    socket.write(`*${c.length}\r\n${c.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
  await started;
  return events;
}

const app = testApp();
const server = http.createServer(createApp(app.deps));
const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
let port = 0;
let monitor: Awaited<ReturnType<typeof monitorRedis>>;
/** The commands the app's own Redis connection sent, and those naming this file's keys. */
const redisCommands: string[] = [];
const queries: string[] = [];

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  expect(await waitReady(app.deps.redis)).toBe(true);
  const info = String(await app.deps.redis.call('CLIENT', 'INFO'));
  const own = /addr=(\S+)/.exec(info)![1]!;
  const prefix = untagged(env.QUEUE_PREFIX);
  monitor = await monitorRedis(env.REDIS_URL!);
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === own || args.some((a) => a.includes(prefix))) redisCommands.push(args[0]!.toLowerCase());
  });
  app.deps.db.on('query', (q: { sql: string }) => queries.push(q.sql));
});
afterAll(async () => {
  agent.destroy();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  monitor?.disconnect();
  await app.close();
  await new Promise((r) => node.close(r));
});

const get = (path: string) =>
  new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      })
      .on('error', reject);
  });

/** Resolves once MONITOR has reported every command sent before it: it reports them in order. */
async function redisSettled() {
  const marker = `settled-${Math.random()}`;
  const seen = new Promise<void>((resolve) => {
    const onCommand = (_time: string, args: string[]) => {
      if (args[1] !== marker) return;
      monitor.off('monitor', onCommand);
      resolve();
    };
    monitor.on('monitor', onCommand);
  });
  const other = new Redis(env.REDIS_URL!);
  await other.echo(marker);
  other.disconnect();
  await seen;
}

/** What `n` concurrent requests of `path` cost: chain RPC calls, database queries, Redis commands. */
async function costOf(path: string, n: number) {
  await redisSettled();
  const [rpc, db, redis] = [rpcCalls.length, queries.length, redisCommands.length];
  const answers = await Promise.all(Array.from({ length: n }, () => get(path)));
  await redisSettled();
  return {
    answers,
    rpc: rpcCalls.length - rpc,
    db: queries.length - db,
    redis: redisCommands.length - redis,
  };
}

describe('readiness and health cost a bounded number of probes at any rate', () => {
  it('runs readiness’s checks once for 200 concurrent requests, the chain endpoint included', async () => {
    const { answers, rpc, db, redis } = await costOf('/api/v1/readiness', 200);
    expect(answers[0]!.body.checks).toMatchObject({
      chainAdapters: { ok: true },
      chainNetworks: { ok: true },
    });
    expect(answers.every((a) => a.status === 200 && a.body.ready === true)).toBe(true);
    // One run is the endpoint's head and its chain id, five queries (a database check, the migrations'
    // table) and 36 Redis commands (a PING and the counts of five queues); a second run at most,
    // should the burst outlast the cache. Without it: 400 calls to the chain endpoint.
    expect(rpc).toBeGreaterThan(0);
    expect(rpc).toBeLessThanOrEqual(4);
    expect(db).toBeLessThanOrEqual(10);
    expect(redis).toBeGreaterThan(0);
    expect(redis).toBeLessThanOrEqual(72);
    // Asked again at once, it answers from the run it has.
    const again = await costOf('/api/v1/readiness', 200);
    expect(again.answers.every((a) => a.status === 200)).toBe(true);
    expect(again.rpc).toBeLessThanOrEqual(2);
  });

  it('probes health’s dependencies once for 200 concurrent requests, and shows no queue counts', async () => {
    const { answers, rpc, db, redis } = await costOf('/api/health', 200);
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(a.body).toMatchObject({
        status: 'ok',
        checks: { db: { ok: true }, redis: { ok: true }, queues: { ok: true } },
      });
      // Whether the queues answer, never their waiting, active or failed counts.
      expect(a.body.checks).toEqual({
        db: { ok: true, latencyMs: expect.any(Number) },
        redis: { ok: true, latencyMs: expect.any(Number) },
        queues: { ok: true },
      });
    }
    // One run is a database check and 36 Redis commands; two at most.
    expect(rpc).toBe(0);
    expect(db).toBeLessThanOrEqual(2);
    expect(redis).toBeLessThanOrEqual(72);
  });
});
