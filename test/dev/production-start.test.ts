// `npm start` is the development launcher: under NODE_ENV or APP_ENV=production it starts nothing and
// says, in one line on stderr with exit 78, to run the Procfile's processes instead, naming them.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const procfile = readFileSync('Procfile', 'utf8');

describe('npm start in production', () => {
  it.each([{ NODE_ENV: 'production' }, { APP_ENV: 'production' }])(
    'under %o refuses in one line naming the Procfile processes, and starts nothing',
    async (settings) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'dev/start.ts'], {
        env: { ...process.env, NODE_ENV: '', APP_ENV: '', VITEST: '', ...settings },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(78);
      expect(out).toBe('');
      const lines = err.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('npm start is the development launcher');
      for (const [, name, file] of procfile.matchAll(/^(\w+): node --import tsx (\S+)$/gm)) {
        expect(lines[0]).toContain(name);
        expect(lines[0]).toContain(file);
      }
      expect(lines[0]).not.toContain('unexpected error');
    },
    40_000,
  );
});
