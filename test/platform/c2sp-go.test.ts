// An implementation of the C2SP formats that is not ours reads our log: a Go program on Go's own
// golang.org/x/mod (sumdb/note, sumdb/tlog — the Go checksum database's code) fetches the checkpoint and
// the tiles from the app listening on loopback, after real appends (a workflow package published, its
// stage records and a few hundred entries through the sequencer), and checks the log's signature, a
// witness's cosignature, the package's inclusion and the consistency of an earlier checkpoint. Skipped,
// saying so, where Go or x/mod is not installed (Debian: golang-go golang-golang-x-mod-dev).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { closeDeps, depsFromEnv } from '../../api/main';
import type { AppDeps } from '../../api/deps';
import { cosigner, parseCheckpoint } from '../../shared/platform/translog/checkpoint';
import { logEntryBytes } from '../../shared/platform/translog/entry';
import { SIG_ED25519, formatVkey, parseVkey } from '../../shared/platform/translog/note';
import { enqueueEntries, integrateAll } from '../../shared/platform/translog/sequencer';
import { publishWorkflowPackage } from '../../shared/workflows/publish';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { drive, prepare } from '../workflows/e2e/helpers';

const GOPATH = '/usr/share/gocode';
const goEnv = { GO111MODULE: 'off', GOPATH, GOCACHE: join(tmpdir(), 'px-gocache') };
const hasGo = spawnSync('go', ['version']).status === 0;
const hasXmod = existsSync(join(GOPATH, 'src/golang.org/x/mod/sumdb/tlog'));
const missing = !hasGo ? 'go is not on the PATH' : !hasXmod ? `golang.org/x/mod is not in ${GOPATH}` : '';
if (missing)
  console.warn(`C2SP interoperability test skipped: ${missing} (Debian: golang-go golang-golang-x-mod-dev)`);

let app: TestApp;
let deps: AppDeps;
let server: Server;
let prefix: string;
const dir = mkdtempSync(join(tmpdir(), 'px-c2sp-go-'));

const witness = (() => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return cosigner(
    'witness.example/w1',
    publicKey.export({ format: 'der', type: 'spki' }).subarray(12),
    privateKey,
  );
})();

beforeAll(async () => {
  if (missing) return;
  app = testApp();
  deps = depsFromEnv();
  server = createServer(createApp(deps));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  prefix = `http://127.0.0.1:${(server.address() as { port: number }).port}/log/`;
});
afterAll(async () => {
  if (server) await new Promise((r) => server.close(r));
  if (deps) await closeDeps(deps);
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the Go client; asynchronously, since it calls back into this process's server. */
const run = (args: string[]) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn('go', ['run', 'test/fixtures/c2sp-go/main.go', ...args], {
      cwd: process.cwd(),
      env: { ...process.env, ...goEnv },
      timeout: 240_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });

describe.skipIf(missing !== '')('Go’s sumdb/note and sumdb/tlog read our log', () => {
  it('verify the checkpoint and its cosignature, an entry’s inclusion and an earlier checkpoint’s consistency', async () => {
    const db = app.deps.db;
    // A workflow closed: its stage records are queued, its package published (the prover's call).
    const w = await prepare(app.request, 'Vendor Onboarding');
    await drive(app.request, w.workflowId, 'Vendor Onboarding');
    const published = await publishWorkflowPackage(db, w.proofId);
    expect(published.status).toBe('logged');
    // A few hundred entries more through the sequencer, so the tree has full and partial tiles.
    const entries = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({
        key: `go:${from + i}`,
        entry: logEntryBytes('trust_root', `go-${from + i}`, (from + i).toString(16).padStart(64, '0')),
      }));
    await enqueueEntries(db, entries(0, 290));
    await integrateAll(db, 100);
    const earlier = (await db('checkpoints').orderBy('tree_size', 'desc').first()) as { note: string };
    writeFileSync(join(dir, 'old.checkpoint'), earlier.note);
    await enqueueEntries(db, entries(290, 300));
    await integrateAll(db, 128);
    const latest = (await db('checkpoints').orderBy('tree_size', 'desc').first()) as {
      tree_size: string;
      note: string;
    };
    expect(Number(latest.tree_size)).toBeGreaterThan(512);
    const { text } = parseCheckpoint(latest.note);
    await db('checkpoint_cosignatures').insert({
      tree_size: latest.tree_size,
      witness_name: witness.name,
      line: witness.cosignLine(text, 1_790_000_000),
    });
    const vkey = (await app.request.get('/api/proof-workflows/log').expect(200)).body.vkey as string;

    const out = await run([
      '-prefix',
      prefix,
      '-vkey',
      vkey,
      '-witness',
      witness.vkey,
      '-index',
      String(published.leafIndex),
      '-old',
      join(dir, 'old.checkpoint'),
    ]);
    expect(out.status, out.stdout + out.stderr).toBe(0);
    expect(out.stdout).toContain(`size ${latest.tree_size} signed by the log`);
    expect(out.stdout).toContain('cosigned at 1790000000');
    expect(out.stdout).toContain(
      `entry ${published.leafIndex} included: {"id":"${w.proofId}","kind":"workflow_package","sha256":"`,
    );
    expect(out.stdout).toContain(
      `consistent: size ${parseCheckpoint(earlier.note).size} is a prefix of size ${latest.tree_size}`,
    );

    // And it says no: a key of the log's name that is not the log's key.
    const impostor = generateKeyPairSync('ed25519')
      .publicKey.export({ format: 'der', type: 'spki' })
      .subarray(12);
    const other = await run([
      '-prefix',
      prefix,
      '-vkey',
      formatVkey(parseVkey(vkey).name, SIG_ED25519, impostor),
      '-witness',
      witness.vkey,
      '-index',
      '0',
      '-old',
      join(dir, 'old.checkpoint'),
    ]);
    expect(other.status).not.toBe(0);
    expect(other.stdout).toMatch(/^FAIL: the checkpoint does not verify with the log key/m);
  }, 300_000);
});
