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
import { processArgs } from '../processes';
import { createDb } from '../../shared/platform/db/knex';

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
  renameSync(join(renamed, 'dev-INSECURE-pot14.ptau'), join(renamed, renamedFile));
  const manifest = JSON.parse(readFileSync(join(renamed, 'manifest.json'), 'utf8')) as Manifest;
  manifest.ptau.file = renamedFile;
  manifest.ptau.insecure = false;
  writeFileSync(join(renamed, 'manifest.json'), JSON.stringify(manifest));
});

afterEach(() => use(saved.CIRCUIT_ARTIFACTS_DIR));

afterAll(() => {
  rmSync(renamed, { recursive: true, force: true });
});

/** A production web on the artifacts in `dir`: its exit code and what it wrote to each stream. */
async function productionWeb(dir: string, settings: Record<string, string>) {
  const child = spawn(process.execPath, processArgs('web'), {
    cwd: repoRoot,
    env: {
      ...process.env,
      SERVICE_SIGNING_KEY: '7'.repeat(64),
      LOG_SIGNING_KEY: '8'.repeat(64),
      BASE_URL: 'https://exchange.example',
      HOST: '127.0.0.1',
      PORT: '0',
      VITEST: '',
      CIRCUIT_ARTIFACTS_DIR: dir,
      PTAU_PINNED_HASHES: '',
      ALLOW_INSECURE_CIRCUITS: 'false',
      ...settings,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, out, lines: err.trimEnd().split('\n') };
}

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
    const { code, out, lines } = await productionWeb(renamed, { NODE_ENV: 'production' });
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`the powers of tau ${renamedFile}`);
    expect(lines[0]).toContain('is not a published ceremony file');
    expect(lines[0]).toContain(`PTAU_PINNED_HASHES=${devHash}`);
    expect(lines[0]).toContain('CIRCUIT_PTAU=');
    expect(out).toBe('');
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

  it('takes the ptau once its hash is pinned, with its keys checked against it and their r1cs', async () => {
    // The check is the same for every circuit of the manifest, and costs seconds each: two here.
    const dir = mkdtempSync(join(tmpdir(), 'px-ptau-pinned-'));
    cpSync(renamed, dir, { recursive: true });
    only(dir, ['range', 'threshold']);
    use(dir, { NODE_ENV: 'production', PTAU_PINNED_HASHES: [devHash] });
    const setup = await assertCircuitSetup();
    expect(setup).toMatchObject({ insecure: false, ptau: { provenance: 'pinned', blake2b512: devHash } });
    const ready = await circuitReadiness();
    expect(ready).toMatchObject({
      ok: true,
      insecureSetup: false,
      keysChecked: {
        tool: 'snarkjs zKey.verifyFromR1cs',
        ptau: { file: renamedFile, blake2b512: devHash },
        circuits: Object.keys(loadManifest().circuits).sort(),
      },
    });
    expect(ready.detail).toContain(
      `keys checked against their r1cs and ${renamedFile} at ${ready.keysChecked!.checkedAt}`,
    );
    expect(circuitSetup().keysChecked).toEqual(ready.keysChecked);
  }, 120_000);

  it('records the check: a later start on the same files takes it, without the r1cs or the ptau; other files are checked anew', async () => {
    const db = createDb();
    const dir = mkdtempSync(join(tmpdir(), 'px-ptau-recorded-'));
    try {
      cpSync(renamed, dir, { recursive: true });
      only(dir, ['threshold']);
      await db('circuit_key_checks').where('ptau_blake2b512', devHash).delete();
      const settings = { NODE_ENV: 'production' as const, PTAU_PINNED_HASHES: [devHash] };
      use(dir, settings);
      const first = await assertCircuitSetup({ db, process: 'release' });
      expect(first.keysChecked).toMatchObject({ by: 'this process', circuits: ['threshold'] });
      const [row] = await db('circuit_key_checks').where('ptau_blake2b512', devHash);
      expect(row).toMatchObject({
        circuit: 'threshold',
        zkey_sha256: loadManifest().circuits.threshold!.zkey.sha256,
        r1cs_sha256: loadManifest().circuits.threshold!.r1csSha256,
        checked_by: 'release',
      });

      // Another process on the same files (a fresh manifest), with neither the r1cs nor the ptau.
      rmSync(join(dir, 'threshold.r1cs'));
      rmSync(join(dir, renamedFile));
      use(dir, settings);
      const second = await assertCircuitSetup({ db, process: 'web' });
      expect(second.keysChecked).toMatchObject({ by: 'release', checkedAt: first.keysChecked!.checkedAt });
      const ready = await circuitReadiness();
      expect(ready).toMatchObject({ ok: true, keysChecked: { by: 'release' } });
      expect(ready.detail).toContain('by the release process, recorded for these files');
      // Without the record it checks, and has nothing to check against.
      use(dir, settings);
      await expect(assertCircuitSetup()).rejects.toThrow(/not at .* to check them against/);
      // The record is of those files: a check recorded for another constraint system covers nothing here.
      await db('circuit_key_checks')
        .where('ptau_blake2b512', devHash)
        .update({ r1cs_sha256: 'f'.repeat(64) });
      use(dir, settings);
      await expect(assertCircuitSetup({ db, process: 'web' })).rejects.toThrow(
        /not at .* to check them against/,
      );
    } finally {
      await db('circuit_key_checks').where('ptau_blake2b512', devHash).delete();
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

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

/** The committed artifacts, wherever CIRCUIT_ARTIFACTS_DIR points meanwhile. */
const committed = join(repoRoot, 'circuits', 'artifacts');

/** A copy of the artifacts whose manifest and transcripts say the keys come from `ptau` (a file name and hash). */
function claiming(ptau: { file: string; blake2b512: string }, options: { ptauBytes?: Buffer } = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'px-ptau-claimed-'));
  cpSync(committed, dir, { recursive: true });
  rmSync(join(dir, 'dev-INSECURE-pot14.ptau'));
  if (options.ptauBytes) writeFileSync(join(dir, ptau.file), options.ptauBytes);
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  manifest.ptau = { ...manifest.ptau, file: ptau.file, blake2b512: ptau.blake2b512, insecure: false };
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
  for (const circuit of Object.keys(manifest.circuits)) {
    const path = transcriptPath(circuit, dir);
    const t = JSON.parse(readFileSync(path, 'utf8')) as { ptau: Record<string, unknown> };
    t.ptau = { ...t.ptau, file: ptau.file, blake2b512: ptau.blake2b512 };
    writeFileSync(path, JSON.stringify(t));
  }
  return dir;
}

/** Keeps only `circuits` in a copy's manifest: checking keys costs seconds a circuit. */
function only(dir: string, circuits: string[]): string {
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  manifest.circuits = Object.fromEntries(circuits.map((c) => [c, manifest.circuits[c]!]));
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

/**
 * The development powers of tau with the points of its prepared Lagrange section (12) swapped pairwise:
 * a well-formed file, of another hash, from which the committed keys do not come.
 */
function otherPtau(): Buffer {
  const bytes = Buffer.from(readFileSync(join(committed, 'dev-INSECURE-pot14.ptau')));
  let at = 12; // "ptau", version, section count
  const sections = bytes.readUInt32LE(8);
  for (let i = 0; i < sections; i++) {
    const type = bytes.readUInt32LE(at);
    const size = Number(bytes.readBigUInt64LE(at + 4));
    const start = at + 12;
    if (type === 12) {
      const point = 64; // an uncompressed G1 point
      for (let p = start; p + 2 * point <= start + size; p += 2 * point) {
        const a = Buffer.from(bytes.subarray(p, p + point));
        bytes.copy(bytes, p, p + point, p + 2 * point);
        a.copy(bytes, p + point);
      }
    }
    at = start + size;
  }
  return bytes;
}

describe('in production, the keys checked against the ceremony, not the manifest’s word', () => {
  const made: string[] = [];
  afterAll(() => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a manifest and transcripts edited to name the published pot12 file: that file is not here, or is another', async () => {
    const hez12 = publishedPtaus().find((p) => p.power === 12)!;
    const forged = claiming(hez12);
    made.push(forged);
    use(forged, { NODE_ENV: 'production' });
    // What the manifest says is what it says...
    expect(circuitSetup()).toMatchObject({ insecure: false, ptau: { provenance: 'published' } });
    // ...and the keys are checked against the file itself.
    await expect(assertCircuitSetup()).rejects.toThrow(
      /that file is not at .*powersOfTau28_hez_final_12\.ptau/,
    );
    expect(await circuitReadiness()).toMatchObject({ ok: false });
    // The development file shipped under the published name is another file.
    writeFileSync(join(forged, hez12.file), readFileSync(join(committed, 'dev-INSECURE-pot14.ptau')));
    await expect(assertCircuitSetup()).rejects.toThrow(
      new RegExp(`but .*${hez12.file} is another file \\(blake2b-512 ${devHash.slice(0, 16)}…\\)`),
    );

    // As the issue found it: started under APP_ENV=production, it now ends with one line saying so.
    const { code, out, lines } = await productionWeb(forged, { APP_ENV: 'production' });
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('Refusing to start in production: the manifest says the circuit keys');
    expect(lines[0]).toContain('is another file');
    expect(out).toBe('');
  }, 60_000);

  it('refuses keys that do not come from the pinned file they name (snarkjs zkey verify refuses them)', async () => {
    const bytes = otherPtau();
    const file = 'pinned-other.ptau';
    const path = join(mkdtempSync(join(tmpdir(), 'px-ptau-other-')), file);
    writeFileSync(path, bytes);
    const hash = await blake2b512File(path);
    expect(hash).not.toBe(devHash);
    const dir = only(claiming({ file, blake2b512: hash }, { ptauBytes: bytes }), ['threshold']);
    made.push(dir, join(path, '..'));
    use(dir, { NODE_ENV: 'production', PTAU_PINNED_HASHES: [hash] });
    await expect(assertCircuitSetup()).rejects.toThrow(
      /threshold\.zkey does not come from the powers of tau pinned-other\.ptau .* and its r1cs \(snarkjs zkey verify refuses it\)/,
    );
    expect(await circuitReadiness()).toMatchObject({ ok: false });
  }, 120_000);

  it('refuses keys whose constraint system is missing: there is nothing to check them against', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'px-ptau-nor1cs-'));
    made.push(dir);
    cpSync(renamed, dir, { recursive: true });
    // The first circuit the check reaches: a later one would wait for every key before it.
    rmSync(join(dir, 'threshold.r1cs'));
    use(dir, { NODE_ENV: 'production', PTAU_PINNED_HASHES: [devHash] });
    await expect(assertCircuitSetup()).rejects.toThrow(
      /threshold's constraint system .*threshold\.r1cs is missing/,
    );
  });
});

describe('in development', () => {
  it('runs the committed development setup as before: insecure, said, not refused', async () => {
    use(undefined, { NODE_ENV: 'development' });
    const setup = await assertCircuitSetup();
    expect(setup).toMatchObject({
      insecure: true,
      ptau: { file: 'dev-INSECURE-pot14.ptau', provenance: 'unaccepted', blake2b512: devHash },
    });
    const ready = await circuitReadiness();
    expect(ready).toMatchObject({ ok: true, insecureSetup: true });
    expect(ready.detail).toContain('proofs are forgeable');
    expect(loadManifest().ptau.blake2b512).toBe(devHash);
  });
});
