// Every command line of package.json's scripts answers --help with its usage on stdout and exit 0
// (a request for help is not a mistake), and nothing on stderr; and each client of the service says,
// in one line, that the service does not answer at the address it tried (never a bare "fetch failed").
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> })
  .scripts;
const clis = Object.entries(scripts)
  .filter(([, command]) => /^node --import tsx (cli|dev\/demo-pay)/.test(command))
  .map(([name, command]) => [name, command.replace(/^node --import tsx /, '')] as const);

describe('--help', () => {
  it('covers the command lines', () => {
    expect(clis.map(([name]) => name).sort()).toEqual(
      [
        'admin',
        'approve',
        'ballot',
        'ceremony',
        'demo:pay',
        'keys',
        'px',
        'receipt:verify',
        'trustee',
        'verify',
        'witness',
      ].sort(),
    );
  });

  it.each(clis)(
    'npm run %s -- --help prints its usage and exits 0',
    async (_name, file) => {
      const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', file, '--help'], {
        env: { ...process.env, DATABASE_URL: '', PX_URL: '', OPERATOR_TOKEN: '' },
        timeout: 60_000,
      });
      expect(stdout).toMatch(/^usage:/);
      expect(stderr).toBe('');
    },
    70_000,
  );

  it('px issuer --help too', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'cli/px.ts', 'issuer', '--help'], {
      timeout: 60_000,
    });
    expect(stdout).toMatch(/^usage:\n {2}npm run px -- issuer keys/);
  }, 70_000);
});

describe('a service that does not answer', () => {
  it.each([
    ['ballot', ['cli/ballot.ts', 'options', '--proposal', 'prop_x']],
    ['approve', ['cli/approve.ts', 'submit', '--approval', 'package.json']],
    ['trustee', ['cli/trustee.ts', 'status', '--room', 'room_x']],
    ['admin', ['cli/admin.ts', '--token', 't', 'licenses', 'list']],
  ] as const)(
    'npm run %s says so in one line, with where it tried, and exits 1',
    async (_name, args) => {
      const port = await new Promise<number>((resolve) => {
        const probe = createServer().listen(0, '127.0.0.1', () => {
          const { port } = probe.address() as AddressInfo;
          probe.close(() => resolve(port));
        });
      });
      const url = `http://127.0.0.1:${port}`;
      const failed = await run(process.execPath, ['--import', 'tsx', ...args, '--url', url], {
        timeout: 60_000,
      }).then(
        () => undefined,
        (err: { code?: number; stderr?: string }) => err,
      );
      expect(failed?.code).toBe(1);
      const lines = (failed?.stderr ?? '').trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(`^the service does not answer at (http://)?127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)$`),
      );
    },
    70_000,
  );
});
