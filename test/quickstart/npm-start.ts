// `npm start` in this checkout, as a doc's reader runs it, for the tests that then run the doc's commands
// against it: this test file's database and Redis prefix (inherited), a DATA_DIR of the test's own, a
// port that is not the default (the commands find it through PORT), and what it printed, to wait on.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { expect } from 'vitest';
import { freePorts } from '../ports';

export interface NpmStart {
  /** The environment it runs with: the doc's commands run with it too. */
  env: NodeJS.ProcessEnv;
  port: number;
  /** Everything it printed so far, stdout and stderr together. */
  out(): string;
  /** From the spawn to `running`. */
  startedInMs: number;
  /** Ctrl-C, as a reader stops it (the whole process group), then a kill after 20 s. */
  stop(): Promise<void>;
}

/**
 * Starts it and waits until it says it runs (or refuses the test). `drop`: settings of the test process
 * the doc's commands must not inherit; `env`: the test's own.
 */
export async function npmStart(
  dataDir: string,
  options: { drop?: readonly string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<NpmStart> {
  const port = await freePorts(2);
  const inherited = { ...process.env };
  for (const name of ['VITEST', ...(options.drop ?? [])]) delete inherited[name];
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    NODE_ENV: 'development',
    LOG_LEVEL: 'info',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    ...options.env,
  };
  const started = Date.now();
  const child = spawn('sh', ['-c', 'npm start'], { cwd: resolve('.'), env, detached: true });
  const exit = new Promise((r) => child.once('close', r));
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const ready = /\[start\] Ctrl-C stops everything|cannot start/;
  const deadline = Date.now() + 150_000;
  while (!ready.test(out)) {
    if (!running()) throw new Error(`npm start exited before it ran:\n${out}`);
    if (Date.now() > deadline) throw new Error(`npm start did not run within 150 s:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(out).not.toContain('cannot start');
  return {
    env,
    port,
    out: () => out,
    startedInMs: Date.now() - started,
    async stop() {
      if (!child.pid || !running()) return;
      process.kill(-child.pid, 'SIGINT');
      await Promise.race([exit, new Promise((r) => setTimeout(r, 20_000))]);
      if (running()) process.kill(-child.pid, 'SIGKILL');
    },
  };
}
