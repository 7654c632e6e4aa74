// What npm start says when a store cannot start, from the words the server itself wrote, and where the
// embedded Postgres is placed when root runs it from a folder its `postgres` user cannot enter.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { banner } from '../../dev/stack/banner';
import { explainFileError, explainListenError, explainPostgresError } from '../../shared/platform/failures';
import { ROOT_CACHE, explainServerLog, placeEmbeddedPostgres } from '../../dev/stack/postgres';

const line = (level: string, text: string) => `2026-11-22 15:18:53.260 UTC [31666] ${level}:  ${text}\n`;

describe('startup failures', () => {
  it('names the port and the variable that moves it', () => {
    const taken = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
    const f = explainListenError(taken, { port: 3000, host: '0.0.0.0', variable: 'PORT' })!;
    expect(`${f.what}: ${f.fix}`).toBe(
      'port 3000 is already in use: stop what listens there (lsof -i :3000), or choose another port with PORT',
    );
    const privileged = Object.assign(new Error('listen EACCES'), { code: 'EACCES' });
    expect(explainListenError(privileged, { port: 80, host: '0.0.0.0', variable: 'PORT' })!.what).toBe(
      'no permission to listen on port 80',
    );
    expect(explainListenError(new Error('other'), { port: 1, host: 'x', variable: 'PORT' })).toBeUndefined();
  });

  it('tells a refused Postgres from a refused login or a missing database, never showing the password', () => {
    const refused = explainPostgresError(
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      'DATABASE_URL',
      'db.internal:5432',
    );
    expect(refused.what).toBe('Postgres at db.internal:5432 (DATABASE_URL) refused the connection');
    expect(refused.fix).toContain('unset DATABASE_URL');
    const login = explainPostgresError(
      Object.assign(new Error('password authentication failed for user "app"'), { code: '28P01' }),
      'DATABASE_URL',
      'db.internal:5432',
    );
    expect(login.fix).toBe('fix the user or password in DATABASE_URL');
    expect(
      explainFileError(
        Object.assign(new Error('x'), { code: 'EACCES', syscall: 'mkdir', path: '/srv/.data' }),
      )!.what,
    ).toBe('cannot mkdir /srv/.data (EACCES)');
  });

  it("reads the embedded server's log: port taken, another server on the data, wrong owner", () => {
    const at = (log: string) => explainServerLog(log, 54329, '/x/.data/pg', '/x/.data/postgres.log').what;
    expect(
      at(
        line('LOG', 'could not bind IPv4 address "127.0.0.1": Address already in use') +
          line('FATAL', 'could not create any TCP/IP sockets'),
      ),
    ).toBe('port 54329 of the embedded Postgres is already in use');
    expect(
      at(
        line('FATAL', 'lock file "postmaster.pid" already exists') +
          line('HINT', 'Is another postmaster (PID 4242) running in data directory "/x/.data/pg"?'),
      ),
    ).toBe('another Postgres (PID 4242) already runs on /x/.data/pg');
    expect(at(line('FATAL', 'data directory "/x/.data/pg" has wrong ownership'))).toBe(
      '/x/.data/pg has the wrong owner or mode',
    );
    expect(at(line('FATAL', 'something new'))).toBe(
      'the embedded Postgres stopped while starting: something new',
    );
  });
});

describe('the banner', () => {
  it('prints each address under the base of its route table', () => {
    const lines = banner({
      port: 3000,
      baseUrl: 'https://agents.example',
      apiUrl: 'https://api.example/',
      siteUrl: 'https://proofs.example',
      tokenFile: '.data/keys/operator-token',
    });
    const at = (label: string) =>
      lines
        .find((l) => l.trimStart().startsWith(label))!
        .trim()
        .split(/\s{2,}/)[1];
    expect(at('home')).toBe('https://proofs.example/');
    expect(at('verify a proof')).toBe('https://proofs.example/proof-workflows/verify/');
    expect(at('agent exchange')).toBe('https://agents.example/api/services');
    expect(at('health')).toBe('https://agents.example/api/health');
    expect(at('readiness')).toBe('https://api.example/api/v1/readiness');
    expect(at('Bull Board')).toBe('http://localhost:3000/admin/queues');
    expect(lines[0]).toBe('proof-exchange is running');
    // No development chain: no line about one.
    expect(lines.some((l) => /dev chain|demo/.test(l))).toBe(false);
  });

  it('labels the local development chain as demo money, and says how to pay with it', () => {
    const lines = banner({
      port: 3000,
      tokenFile: '.data/keys/operator-token',
      devnet: { rpcUrl: 'http://127.0.0.1:8545', payerKeyFile: '.data/devnet/payer.key' },
    });
    const chain = lines.find((l) => l.trimStart().startsWith('dev chain'))!;
    expect(chain).toContain('http://127.0.0.1:8545');
    expect(chain).toContain('local development chain: demo money, never production');
    const pay = lines.find((l) => l.trimStart().startsWith('pay for a job'))!;
    expect(pay).toContain('npm run demo:pay -- <job id> <job token>');
    expect(pay).toContain('.data/devnet/payer.key');
    expect(lines.at(-1)).toBe('Ctrl-C stops everything; a second Ctrl-C forces.');
  });
});

describe.runIf(process.getuid?.() === 0)('the embedded Postgres as root', () => {
  it('keeps DATA_DIR where the postgres user can enter it, and moves it where it cannot', async () => {
    const open = mkdtempSync(join(tmpdir(), 'px-place-'));
    chmodSync(open, 0o755);
    const closed = mkdtempSync(join(tmpdir(), 'px-place-')); // 0700, like /root
    try {
      const here = await placeEmbeddedPostgres(join(open, '.data'));
      expect(here.dataDir).toBe(join(open, '.data', 'pg'));
      expect(here.user?.uid).toBeGreaterThan(0);
      expect(here.note).toBeUndefined();

      const moved = await placeEmbeddedPostgres(join(closed, '.data'));
      expect(moved.dataDir).toMatch(new RegExp(`^${ROOT_CACHE}/data-[0-9a-f]{16}/pg$`));
      expect(moved.note).toContain(`cannot enter ${join(closed, '.data')}`);
      // The same DATA_DIR always lands in the same place, so its data survives restarts.
      expect((await placeEmbeddedPostgres(join(closed, '.data'))).dataDir).toBe(moved.dataDir);
      rmSync(join(moved.dataDir, '..'), { recursive: true, force: true });
    } finally {
      rmSync(open, { recursive: true, force: true });
      rmSync(closed, { recursive: true, force: true });
    }
  });
});
