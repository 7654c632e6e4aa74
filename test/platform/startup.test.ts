// Production start-up: each process type (the real entry points, spawned as the Procfile runs them)
// refuses a missing or malformed key or setting it needs with exit 78 and one line per problem naming
// the fix, before it opens anything; with everything set, it runs.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseEnv } from '../../shared/platform/env';
import { productionSettingIssues } from '../../shared/platform/startup-checks';

const entries = {
  web: 'api/main.ts',
  worker: 'workers/main.ts',
  prover: 'workers/prover/main.ts',
  release: 'workers/release.ts',
} as const;

const SIGNING = '7'.repeat(64);
const LOG = '8'.repeat(64);
const production = {
  NODE_ENV: 'production',
  BASE_URL: 'https://exchange.example',
  HOST: '127.0.0.1',
  PORT: '0',
  LOG_LEVEL: 'info',
  VITEST: '',
  SERVICE_SIGNING_KEY: SIGNING,
  LOG_SIGNING_KEY: LOG,
  OPERATOR_TOKEN: 'op_production_token_0123456789',
  PROVER_BACKEND: 'snarkjs',
  PROVER_CONCURRENCY: '1',
};

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(kind: keyof typeof entries, extra: Record<string, string>, timeoutMs = 60_000): Promise<Exit> {
  const child = spawn(process.execPath, ['--import', 'tsx', entries[kind]], {
    env: { ...process.env, ...production, ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: string[] = [];
  const err: string[] = [];
  child.stdout.on('data', (d: Buffer) => out.push(d.toString()));
  child.stderr.on('data', (d: Buffer) => err.push(d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: out.join(''), stderr: err.join('') });
    }),
  );
}

const lines = (text: string) => text.trimEnd().split('\n');

describe('production start-up refusals, by the real entry points', () => {
  it('refuses each missing or malformed setting with exit 78 and one line each, never printing a value; runs with all set', async () => {
    const [web, worker, prover, release, complete] = await Promise.all([
      run('web', { SERVICE_SIGNING_KEY: '', LOG_SIGNING_KEY: '', OPERATOR_TOKEN: '' }),
      run('worker', {
        SERVICE_SIGNING_KEY: 'not-a-seed-at-all',
        SEALING_KEY: 'c2hvcnQ=',
        BALLOT_KEY_PREVIOUS: `${'a'.repeat(64)},secret-but-wrong`,
      }),
      run('prover', { LOG_SIGNING_KEY: 'abc123', OPERATOR_TOKEN: '' }),
      run('release', { SERVICE_SIGNING_KEY: '' }),
      // With every setting given, the same entry point runs.
      run('release', {}),
    ]);

    expect(web.code).toBe(78);
    expect(lines(web.stderr)).toEqual([
      expect.stringMatching(
        /^Refusing to start in production: SERVICE_SIGNING_KEY is not set; set it to a 32-byte ed25519 seed/,
      ),
      expect.stringMatching(
        /^Refusing to start in production: LOG_SIGNING_KEY is not set; set it to .* of its own/,
      ),
      expect.stringMatching(
        /^Refusing to start in production: OPERATOR_TOKEN is not set; .*503 operator_disabled.*openssl rand/,
      ),
    ]);
    // Refused before it listened, connected or wrote anything.
    expect(web.stdout).not.toContain('web listening');

    expect(worker.code).toBe(78);
    expect(lines(worker.stderr)).toEqual([
      'Refusing to start in production: SERVICE_SIGNING_KEY is malformed; set it to a 32-byte ed25519 seed as 64 hex characters or base64 (openssl rand -hex 32)',
      'Refusing to start in production: SEALING_KEY is malformed; set it to 32 bytes as 64 hex characters or base64 (openssl rand -hex 32)',
      expect.stringMatching(
        /^Refusing to start in production: BALLOT_KEY_PREVIOUS entry 2 is malformed; list earlier keys/,
      ),
    ]);
    expect(worker.stderr).not.toContain('not-a-seed-at-all');
    expect(worker.stderr).not.toContain('secret-but-wrong');
    expect(worker.stdout).not.toContain('worker started');

    // The prover needs no operator token; the log key, when given, must be a key.
    expect(prover.code).toBe(78);
    expect(lines(prover.stderr)).toEqual([
      expect.stringMatching(
        /^Refusing to start in production: LOG_SIGNING_KEY is malformed; set it to .*, not the signing key's$/,
      ),
    ]);

    expect(release.code).toBe(78);
    expect(lines(release.stderr)).toEqual([
      expect.stringMatching(/^Refusing to start in production: SERVICE_SIGNING_KEY is not set/),
    ]);
    expect(release.stdout).toBe('');

    expect(complete.stderr).toBe('');
    expect(complete.code).toBe(0);
    expect(complete.stdout).toBe('schema is up to date\n');
  }, 90_000);
});

describe('what each process type needs', () => {
  const settings = (extra: Record<string, string> = {}) =>
    parseEnv({
      ...production,
      VITEST: undefined,
      DATABASE_URL: 'postgres://px@db.example/px',
      REDIS_URL: 'redis://redis.example:6379',
      ...extra,
    });

  it('asks nothing outside production, and nothing more of a complete production setup', () => {
    for (const kind of Object.keys(entries) as Array<keyof typeof entries>) {
      expect(productionSettingIssues(settings(), kind)).toEqual([]);
      expect(productionSettingIssues(parseEnv({ NODE_ENV: 'development' }), kind)).toEqual([]);
    }
  });

  it('names the stores, and the operator token only for the web', () => {
    const bare = settings({ DATABASE_URL: '', REDIS_URL: '', OPERATOR_TOKEN: '' });
    expect(productionSettingIssues(bare, 'web').map((l) => l.split(' ')[0])).toEqual([
      'DATABASE_URL',
      'REDIS_URL',
      'OPERATOR_TOKEN',
    ]);
    expect(productionSettingIssues(bare, 'worker').map((l) => l.split(' ')[0])).toEqual([
      'DATABASE_URL',
      'REDIS_URL',
    ]);
    // release migrates and re-seals: Postgres only.
    expect(productionSettingIssues(bare, 'release').map((l) => l.split(' ')[0])).toEqual(['DATABASE_URL']);
    // A Redis Cluster is a Redis.
    expect(
      productionSettingIssues(
        settings({ REDIS_URL: '', REDIS_CLUSTER_NODES: 'r1.example:6379', QUEUE_PREFIX: '{px}' }),
        'worker',
      ),
    ).toEqual([]);
  });
});
