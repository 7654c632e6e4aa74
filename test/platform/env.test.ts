// Configuration: a wrong value stops start-up with a message that names the variable.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseEnv } from '../../shared/env';

describe('configuration', () => {
  it('names every wrong variable', () => {
    expect(() => parseEnv({ PORT: 'eighty', REDIS_URL: 'localhost:6379' })).toThrow(ConfigError);
    try {
      parseEnv({ PORT: 'eighty', REDIS_URL: 'localhost:6379' });
    } catch (err) {
      expect((err as ConfigError).issues.map((i) => i.split(':')[0])).toEqual(['PORT', 'REDIS_URL']);
    }
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
});
