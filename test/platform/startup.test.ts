// Production start-up: each process type (the real entry points, spawned as the Procfile runs them)
// refuses a missing or malformed key or setting it needs with exit 78 and one line per problem naming
// the fix, all of them at once, before it opens anything; with everything set, each of the four runs
// (web, worker and prover until told to stop, release to its end) once its keys are imported: a key
// the trust root lacks is refused, and only `npm run keys -- import` puts it there.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createDb } from '../../shared/platform/db/knex';
import { parseEnv } from '../../shared/platform/env';
import { Queues } from '../../shared/platform/queues';
import type { QueueName } from '../../shared/platform/queues';
import { createRedis } from '../../shared/platform/redis';
import {
  developmentSwitches,
  developmentSwitchIssues,
  productionSettingIssues,
} from '../../shared/platform/startup-checks';
import { processArgs } from '../processes';

// Each process type as the Procfile runs it (test/processes.ts).
const entries = {
  web: processArgs('web'),
  worker: processArgs('worker'),
  prover: processArgs('prover'),
  release: processArgs('release'),
};

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
  METRICS_TOKEN: 'metrics_production_token_0123',
  PROVER_BACKEND: 'snarkjs',
  PROVER_CONCURRENCY: '1',
};

interface Exit {
  /** The exit status, or the signal that ended the process. */
  code: number | string | null;
  stdout: string;
  stderr: string;
}

/**
 * Spawns an entry point with the production settings and `extra`; when `until` is given, sends SIGTERM
 * once a stdout line's message is `until` (first calling `whileUp` with that line), as an operator's
 * supervisor stops a process that runs.
 */
function run(
  kind: keyof typeof entries,
  extra: Record<string, string>,
  options: { until?: string; whileUp?: (line: { port?: number }) => Promise<void>; timeoutMs?: number } = {},
): Promise<Exit & { up: boolean }> {
  const child = spawn(process.execPath, entries[kind], {
    env: { ...process.env, ...production, ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: string[] = [];
  const err: string[] = [];
  let up = false;
  let pending = '';
  child.stdout.on('data', (d: Buffer) => {
    out.push(d.toString());
    if (!options.until || up) return;
    pending += d.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const text of lines) {
      let line: { msg?: string; port?: number };
      try {
        line = JSON.parse(text) as { msg?: string; port?: number };
      } catch {
        continue;
      }
      if (line.msg !== options.until) continue;
      up = true;
      void (options.whileUp?.(line) ?? Promise.resolve())
        .catch((e: unknown) => err.push(`check while up failed: ${(e as Error).message}\n`))
        .finally(() => child.kill('SIGTERM'));
      return;
    }
  });
  child.stderr.on('data', (d: Buffer) => err.push(d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 100_000);
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, up, stdout: out.join(''), stderr: err.join('') });
    }),
  );
}

const lines = (text: string) => text.trimEnd().split('\n');
const db = createDb(undefined, { poolMax: 1 });
afterAll(() => db.destroy());

describe('production start-up refusals, by the real entry points', () => {
  it('refuses each missing or malformed setting with exit 78 and one line each, never printing a value', async () => {
    const [web, worker, prover, release] = await Promise.all([
      run('web', { SERVICE_SIGNING_KEY: '', LOG_SIGNING_KEY: '', OPERATOR_TOKEN: '' }),
      run('worker', {
        SERVICE_SIGNING_KEY: 'not-a-seed-at-all',
        SEALING_KEY: 'c2hvcnQ=',
        BALLOT_KEY_PREVIOUS: `${'a'.repeat(64)},secret-but-wrong`,
      }),
      run('prover', {
        LOG_SIGNING_KEY: 'abc123',
        OPERATOR_TOKEN: '',
        METRICS_TOKEN: '',
        PROVER_METRICS_PORT: '9465',
      }),
      // A product line's own setting refused beside the platform's, in the same refusal.
      run('release', { SERVICE_SIGNING_KEY: '', TREASURY_BITCOIN_XPUB: 'xpub-that-is-not-one' }),
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

    // The prover needs no operator token; the log key, when given, must be a key; a metrics port, a token.
    expect(prover.code).toBe(78);
    expect(lines(prover.stderr)).toEqual([
      expect.stringMatching(
        /^Refusing to start in production: LOG_SIGNING_KEY is malformed; set it to .*, not the signing key's$/,
      ),
      expect.stringMatching(
        /^Refusing to start in production: METRICS_TOKEN is not set while PROVER_METRICS_PORT is; .*METRICS_PUBLIC=true/,
      ),
    ]);

    expect(release.code).toBe(78);
    expect(lines(release.stderr)).toEqual([
      expect.stringMatching(/^Refusing to start in production: SERVICE_SIGNING_KEY is not set/),
      expect.stringMatching(/^Refusing to start in production: TREASURY_BITCOIN_XPUB: /),
    ]);
    expect(release.stdout).toBe('');
  }, 90_000);

  it('names every missing setting in one refusal, the public address among them, for each process type', async () => {
    const nothing = {
      BASE_URL: '',
      DATABASE_URL: '',
      REDIS_URL: '',
      SERVICE_SIGNING_KEY: '',
      LOG_SIGNING_KEY: '',
      OPERATOR_TOKEN: '',
    };
    const [web, worker, prover, release] = await Promise.all([
      run('web', nothing),
      run('worker', nothing),
      run('prover', nothing),
      run('release', nothing),
    ]);
    const named = (e: Exit) =>
      lines(e.stderr).map((l) => /^Refusing to start in production: (\w+) is not set; /.exec(l)?.[1] ?? l);
    expect(web.code).toBe(78);
    expect(named(web)).toEqual([
      'BASE_URL',
      'DATABASE_URL',
      'REDIS_URL',
      'SERVICE_SIGNING_KEY',
      'LOG_SIGNING_KEY',
      'OPERATOR_TOKEN',
    ]);
    expect(web.stderr).toMatch(/BASE_URL is not set; set it to the service's public https:\/\/ address/);
    expect(worker.code).toBe(78);
    expect(named(worker)).toEqual([
      'BASE_URL',
      'DATABASE_URL',
      'REDIS_URL',
      'SERVICE_SIGNING_KEY',
      'LOG_SIGNING_KEY',
    ]);
    expect(prover.code).toBe(78);
    expect(named(prover)).toEqual(['BASE_URL', 'DATABASE_URL', 'REDIS_URL', 'SERVICE_SIGNING_KEY']);
    expect(release.code).toBe(78);
    expect(named(release)).toEqual(['BASE_URL', 'DATABASE_URL', 'SERVICE_SIGNING_KEY']);
    for (const e of [web, worker, prover, release]) expect(e.stdout).toBe('');
  }, 90_000);
});

describe('development and mock switches in production', () => {
  // Each switch as a deployment copied from a development .env would set it.
  const refused = {
    PAYMENTS_PROVIDER_MOCK: 'true',
    EVM_DEVNET: 'true',
    DEVNET: 'on',
    RATE_LIMIT_ENABLED: 'false',
  };

  it('refuses each in the web and the worker with exit 78, one line naming each, before anything starts', async () => {
    const [web, worker] = await Promise.all([
      run('web', { ...refused, EVM_RPC_URL: 'http://127.0.0.1:8545' }),
      run('worker', { ...refused, EVM_RPC_URL: 'http://127.0.0.1:8545' }),
    ]);
    for (const [kind, e] of Object.entries({ web, worker })) {
      expect(e.code, `${kind}: ${e.stderr}`).toBe(78);
      expect(lines(e.stderr), kind).toEqual([
        expect.stringMatching(
          /^Refusing to start in production: PAYMENTS_PROVIDER_MOCK=true is a development switch: .*\[MOCK\].*unset it/,
        ),
        expect.stringMatching(
          /^Refusing to start in production: EVM_DEVNET=true is a development switch: .*EVM_RPC_URL/,
        ),
        expect.stringMatching(
          /^Refusing to start in production: DEVNET=on is a development switch: .*unset DEVNET/,
        ),
        expect.stringMatching(
          /^Refusing to start in production: RATE_LIMIT_ENABLED=false is a development switch: /,
        ),
      ]);
      // Refused before it listened, connected or took work: no [MOCK] challenge was ever served.
      expect(e.stdout, kind).toBe('');
    }
  }, 90_000);

  it('lists every switch once; each refused one alone is refused, each override is taken', () => {
    const base = {
      ...production,
      VITEST: undefined,
      DATABASE_URL: 'postgres://px@db.example/px',
      REDIS_URL: 'redis://redis.example:6379',
    };
    const one: Record<string, Record<string, string>> = {
      'PAYMENTS_PROVIDER_MOCK=true': { PAYMENTS_PROVIDER_MOCK: 'true' },
      'EVM_DEVNET=true': { EVM_DEVNET: 'true' },
      'DEVNET=on': { DEVNET: 'on' },
      'RATE_LIMIT_ENABLED=false': { RATE_LIMIT_ENABLED: 'false' },
      'ALLOW_INSECURE_CIRCUITS=true': { ALLOW_INSECURE_CIRCUITS: 'true' },
      'ALLOW_DEVELOPMENT_SETTLEMENTS=true': { ALLOW_DEVELOPMENT_SETTLEMENTS: 'true' },
      'LOGISTICS_ALLOW_PRIVATE_TARGETS=true': { LOGISTICS_ALLOW_PRIVATE_TARGETS: 'true' },
      'METRICS_PUBLIC=true': { METRICS_PUBLIC: 'true' },
    };
    expect(developmentSwitches.map((s) => s.setting).sort()).toEqual(Object.keys(one).sort());
    for (const s of developmentSwitches) {
      const e = parseEnv({ ...base, ...one[s.setting] });
      expect(s.set(e), s.setting).toBe(true);
      const issues = developmentSwitchIssues(e);
      expect(issues, s.setting).toEqual(
        s.production === 'refused' ? [expect.stringContaining(s.setting)] : [],
      );
      expect(productionSettingIssues(e, 'web'), s.setting).toEqual(issues);
      // Outside production every switch is the developer's to set.
      expect(developmentSwitchIssues(parseEnv({ ...one[s.setting] })), s.setting).toEqual([]);
    }
  });
});

describe('a complete production setup', () => {
  it('release, as built, migrates an empty database: every migration loads from its build in dist/', async () => {
    const empty = `${new URL(process.env.DATABASE_URL!).pathname.slice(1)}_empty`;
    const url = Object.assign(new URL(process.env.DATABASE_URL!), { pathname: `/${empty}` }).toString();
    await db.raw(`create database "${empty}"`);
    try {
      const migrations = readdirSync('migrations').filter((f) => /^\d{14}_[\w-]+\.ts$/.test(f));
      const release = await run('release', { ALLOW_INSECURE_CIRCUITS: 'true', DATABASE_URL: url });
      expect(release.stderr).toBe('');
      expect(release.code).toBe(0);
      expect(release.stdout).toMatch(new RegExp(`^applied ${migrations.length} migration\\(s\\): `));
      const again = await run('release', { ALLOW_INSECURE_CIRCUITS: 'true', DATABASE_URL: url });
      expect(again.stdout).toBe('schema is up to date\n');
    } finally {
      await db.raw(`drop database if exists "${empty}" with (force)`);
    }
  }, 60_000);

  it('starts every process type: release migrates, then web serves, worker and prover take work, each stopping cleanly', async () => {
    // This checkout's circuit keys come from the development setup: the explicit way past that refusal.
    const complete = { ALLOW_INSECURE_CIRCUITS: 'true' };
    const release = await run('release', complete);
    expect(release.stderr).toBe('');
    expect(release.code).toBe(0);
    expect(release.stdout).toBe('schema is up to date\n');

    // Its keys are not in the trust root yet: no process makes them trusted by starting with them.
    const trust = () => db('trust_keys').orderBy('key_id');
    const before = await trust();
    const refused = await Promise.all((['web', 'worker', 'prover'] as const).map((k) => run(k, complete)));
    const commands = new Set<string>();
    for (const [i, e] of refused.entries()) {
      expect(e.code, `${i}: ${e.stderr}`).toBe(78);
      expect(lines(e.stderr)).toEqual([
        expect.stringMatching(
          /^Refusing to start in production: SERVICE_SIGNING_KEY is key [0-9a-f]{16}, which is not in the trust root; .*run `npm run keys -- import \S+ --from now --roles attestation,license,package,receipt` with this deployment's DATABASE_URL/,
        ),
        expect.stringMatching(
          /^Refusing to start in production: LOG_SIGNING_KEY is key [0-9a-f]{16}, which is not in the trust root; .*run `npm run keys -- import \S+ --from now --roles log`/,
        ),
      ]);
      expect(e.stdout).not.toMatch(/listening|started/);
      for (const l of lines(e.stderr)) commands.add(/`npm run keys -- (.*?)`/.exec(l)![1]!);
    }
    expect(await trust()).toEqual(before);
    // The operator runs the commands it printed: one for each key, whichever process printed it.
    expect(commands.size).toBe(2);
    for (const command of commands) {
      const imported = spawnSync(
        process.execPath,
        ['--import', 'tsx', 'cli/keys.ts', ...command.split(' ')],
        {
          env: { ...process.env, ...production, ...complete },
          encoding: 'utf8',
          timeout: 30_000,
        },
      );
      expect(imported.status, imported.stderr).toBe(0);
      expect(imported.stdout).toMatch(/^imported: [0-9a-f]{16} /);
    }
    expect((await trust()).map((r: { roles: string[] }) => r.roles.join(','))).toEqual(
      expect.arrayContaining(['attestation,license,package,receipt', 'log']),
    );

    const answers: Record<string, number> = {};
    const verifiers: Record<string, string> = {};
    // Which of its queues BullMQ sees a consumer on, once the process says it started.
    const consumers: Record<string, string[]> = {};
    const queues = new Queues(createRedis('api'));
    const consumersOf = async (names: QueueName[]) => {
      const taken: string[] = [];
      for (const name of names) if ((await queues.get(name).getWorkersCount()) > 0) taken.push(name);
      return taken;
    };
    const [web, worker, prover] = await Promise.all([
      run('web', complete, {
        until: 'web listening',
        // It answers what answered 500 internal_error without its keys, and the operator routes.
        whileUp: async ({ port }) => {
          const base = `http://127.0.0.1:${port}`;
          for (const path of ['/api/health', '/api/services', '/api/v1/admin/licenses'])
            answers[path] = (
              await fetch(`${base}${path}`, {
                headers: { authorization: `Bearer ${production.OPERATOR_TOKEN}` },
              })
            ).status;
          answers['/metrics'] = (
            await fetch(`${base}/metrics`, {
              headers: { authorization: `Bearer ${production.METRICS_TOKEN}` },
            })
          ).status;
          // The build loads the native verifier by its file: the package's TypeScript entry would not load.
          verifiers.web = (
            (await (await fetch(`${base}/api/proof-workflows/blind-policy/status`)).json()) as {
              verifier: string;
            }
          ).verifier;
        },
      }),
      run('worker', complete, {
        until: 'worker started',
        whileUp: async () => {
          consumers.worker = await consumersOf(['jobs', 'payments', 'deliveries', 'checkouts']);
        },
      }),
      run('prover', complete, {
        until: 'prover started',
        whileUp: async () => {
          consumers.prover = await consumersOf(['proofs']);
        },
      }),
    ]);
    for (const [kind, e] of Object.entries({ web, worker, prover })) {
      expect(e.up, `${kind} started: ${e.stderr}${e.stdout.slice(-2000)}`).toBe(true);
      // The documented override it runs with is said at start.
      expect(e.stdout, kind).toMatch(/running in production with ALLOW_INSECURE_CIRCUITS=true/);
      expect(e.stderr, kind).toBe('');
      expect(e.code, `${kind} exit: ${e.stdout.slice(-1500)}`).toBe(0);
      // Nothing at error level or above on the way up or down.
      const levels = lines(e.stdout).map((l) => (JSON.parse(l) as { level: number }).level);
      expect(Math.max(...levels), kind).toBeLessThan(50);
    }
    await queues.close();
    queues.connection.disconnect();
    const started = lines(prover.stdout)
      .map((l) => JSON.parse(l) as { msg: string; verifier?: string })
      .find((l) => l.msg === 'prover started');
    expect({ ...verifiers, prover: started?.verifier }).toEqual({ web: 'native', prover: 'native' });
    expect(consumers).toEqual({
      worker: ['jobs', 'payments', 'deliveries', 'checkouts'],
      prover: ['proofs'],
    });
    expect(answers).toEqual({
      '/api/health': 200,
      '/api/services': 200,
      '/api/v1/admin/licenses': 200,
      '/metrics': 200,
    });
  }, 150_000);
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
