// Setup honesty, with real processes: in production `web` and `prover` refuse the committed development
// setup with one line saying how to build real artifacts, unless ALLOW_INSECURE_CIRCUITS=true (then they
// run and say so); artifacts that differ from the manifest's sha256 by one byte refuse to load anywhere.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { env } from '../../shared/platform/env';
import { artifactsDir } from '../../shared/zk/artifacts';
import { terminateCurves } from '../../shared/zk';
import { importProductionKeys, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { processArgs } from '../processes';

const kinds = ['web', 'prover'] as const;
const production = {
  NODE_ENV: 'production',
  SERVICE_SIGNING_KEY: '7'.repeat(64),
  LOG_SIGNING_KEY: '8'.repeat(64),
  BASE_URL: 'https://exchange.example',
  HOST: '127.0.0.1',
  PORT: '0',
  LOG_LEVEL: 'info',
  PROVER_BACKEND: 'snarkjs',
  PROVER_CONCURRENCY: '1',
  VITEST: '',
};

interface Run {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  exit: Promise<number | null>;
}

const children: ChildProcess[] = [];

function start(kind: (typeof kinds)[number], extra: Record<string, string>): Run {
  const child = spawn(process.execPath, processArgs(kind), {
    env: { ...process.env, ...production, ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const run: Run = {
    child,
    stdout: [],
    stderr: [],
    exit: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  };
  child.stdout!.on('data', (d: Buffer) => run.stdout.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => run.stderr.push(d.toString()));
  return run;
}

/** Waits for a JSON log line with this message; fails if the process ends first. */
async function logLine(run: Run, msg: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const line = run.stdout
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === msg);
    if (line) return line;
    if (run.child.exitCode !== null) throw new Error(`exited ${run.child.exitCode}: ${run.stderr.join('')}`);
    if (Date.now() > deadline) throw new Error(`no "${msg}" line: ${run.stdout.join('')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stop(run: Run): Promise<void> {
  if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGTERM');
  await run.exit;
}

let alteredDir: string;
let app: TestApp;

beforeAll(async () => {
  // A scratch copy of the artifacts with one byte of one zkey changed (its size unchanged).
  alteredDir = mkdtempSync(join(tmpdir(), 'px-altered-artifacts-'));
  cpSync(artifactsDir(), alteredDir, { recursive: true });
  const zkey = join(alteredDir, 'threshold.zkey');
  const bytes = readFileSync(zkey);
  bytes[bytes.length - 100] = bytes[bytes.length - 100]! ^ 0x01;
  writeFileSync(zkey, bytes);
  app = testApp();
  // The operator imported the deployment's keys: only the circuits are in question here.
  await importProductionKeys(app.deps.db, {
    service: production.SERVICE_SIGNING_KEY,
    log: production.LOG_SIGNING_KEY,
  });
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(alteredDir, { recursive: true, force: true });
  await app.close();
  await terminateCurves();
});

describe('the development setup in production', () => {
  it.each(kinds)(
    '%s exits non-zero with one line naming the insecure setup and how to build real artifacts',
    async (kind) => {
      const run = start(kind, {});
      expect(await run.exit).toBe(1);
      const lines = run.stderr.join('').trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('insecure development setup');
      expect(lines[0]).toContain('dev-INSECURE-pot14.ptau');
      expect(lines[0]).toContain('CIRCUIT_PTAU=');
      expect(lines[0]).toContain('npm run circuits:build');
      expect(lines[0]).toContain('ALLOW_INSECURE_CIRCUITS=true');
      expect(run.stdout.join('')).toBe('');
    },
    40_000,
  );

  it('with ALLOW_INSECURE_CIRCUITS=true the web process starts and readiness and status show the flag', async () => {
    const run = start('web', { ALLOW_INSECURE_CIRCUITS: 'true' });
    try {
      const listening = await logLine(run, 'web listening');
      expect(listening.insecureSetup).toBe(true);
      const warned = await logLine(
        run,
        'circuit keys come from the insecure development setup: policy proofs are forgeable',
      );
      expect(warned.allowInsecureCircuits).toBe(true);
      const base = `http://127.0.0.1:${listening.port as number}`;
      const ready = (await (await fetch(`${base}/api/v1/readiness`)).json()) as {
        checks: Record<string, Record<string, unknown>>;
      };
      expect(ready.checks.circuitArtifacts).toMatchObject({
        ok: true,
        insecureSetup: true,
        allowInsecureCircuits: true,
      });
      expect(ready.checks.circuitArtifacts!.detail).toContain('allowed by ALLOW_INSECURE_CIRCUITS');
      const status = (await (await fetch(`${base}/api/proof-workflows/blind-policy/status`)).json()) as {
        setup: Record<string, unknown>;
      };
      expect(status.setup).toMatchObject({ insecure: true, allowInsecureCircuits: true });
      const workflows = (await (await fetch(`${base}/api/proof-workflows/status`)).json()) as {
        circuitSetup: Record<string, unknown>;
      };
      expect(workflows.circuitSetup).toMatchObject({ insecure: true, allowInsecureCircuits: true });
    } finally {
      await stop(run);
    }
  }, 60_000);

  it('with ALLOW_INSECURE_CIRCUITS=true the prover starts and says the setup is insecure', async () => {
    const run = start('prover', { ALLOW_INSECURE_CIRCUITS: 'true' });
    try {
      const started = await logLine(run, 'prover started');
      expect(started.insecureSetup).toBe(true);
      const warned = await logLine(
        run,
        'circuit keys come from the insecure development setup: policy proofs are forgeable',
      );
      expect(warned.allowInsecureCircuits).toBe(true);
    } finally {
      await stop(run);
    }
  }, 60_000);
});

describe('APP_ENV=production is production', () => {
  it('the web refuses the development setup, and writes no development signing key', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'px-app-env-'));
    try {
      const run = start('web', { NODE_ENV: 'development', APP_ENV: 'production', DATA_DIR: dataDir });
      expect(await run.exit).toBe(1);
      expect(run.stderr.join('')).toContain('insecure development setup');
      // Allowed to run the development circuits, it still never makes itself a signing key.
      const allowed = start('web', {
        NODE_ENV: 'development',
        APP_ENV: 'production',
        ALLOW_INSECURE_CIRCUITS: 'true',
        SERVICE_SIGNING_KEY: '',
        DATA_DIR: dataDir,
      });
      try {
        const listening = await logLine(allowed, 'web listening').catch(() => undefined);
        if (listening) await fetch(`http://127.0.0.1:${listening.port as number}/api/health`);
      } finally {
        await stop(allowed);
      }
      expect(existsSync(join(dataDir, 'keys', 'service-ed25519.seed'))).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('artifacts checked by sha256, not size', () => {
  it.each(kinds)(
    '%s refuses to load a zkey altered by one byte',
    async (kind) => {
      const run = start(kind, {
        NODE_ENV: 'test',
        CIRCUIT_ARTIFACTS_DIR: alteredDir,
        ALLOW_INSECURE_CIRCUITS: 'true',
      });
      expect(await run.exit).toBe(1);
      const lines = run.stderr.join('').trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('threshold.zkey sha256 differs from the manifest');
      expect(lines[0]).toContain(alteredDir);
    },
    40_000,
  );

  it('readiness is not ok while an artifact differs from the manifest', async () => {
    const ok = await app.request.get('/api/v1/readiness');
    expect(ok.body.checks.circuitArtifacts.ok).toBe(true);
    const original = env.CIRCUIT_ARTIFACTS_DIR;
    env.CIRCUIT_ARTIFACTS_DIR = alteredDir;
    try {
      const res = await app.request.get('/api/v1/readiness').expect(503);
      expect(res.body.checks.circuitArtifacts).toMatchObject({
        ok: false,
        detail: 'threshold.zkey sha256 differs from the manifest',
      });
    } finally {
      env.CIRCUIT_ARTIFACTS_DIR = original;
    }
  });
});
