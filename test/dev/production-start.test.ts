// `npm start` is the development launcher. Started under APP_ENV=production without a production's
// settings, its processes refuse (each names what is missing) and its last line says, beside the
// failure, that a production deployment runs the Procfile's processes, naming each and its file.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// Below the ephemeral range, where a port handed out is not taken meanwhile (npm start takes PORT and PORT+1).
import { freePorts } from '../ports';

const procfile = readFileSync('Procfile', 'utf8');

describe('npm start in production without its settings', () => {
  it('ends with one line that names the failure and the Procfile processes to run instead', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'px-prod-start-'));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, VITEST: '', APP_ENV: 'production' };
      for (const k of ['BASE_URL', 'SERVICE_SIGNING_KEY', 'LOG_SIGNING_KEY', 'DATABASE_URL', 'REDIS_URL'])
        delete env[k];
      const child = spawn(process.execPath, ['--import', 'tsx', 'dev/start.ts'], {
        env: { ...env, DATA_DIR: dataDir, PORT: String(await freePorts(2)) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(1);
      const last = out.trimEnd().split('\n').at(-1)!;
      expect(last).toMatch(/^\[start\] cannot start: /);
      expect(last).toContain('npm start is the development launcher');
      const processes = [...procfile.matchAll(/^(\w+): node --enable-source-maps (\S+)$/gm)];
      expect(processes.map((p) => p[1])).toEqual(['release', 'web', 'worker', 'prover']);
      expect(last).toContain('npm run build');
      for (const [, name, file] of processes) {
        expect(last).toContain(`${name} (${file}`);
      }
      expect(last).not.toContain('unexpected error');
      // What was missing is said by the processes themselves.
      expect(out).toContain('Refusing to start in production: SERVICE_SIGNING_KEY is not set');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
