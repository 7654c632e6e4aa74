// Configuration: a wrong value stops start-up with a message that names the variable.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, hashTag, isProduction, parseEnv } from '../../shared/platform/env';
import { productionSettingIssues } from '../../shared/platform/startup-checks';

describe('configuration', () => {
  it('names every wrong variable', () => {
    expect(() => parseEnv({ PORT: 'eighty', REDIS_URL: 'localhost:6379' })).toThrow(ConfigError);
    try {
      parseEnv({ PORT: 'eighty', REDIS_URL: 'localhost:6379' });
    } catch (err) {
      expect((err as ConfigError).issues.map((i) => i.split(':')[0])).toEqual(['PORT', 'REDIS_URL']);
    }
  });

  it('counts APP_ENV=production as production, as NODE_ENV=production', () => {
    for (const production of [{ NODE_ENV: 'production' }, { APP_ENV: 'production' }]) {
      expect(isProduction(parseEnv({ ...production, BASE_URL: 'https://px.example' }))).toBe(true);
      // A missing BASE_URL is one of the production start-up refusals (test/platform/startup.test.ts).
      expect(productionSettingIssues(parseEnv(production), 'web')[0]).toMatch(/^BASE_URL is not set; /);
    }
    expect(isProduction(parseEnv({ APP_ENV: 'staging' }))).toBe(false);
  });

  it('has one production predicate: no code but env.ts reads NODE_ENV or APP_ENV', () => {
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== 'node_modules' && entry.name !== 'build') walk(path);
        } else if (/\.(ts|js|mjs)$/.test(entry.name) && path !== join('shared', 'platform', 'env.ts')) {
          if (/\b(NODE_ENV|APP_ENV)\b/.test(readFileSync(path, 'utf8'))) offenders.push(path);
        }
      }
    };
    for (const dir of ['api', 'workers', 'shared', 'dev', 'cli', 'scripts', 'circuits']) walk(dir);
    expect(offenders).toEqual([]);
  });

  it('treats empty variables as unset and applies defaults', () => {
    const env = parseEnv({ PORT: '', LOG_LEVEL: 'warn' });
    expect(env.PORT).toBe(3000);
    expect(env.LOG_LEVEL).toBe('warn');
  });

  it('stops a process at start with one line per wrong variable', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'api/main.ts'], {
      env: { ...process.env, VITEST: '', PORT: 'eighty', OPERATOR_TOKEN: 'short' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.status).toBe(78);
    expect(run.stderr).toContain('PORT: ');
    expect(run.stderr).toContain('OPERATOR_TOKEN: at least 16 characters');
    expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('stops a process at start on a chain setting only its line can parse', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'api/main.ts'], {
      env: { ...process.env, VITEST: '', TREASURY_BITCOIN_XPUB: 'xpub-that-is-not-one' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.status).toBe(78);
    expect(run.stderr.trim().split('\n').slice(1)).toEqual([
      expect.stringMatching(/^\s*TREASURY_BITCOIN_XPUB: /),
    ]);
  });

  describe('Redis Cluster', () => {
    const issues = (vars: Record<string, string>) => {
      try {
        parseEnv(vars);
        return [];
      } catch (err) {
        return (err as ConfigError).issues;
      }
    };

    it('reads seed nodes, with credentials and TLS from redis[s]:// entries', () => {
      const plain = parseEnv({ REDIS_CLUSTER_NODES: '127.0.0.1:7000, [::1]:7001', QUEUE_PREFIX: '{px}' });
      expect(plain.REDIS_CLUSTER_NODES).toEqual({
        nodes: [
          { host: '127.0.0.1', port: 7000 },
          { host: '::1', port: 7001 },
        ],
        tls: false,
      });
      const tls = parseEnv({
        REDIS_CLUSTER_NODES: 'rediss://app:s%40cret@a.example:6380,rediss://b.example:6380',
        QUEUE_PREFIX: 'prod{px}',
      });
      expect(tls.REDIS_CLUSTER_NODES).toEqual({
        nodes: [
          { host: 'a.example', port: 6380 },
          { host: 'b.example', port: 6380 },
        ],
        username: 'app',
        password: 's@cret',
        tls: true,
      });
    });

    it('refuses malformed nodes without echoing a password, mixed TLS, and REDIS_URL beside it', () => {
      const bad = issues({ REDIS_CLUSTER_NODES: 'redis://app:hunter2@h:99999', QUEUE_PREFIX: '{px}' });
      expect(bad).toHaveLength(1);
      expect(bad[0]).toMatch(/^REDIS_CLUSTER_NODES: /);
      expect(bad[0]).not.toContain('hunter2');
      expect(issues({ REDIS_CLUSTER_NODES: 'localhost', QUEUE_PREFIX: '{px}' })[0]).toMatch(
        /^REDIS_CLUSTER_NODES: 'localhost' is not host:port/,
      );
      expect(issues({ REDIS_CLUSTER_NODES: 'redis://h:1,rediss://h:2', QUEUE_PREFIX: '{px}' })[0]).toMatch(
        /all TLS or none/,
      );
      expect(issues({ REDIS_CLUSTER_NODES: 'h:1', REDIS_URL: 'redis://h:2', QUEUE_PREFIX: '{px}' })).toEqual([
        'REDIS_URL: set REDIS_URL or REDIS_CLUSTER_NODES, not both',
      ]);
    });

    it('requires a hash-tagged QUEUE_PREFIX on a cluster, and only there', () => {
      expect(hashTag('{px}')).toBe('px');
      expect(hashTag('prod{px}:a')).toBe('px');
      for (const untagged of ['px', '{}px', 'px{', 'p}x{']) expect(hashTag(untagged)).toBeNull();
      expect(issues({ REDIS_CLUSTER_NODES: 'h:1', QUEUE_PREFIX: 'px' })).toEqual([
        "QUEUE_PREFIX: must carry a hash tag on a Redis Cluster, e.g. {px}, so each queue's keys share one slot",
      ]);
      expect(issues({ REDIS_CLUSTER_NODES: 'h:1' })[0]).toMatch(/^QUEUE_PREFIX: /); // the default, px
      expect(issues({ QUEUE_PREFIX: 'px' })).toEqual([]);
    });

    it('stops a worker at start with one line when the prefix is not hash-tagged', () => {
      const run = spawnSync(process.execPath, ['--import', 'tsx', 'workers/main.ts'], {
        env: {
          ...process.env,
          VITEST: '',
          REDIS_URL: '',
          REDIS_CLUSTER_NODES: '127.0.0.1:1,127.0.0.1:2',
          QUEUE_PREFIX: 'px',
        },
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(run.status).toBe(78);
      const lines = run.stderr.trim().split('\n');
      expect(lines).toEqual([
        'Invalid configuration:',
        "  QUEUE_PREFIX: must carry a hash tag on a Redis Cluster, e.g. {px}, so each queue's keys share one slot",
      ]);
    });
  });
});
