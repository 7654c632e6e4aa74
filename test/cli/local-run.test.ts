// `npm run keys` and `npm run admin` beside a running `npm start`, with none of their settings: they take
// its Postgres, its address and its operator token from DATA_DIR/running.json (shared/platform/local-run.ts,
// written as dev/start.ts writes it) and say so; with no npm start running they say what to set, in one
// line, never a stack trace; an empty list says it is empty.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { localRunFile, readLocalRun, writeLocalRun } from '../../shared/platform/local-run';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';

let app: TestApp;
let server: http.Server;
const dataDir = mkdtempSync(join(tmpdir(), 'px-local-run-'));
const idle = mkdtempSync(join(tmpdir(), 'px-local-none-'));

beforeAll(async () => {
  app = testApp();
  server = http.createServer(createApp(app.deps)).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const tokenFile = join(dataDir, 'operator-token');
  writeFileSync(tokenFile, `${process.env.OPERATOR_TOKEN}\n`, { mode: 0o600 });
  // What npm start writes once it runs: this process stands in for it (its pid is alive).
  writeLocalRun(dataDir, {
    pid: process.pid,
    databaseUrl: process.env.DATABASE_URL!,
    serviceUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    operatorTokenFile: tokenFile,
  });
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await app.close();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(idle, { recursive: true, force: true });
});

/** A CLI as `npm run` starts it, in a shell with none of its settings, beside the DATA_DIR given. */
function cli(
  file: string,
  args: string[],
  data: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { DATABASE_URL: _d, OPERATOR_TOKEN: _o, PX_URL: _p, BASE_URL: _b, ...inherited } = process.env;
  return new Promise((done) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', file, ...args],
      { env: { ...inherited, DATA_DIR: data, LOG_LEVEL: 'silent' }, timeout: 60_000 },
      (err, stdout, stderr) =>
        done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

describe('beside a running npm start', () => {
  it('npm run keys -- list reads its database, and says whose', async () => {
    const r = await cli('cli/keys.ts', ['list'], dataDir);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`keys: the database of the npm start running here (pid ${process.pid})`);
    // This file's database holds no keys until a process signs: the empty list says so.
    const listed = r.stdout.trim().split('\n').filter(Boolean);
    if (listed.length === 0) expect(r.stderr).toContain('keys: the trust root holds no keys yet');
    else for (const l of listed) expect(l).toMatch(/^[0-9a-f]{16} /);
  }, 70_000);

  it('npm run admin -- licenses list uses its address and operator token; an empty list says so', async () => {
    const r = await cli('cli/admin.ts', ['licenses', 'list', '--organization', 'Nobody Here'], dataDir);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`# the operator token of the npm start running here (pid ${process.pid})`);
    expect(r.stderr).toContain('# no licenses');
    expect(r.stdout).toBe('');
    // The token itself is never printed.
    expect(r.stdout + r.stderr).not.toContain(process.env.OPERATOR_TOKEN!);
  }, 70_000);
});

describe('with no npm start running', () => {
  it('keys says what to set, in one line and exit 2', async () => {
    const r = await cli('cli/keys.ts', ['list'], idle);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      `keys: DATABASE_URL is not set, and no npm start runs from this checkout (${localRunFile(idle)}): set DATABASE_URL to the database whose keys these are`,
    ]);
  }, 70_000);

  it('admin says what to set, and exits 2', async () => {
    const r = await cli('cli/admin.ts', ['licenses', 'list'], idle);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(
      'set OPERATOR_TOKEN (or pass --token): no npm start runs from this checkout to take its token from',
    );
  }, 70_000);

  it('a running.json whose process is gone is not taken for a running npm start', () => {
    const gone = mkdtempSync(join(tmpdir(), 'px-local-gone-'));
    try {
      writeLocalRun(gone, {
        pid: 2 ** 22 + 1,
        databaseUrl: 'postgres://x@127.0.0.1:1/x',
        serviceUrl: 'http://x',
      });
      expect(readLocalRun(gone)).toBeUndefined();
      writeFileSync(localRunFile(gone), '{not json');
      expect(readLocalRun(gone)).toBeUndefined();
    } finally {
      rmSync(gone, { recursive: true, force: true });
    }
  });

  it('keys names an unreachable database in one line, not a stack trace', async () => {
    const { DATABASE_URL: _d, ...inherited } = process.env;
    const r = await new Promise<{ code: number; stderr: string }>((done) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', 'cli/keys.ts', 'list'],
        {
          env: { ...inherited, DATABASE_URL: 'postgres://px@127.0.0.1:1/px', LOG_LEVEL: 'silent' },
          timeout: 60_000,
        },
        (err, _stdout, stderr) => done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      ),
    );
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      'keys: Postgres at 127.0.0.1:1 (DATABASE_URL) refused the connection. Fix: start Postgres there, or unset DATABASE_URL to use an embedded Postgres.',
    ]);
  }, 70_000);
});
