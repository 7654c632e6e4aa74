// The supervisor behind `npm start`, with the real process types: a process that cannot start says why
// in one line (over IPC) and the start is refused; a stop is one SIGTERM per process, never a second
// signal; a process whose supervisor vanished stops itself. The whole launcher, from a fresh clone, is
// in test/quickstart/.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StartupFailure } from '../../shared/platform/failures';
import { Supervisor } from '../../dev/stack/supervisor';
import type { ProcessSpec } from '../../dev/stack/supervisor';
import { isSupervisorMessage } from '../../shared/platform/lifecycle';

const dir = mkdtempSync(join(tmpdir(), 'px-launcher-'));
let taken: Server;
let takenPort: number;

beforeAll(async () => {
  taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  takenPort = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((r) => taken.close(r));
  rmSync(dir, { recursive: true, force: true });
});

function processType(name: string, entry: string, env: Record<string, string>): ProcessSpec {
  return {
    name,
    command: process.execPath,
    args: ['--import', 'tsx', entry],
    env: { ...process.env, LOG_LEVEL: 'info', HOST: '127.0.0.1', ...env },
    logFile: join(dir, `${name}.log`),
    ready: 'ipc',
    readyTimeoutMs: 60_000,
  };
}

const logLines = (name: string) =>
  readFileSync(join(dir, `${name}.log`), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { msg: string; reason?: string; signal?: string; fix?: string });

describe('the supervisor', () => {
  it('refuses to start when web cannot listen, with what failed and how to fix it', async () => {
    const supervisor = new Supervisor();
    const started = supervisor.start([processType('web', 'api/main.ts', { PORT: String(takenPort) })]);
    const failure = await started.then(
      () => undefined,
      (err: unknown) => err,
    );
    await supervisor.stop();
    expect(failure).toBeInstanceOf(StartupFailure);
    expect((failure as StartupFailure).what).toBe(`web: port ${takenPort} is already in use`);
    expect((failure as StartupFailure).fix).toContain('choose another port with PORT');
    // Its own log says the same in one line, no stack trace.
    const fatal = logLines('web').filter((l) => l.msg.includes('could not start'));
    expect(fatal).toHaveLength(1);
    expect(readFileSync(join(dir, 'web.log'), 'utf8')).not.toMatch(/\n\s+at /);
  });

  it('stops a ready worker with exactly one SIGTERM, gracefully', async () => {
    const supervisor = new Supervisor();
    const exits: string[] = [];
    supervisor.onUnexpectedExit((name) => exits.push(name));
    await supervisor.start([processType('worker', 'workers/main.ts', { WORKER_METRICS_PORT: '0' })]);
    await supervisor.stop();
    const lines = logLines('worker');
    expect(lines.map((l) => l.msg)).toContain('worker started');
    expect(lines.filter((l) => l.msg === 'shutting down').map((l) => l.reason)).toEqual(['SIGTERM']);
    // Its last line says it stopped, why, and how long stopping took.
    expect(lines.at(-1)).toMatchObject({ msg: 'stopped', reason: 'SIGTERM', timedOut: false });
    expect(lines.some((l) => l.msg.startsWith('second signal'))).toBe(false);
    expect(exits).toEqual([]); // a stop that was asked for is not reported as a crash
  });

  it('a worker whose supervisor is gone stops itself', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'workers/main.ts'], {
      env: { ...process.env, LOG_LEVEL: 'info', WORKER_METRICS_PORT: '0', HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    await new Promise<void>((resolve, reject) => {
      child.on('message', (m) => (isSupervisorMessage(m) && m.px === 'ready' ? resolve() : undefined));
      child.once('exit', () => reject(new Error(`worker exited before ready: ${out}`)));
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.disconnect();
    expect(await exited).toBe(0);
    expect(out).toContain('"reason":"supervisor gone"');
  });
});
