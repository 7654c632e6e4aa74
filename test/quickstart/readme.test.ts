// The README's quick start, literally, on a fresh clone of this checkout's HEAD (commit first: the
// working tree is not what is cloned), with nothing configured but free ports: the embedded Postgres,
// Redis found on 127.0.0.1:6379, migrations, the local development chain, web + worker + prover. The banner must be the README's,
// the README's job commands must run unedited, a second copy on the same port must refuse without ever
// saying "running", and Ctrl-C (SIGINT to the process group, as a terminal sends it) must stop
// everything gracefully, once.
//
// `npm ci` is the one line not run here: this checkout's node_modules (installed from the same
// package-lock.json) and its built native prover are copied into the clone instead, which saves the
// minutes of a full install (and the registry); .ci/run runs `npm ci` itself on every CI run. `npm test`
// is not run either: it is the suite this test is part of.
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, freePorts } from '../ports';

const repo = resolve('.');
const readme = readFileSync(join(repo, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], body: m[2]! }));
const quickStart = blocks.find((b) => b.lang === 'sh')!;
const commands = quickStart.body
  .split('\n')
  .map((l) => l.replace(/#.*$/, '').trim())
  .filter(Boolean);

interface Run {
  child: ChildProcess;
  out: string;
  err: string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let clone: string;
/** The temporary folder the clone is in: the only thing removed afterwards. */
let cloneParent: string | undefined;
let env: NodeJS.ProcessEnv;
let port: number;
let pgPort: number;
let devnetPort: number;
let first: Run | undefined;

/** One line of the quick-start block, as a shell in the clone would run it. */
function shell(command: string): Run {
  const child = spawn('sh', ['-c', command], { cwd: clone, env, detached: true });
  const run = { child, out: '', err: '' } as Run;
  child.stdout!.on('data', (c: Buffer) => (run.out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (run.err += c.toString()));
  run.exit = new Promise((r) => child.once('close', (code, signal) => r({ code, signal })));
  return run;
}

async function until(run: Run, pattern: RegExp, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pattern.test(run.out + run.err)) {
    if (run.child.exitCode !== null || run.child.signalCode !== null)
      throw new Error(`exited before ${pattern}:\n${run.out}\n${run.err}`);
    if (Date.now() > deadline) throw new Error(`no ${pattern} after ${ms} ms:\n${run.out}\n${run.err}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  cloneParent = mkdtempSync(join(tmpdir(), 'px-quickstart-')); // 0700, like a clone in root's home
  clone = join(cloneParent, 'px');
  execFileSync('git', ['clone', '--quiet', repo, clone]);
  // Hard links when the clone is on the same file system (seconds, and nothing in `npm start` writes
  // into node_modules), a full copy otherwise.
  try {
    execFileSync('cp', ['-al', join(repo, 'node_modules'), join(clone, 'node_modules')]);
  } catch {
    rmSync(join(clone, 'node_modules'), { recursive: true, force: true });
    execFileSync('cp', ['-a', join(repo, 'node_modules'), join(clone, 'node_modules')]);
  }
  const build = join(repo, 'native-prover/build');
  if (existsSync(build)) cpSync(build, join(clone, 'native-prover/build'), { recursive: true });
  [port, pgPort, devnetPort] = [await freePorts(2), await freePort(), await freePort()];
  // A fresh shell: nothing from the test run's own configuration, only free ports (and loopback).
  env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: String(port),
    HOST: '127.0.0.1',
    EMBEDDED_PG_PORT: String(pgPort),
    DEVNET_PORT: String(devnetPort),
    QUEUE_PREFIX: `pxq_${port}`,
  };
}, 120_000);

afterAll(async () => {
  if (first?.child.pid && first.child.exitCode === null && first.child.signalCode === null)
    process.kill(-first.child.pid, 'SIGKILL');
  const note = /keeps its data in (\S+)\/pg/.exec(first?.out ?? '')?.[1];
  if (note?.startsWith('/var/tmp/proof-exchange/')) rmSync(note, { recursive: true, force: true });
  if (cloneParent) rmSync(cloneParent, { recursive: true, force: true });
  const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${env.QUEUE_PREFIX}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
  redis.disconnect();
}, 60_000);

describe('the README quick start on a fresh clone', () => {
  it('is npm ci, npm start, npm test', () => {
    expect(commands).toEqual(['npm ci', 'npm start', 'npm test']);
  });

  it('brings the service up and prints the README banner only once it answers', async () => {
    first = shell(commands[1]!);
    await until(first, /proof-exchange is running|cannot start/, 240_000);
    expect(first.err).not.toContain('cannot start');
    const health = await fetch(`http://127.0.0.1:${port}/api/health`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { status: string }).status).toBe('ok');

    await until(first, /\[start\] Ctrl-C stops everything/, 10_000);
    const printed = first.out
      .split('\n')
      .filter((l) => l.startsWith('[start]'))
      .join('\n');
    const shown = blocks.find(
      (b) => b.lang === 'text' && b.body.startsWith('[start] proof-exchange is running'),
    );
    expect(shown, 'the README shows the banner').toBeDefined();
    // Nothing is configured for payments, so the local development chain runs and the banner says so.
    const expected = shown!.body
      .trimEnd()
      .replaceAll('localhost:3000', `localhost:${port}`)
      .replaceAll('127.0.0.1:8545', `127.0.0.1:${devnetPort}`);
    expect(printed.slice(printed.indexOf('[start] proof-exchange is running'))).toBe(expected);
    if (process.getuid?.() === 0) {
      // A clone in a folder the postgres user cannot enter: data placed where it can, and said so.
      expect(first.out).toMatch(/keeps its data in \/var\/tmp\/proof-exchange\/data-[0-9a-f]{16}\/pg/);
    }
  }, 300_000);

  it("runs the README's job commands as they are", async () => {
    const tryIt = blocks.find((b) => b.lang === 'sh' && b.body.includes('attest.timestamp'));
    expect(tryIt, 'the README has a job example').toBeDefined();
    // Unedited: the service runs on a port other than the default, and the block finds it through PORT.
    expect(port).not.toBe(3000);
    const script = tryIt!.body;
    expect(script.match(/localhost:3000/g) ?? []).toEqual([]);
    const out = execFileSync('bash', ['--norc', '-euo', 'pipefail', '-c', script], {
      cwd: clone,
      env,
      encoding: 'utf8',
      timeout: 60_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(out).toMatch(/"id":"job_[0-9a-z]{26}"/);
    expect(out).toContain('event: succeeded');
  }, 90_000);

  it('a second copy on the same port exits non-zero without ever saying running', async () => {
    const second = shell(commands[1]!);
    const { code } = await second.exit;
    expect(code).not.toBe(0);
    expect(second.out + second.err).not.toContain('running');
    const said = second.err.split('\n').filter((l) => l.startsWith('[start]'));
    // Exactly the line the README shows for this case.
    const shown = blocks.find((b) => b.lang === 'text' && b.body.startsWith('[start] cannot start:'));
    expect(said).toEqual([shown!.body.trim().replaceAll('3000', String(port))]);
    expect(second.out + second.err).not.toMatch(/\n\s+at /);
    // The first copy is untouched.
    expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(200);
  }, 120_000);

  it('Ctrl-C stops every process gracefully, once (the development chain too), then Postgres', async () => {
    const run = first!;
    process.kill(-run.child.pid!, 'SIGINT');
    const { code, signal } = await run.exit;
    expect(code === 0 || signal === 'SIGINT', `exit ${code} ${signal}`).toBe(true);
    expect(run.out).toContain('[start] stopped');
    const lines = (run.out + run.err)
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; reason?: string });
    expect(lines.filter((l) => l.msg === 'shutting down').map((l) => l.reason)).toEqual([
      'SIGTERM',
      'SIGTERM',
      'SIGTERM',
      'SIGTERM',
    ]);
    expect(lines.some((l) => l.msg.startsWith('second signal'))).toBe(false);
    await expect(fetch(`http://127.0.0.1:${port}/api/health`)).rejects.toThrow();
    const client = new pg.Client({
      connectionString: `postgres://postgres:password@127.0.0.1:${pgPort}/postgres`,
      connectionTimeoutMillis: 2000,
    });
    await expect(client.connect()).rejects.toThrow();
  }, 60_000);
});
