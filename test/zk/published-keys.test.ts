// Every circuit's verification key is served at /circuits/<circuit>.vkey.json, the very key the service
// verifies that circuit's proofs with, so a verifier checks a proof with the unmodified snarkjs command
// line on what the service publishes and nothing of ours. Other names under /circuits/ are 404.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { snarkjsBackend } from '../../shared/zk/backends';
import { artifactPaths, loadManifest, provePolicy, terminateCurves } from '../../shared/zk/index';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { privateInputs } from './helpers';

const run = promisify(execFile);
const snarkjsCli = join(process.cwd(), 'node_modules', 'snarkjs', 'build', 'cli.cjs');

let app: TestApp;
const dir = mkdtempSync(join(tmpdir(), 'px-vkeys-'));

beforeAll(() => {
  app = testApp();
});

afterAll(async () => {
  await app.close();
  await terminateCurves();
  rmSync(dir, { recursive: true, force: true });
});

describe('/circuits/<circuit>.vkey.json', () => {
  it('serves each circuit’s verification key, byte for byte the one its manifest entry names', async () => {
    const circuits = Object.entries(loadManifest().circuits);
    expect(circuits.map(([name]) => name).sort()).toEqual(
      expect.arrayContaining(['ballot', 'membership', 'range', 'threshold']),
    );
    for (const [name, entry] of circuits) {
      const res = await app.request.get(`/circuits/${name}.vkey.json`).buffer(true).expect(200);
      const body = Buffer.isBuffer(res.body) ? res.body : Buffer.from(res.text);
      expect(body.equals(readFileSync(artifactPaths(name).vkey)), name).toBe(true);
      expect(createHash('sha256').update(body).digest('hex'), name).toBe(entry.vkey.sha256);
      expect(JSON.parse(body.toString('utf8'))).toMatchObject({ protocol: 'groth16', curve: 'bn128' });
    }
  });

  it('answers 404 for a name that is no circuit’s key', async () => {
    for (const file of [
      'nope.vkey.json',
      'threshold.zkey.json',
      '..%2Fmanifest.json.vkey.json',
      'manifest.json',
    ])
      await app.request.get(`/circuits/${file}`).expect(404);
  });

  it('lets the snarkjs command line verify a proof with the served key, and refuse a changed signal', async () => {
    const proved = await provePolicy(snarkjsBackend(), 'threshold', privateInputs.threshold);
    const served = await app.request.get('/circuits/threshold.vkey.json').expect(200);
    writeFileSync(join(dir, 'vkey.json'), served.text);
    writeFileSync(join(dir, 'proof.json'), JSON.stringify(proved.proof));
    writeFileSync(join(dir, 'public.json'), JSON.stringify(proved.publicSignals));
    const args = [
      'groth16',
      'verify',
      join(dir, 'vkey.json'),
      join(dir, 'public.json'),
      join(dir, 'proof.json'),
    ];
    const ok = await run(process.execPath, [snarkjsCli, ...args]);
    expect(ok.stdout).toContain('OK!');

    // The result signal flipped: the command line says it does not verify, and exits non-zero.
    writeFileSync(join(dir, 'public.json'), JSON.stringify(['0', ...proved.publicSignals.slice(1)]));
    const bad = await run(process.execPath, [snarkjsCli, ...args]).then(
      () => undefined,
      (err: { code?: number; stdout?: string }) => err,
    );
    expect(bad?.code).not.toBe(0);
    expect(bad?.stdout).toMatch(/Invalid proof/);
  }, 60_000);
});
