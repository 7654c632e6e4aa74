// The powers of tau is trusted by its blake2b-512 hash, never by its name: production refuses a file
// whose hash is neither a published ceremony file's nor pinned (one line saying what to do), takes a
// pinned one, and refuses keys whose transcript does not match them; development runs the committed
// development setup as before. The list of published hashes is the one snarkjs's README publishes.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { env } from '../../shared/platform/env';
import { artifactsDir, loadManifest, resetManifestCache } from '../../shared/zk/artifacts';
import type { Manifest } from '../../shared/zk/artifacts';
import { blake2b512File, ptauProvenance, publishedPtaus, transcriptPath } from '../../shared/zk/ceremony';
import { assertCircuitSetup, circuitReadiness, circuitSetup } from '../../shared/zk/setup';
import { repoRoot } from '../../circuits/sources';

const saved = {
  NODE_ENV: env.NODE_ENV,
  APP_ENV: env.APP_ENV,
  CIRCUIT_ARTIFACTS_DIR: env.CIRCUIT_ARTIFACTS_DIR,
  PTAU_PINNED_HASHES: env.PTAU_PINNED_HASHES,
  ALLOW_INSECURE_CIRCUITS: env.ALLOW_INSECURE_CIRCUITS,
};

let devHash: string;
/** A copy of the artifacts whose manifest claims a ceremony file by name, with the development file's hash. */
let renamed: string;
const renamedFile = 'powersOfTau28_hez_final_12.ptau';

function use(dir: string | undefined, settings: Partial<typeof saved> = {}) {
  Object.assign(env, saved, { CIRCUIT_ARTIFACTS_DIR: dir }, settings);
  resetManifestCache();
}

beforeAll(async () => {
  devHash = await blake2b512File(join(artifactsDir(), loadManifest().ptau.file));
  renamed = mkdtempSync(join(tmpdir(), 'px-ptau-renamed-'));
  cpSync(artifactsDir(), renamed, { recursive: true });
  renameSync(join(renamed, 'dev-INSECURE-pot12.ptau'), join(renamed, renamedFile));
  const manifest = JSON.parse(readFileSync(join(renamed, 'manifest.json'), 'utf8')) as Manifest;
  manifest.ptau.file = renamedFile;
  manifest.ptau.insecure = false;
  writeFileSync(join(renamed, 'manifest.json'), JSON.stringify(manifest));
});

afterEach(() => use(saved.CIRCUIT_ARTIFACTS_DIR));

afterAll(() => {
  rmSync(renamed, { recursive: true, force: true });
});

describe('the published list', () => {
  it('holds exactly the hashes of the snarkjs README table, with its source', () => {
    const readme = readFileSync(join(repoRoot, 'node_modules', 'snarkjs', 'README.md'), 'utf8');
    const table = [
      ...readme.matchAll(
        /\|\s*(\d+)\s*\|[^|]*\|\s*\[(powersOfTau28_hez_final(?:_\d+)?\.ptau)\][^|]*\|\s*([0-9a-f]{128})\s*\|/g,
      ),
    ].map((m) => ({ power: Number(m[1]), file: m[2], blake2b512: m[3] }));
    expect(table.length).toBeGreaterThanOrEqual(20);
    expect(publishedPtaus().map(({ power, file, blake2b512 }) => ({ power, file, blake2b512 }))).toEqual(
      table,
    );
    const list = JSON.parse(
      readFileSync(join(repoRoot, 'circuits', 'ceremony', 'ptau-hashes.json'), 'utf8'),
    ) as {
      source: string;
    };
    expect(list.source).toContain('snarkjs');
  });

  it('hashes the whole file with blake2b-512, as b2sum does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'px-b2-'));
    try {
      writeFileSync(join(dir, 'abc'), 'abc');
      // RFC 7693, appendix A: BLAKE2b-512("abc").
      expect(await blake2b512File(join(dir, 'abc'))).toBe(
        'ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('accepts a published hash and a pinned one, and nothing else', () => {
    const hez12 = publishedPtaus().find((p) => p.power === 12)!;
    expect(ptauProvenance(hez12.blake2b512)).toEqual({ accepted: true, by: 'published', file: hez12.file });
    expect(ptauProvenance(devHash)).toEqual({ accepted: false });
    use(undefined, { PTAU_PINNED_HASHES: [devHash] });
    expect(ptauProvenance(devHash)).toEqual({ accepted: true, by: 'pinned' });
  });
});

describe('in production', () => {
  it('refuses a ptau whose name claims a ceremony but whose hash is unknown, in one line saying what to do', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'api/main.ts'], {
      cwd: repoRoot,
      env: {
        ...process.env,
        NODE_ENV: 'production',
        SERVICE_SIGNING_KEY: '7'.repeat(64),
        LOG_SIGNING_KEY: '8'.repeat(64),
        BASE_URL: 'https://exchange.example',
        HOST: '127.0.0.1',
        PORT: '0',
        VITEST: '',
        CIRCUIT_ARTIFACTS_DIR: renamed,
        PTAU_PINNED_HASHES: '',
        ALLOW_INSECURE_CIRCUITS: 'false',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: string[] = [];
    const err: string[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d.toString()));
    child.stderr.on('data', (d: Buffer) => err.push(d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    const lines = err.join('').trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`the powers of tau ${renamedFile}`);
    expect(lines[0]).toContain('is not a published ceremony file');
    expect(lines[0]).toContain(`PTAU_PINNED_HASHES=${devHash}`);
    expect(lines[0]).toContain('CIRCUIT_PTAU=');
    expect(out.join('')).toBe('');
  }, 40_000);

  it('the same keys, readiness and status say insecure (the name does not count)', async () => {
    use(renamed, { NODE_ENV: 'production' });
    expect(circuitSetup()).toMatchObject({
      insecure: true,
      ptau: { file: renamedFile, provenance: 'unaccepted' },
    });
    await expect(assertCircuitSetup()).rejects.toThrow(/not a published ceremony file/);
    expect(await circuitReadiness()).toMatchObject({ ok: false, insecureSetup: true });
  });

  it('takes the ptau once its hash is pinned', async () => {
    use(renamed, { NODE_ENV: 'production', PTAU_PINNED_HASHES: [devHash] });
    const setup = await assertCircuitSetup();
    expect(setup).toMatchObject({ insecure: false, ptau: { provenance: 'pinned', blake2b512: devHash } });
    expect(await circuitReadiness()).toMatchObject({ ok: true, insecureSetup: false });
  });

  it('APP_ENV=production is production too', async () => {
    use(renamed, { NODE_ENV: 'development', APP_ENV: 'production' });
    await expect(assertCircuitSetup()).rejects.toThrow(/not a published ceremony file/);
  });

  it('refuses pinned keys whose transcript is missing or does not end in the zkey', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'px-ptau-transcript-'));
    try {
      cpSync(renamed, dir, { recursive: true });
      use(dir, { NODE_ENV: 'production', PTAU_PINNED_HASHES: [devHash] });
      const path = transcriptPath('range', dir);
      const transcript = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
      writeFileSync(path, JSON.stringify({ ...transcript, finalZkeySha256: 'f'.repeat(64) }));
      await expect(assertCircuitSetup()).rejects.toThrow(
        /no phase-2 transcript that matches them \(range: the transcript's final zkey sha256 differs from the zkey's\)/,
      );
      expect(await circuitReadiness()).toMatchObject({ ok: false });
      rmSync(path);
      await expect(assertCircuitSetup()).rejects.toThrow(/range: no ceremony transcript/);
      // The operator may still say forgeable proofs are acceptable.
      use(dir, { NODE_ENV: 'production', PTAU_PINNED_HASHES: [devHash], ALLOW_INSECURE_CIRCUITS: true });
      await expect(assertCircuitSetup()).resolves.toMatchObject({ insecure: false });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('in development', () => {
  it('runs the committed development setup as before: insecure, said, not refused', async () => {
    use(undefined, { NODE_ENV: 'development' });
    const setup = await assertCircuitSetup();
    expect(setup).toMatchObject({
      insecure: true,
      ptau: { file: 'dev-INSECURE-pot12.ptau', provenance: 'unaccepted', blake2b512: devHash },
    });
    const ready = await circuitReadiness();
    expect(ready).toMatchObject({ ok: true, insecureSetup: true });
    expect(ready.detail).toContain('proofs are forgeable');
    expect(loadManifest().ptau.blake2b512).toBe(devHash);
  });
});
