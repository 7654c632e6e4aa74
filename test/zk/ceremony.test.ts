// The phase-2 ceremony, with real snarkjs on the smallest committed circuit (threshold) and the
// committed development powers of tau: three contributors and a beacon give a zkey that verifies and a
// transcript listing them in order; a zkey with a contribution's bytes changed does not verify and is
// not installed; the transcript goes into the transparency log once and the route serves what was logged.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contribute, finalize, start, verify } from '../../cli/ceremony';
import { canonicalJson } from '../../shared/platform/canonical';
import { sha256Hex } from '../../shared/platform/crypto';
import { env } from '../../shared/platform/env';
import { parseLogEntry } from '../../shared/platform/translog/entry';
import { artifactProblems, ceremonyProblems } from '../../shared/zk/setup';
import { artifactsDir, loadManifest, resetManifestCache } from '../../shared/zk/artifacts';
import { readTranscript, transcriptPath } from '../../shared/zk/ceremony';
import type { Transcript } from '../../shared/zk/ceremony';
import { logCeremonyTranscripts } from '../../shared/zk/ceremony-log';
import { terminateCurves } from '../../shared/zk';
import { checkArtifacts, repoRoot } from '../../circuits/sources';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';

const execFileAsync = promisify(execFile);
const CIRCUIT = 'threshold';

let work: string;
let r1cs: string;
let ptau: string;
let dir: string;
let app: TestApp;
const originalDir = env.CIRCUIT_ARTIFACTS_DIR;

/** Compiles the circuit where circom can read every include (a copy: node_modules may be a link). */
async function compileR1cs(into: string): Promise<string> {
  const src = join(into, 'src');
  cpSync(join(repoRoot, 'circuits'), join(src, 'circuits'), {
    recursive: true,
    filter: (p) => !p.includes(`${join('circuits', 'build')}`) && !p.includes('artifacts'),
  });
  cpSync(
    join(repoRoot, 'node_modules', 'circomlib', 'circuits'),
    join(src, 'node_modules', 'circomlib', 'circuits'),
    {
      recursive: true,
      dereference: true,
    },
  );
  mkdirSync(join(src, 'out'));
  const cli = join(repoRoot, 'node_modules', 'circom2', 'cli.js');
  await execFileAsync(
    process.execPath,
    [cli, join('circuits', `${CIRCUIT}.circom`), '--O2', '--r1cs', '-l', 'node_modules', '-o', 'out'],
    { cwd: src, maxBuffer: 16 * 1024 * 1024 },
  );
  return join(src, 'out', `${CIRCUIT}.r1cs`);
}

/** The zkey's MPC section (10): csHash, count, then each contribution (deltaAfter, g1_s, g1_sx, g2_spx, transcript…). */
function mpcSectionStart(zkey: Buffer): number {
  let pos = 12;
  for (let i = 0; i < zkey.readUInt32LE(8); i++) {
    const type = zkey.readUInt32LE(pos);
    const size = Number(zkey.readBigUInt64LE(pos + 4));
    if (type === 10) return pos + 12;
    pos += 12 + size;
  }
  throw new Error('no MPC section');
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'px-ceremony-test-'));
  r1cs = await compileR1cs(work);
  ptau = join(artifactsDir(), loadManifest().ptau.file);
  // The artifacts folder the ceremony installs into: a copy of the committed one.
  dir = join(work, 'artifacts');
  cpSync(artifactsDir(), dir, { recursive: true });
  app = testApp();
}, 60_000);

afterAll(async () => {
  env.CIRCUIT_ARTIFACTS_DIR = originalDir;
  resetManifestCache();
  rmSync(work, { recursive: true, force: true });
  await app.close();
  await terminateCurves();
});

describe('a three-contributor ceremony', () => {
  const names = ['alice', 'bob', 'carol'];
  const hashes: string[] = [];
  let last: string;
  let finalized: Transcript;

  it('starts, takes three contributions and verifies, listing them in order', async () => {
    const zero = join(work, `${CIRCUIT}_0000.zkey`);
    await start(CIRCUIT, zero, { r1cs, ptau });
    last = zero;
    for (const [i, name] of names.entries()) {
      const next = join(work, `${CIRCUIT}_000${i + 1}.zkey`);
      const { hash } = await contribute(last, next, name, `extra entropy ${i}`);
      hashes.push(hash);
      last = next;
    }
    const result = await verify(CIRCUIT, last, { r1cs, ptau });
    expect(result.errors).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.contributions.map((c) => [c.index, c.name, c.hash])).toEqual(
      names.map((n, i) => [i + 1, n, hashes[i]]),
    );
    expect(new Set(hashes).size).toBe(3);
  }, 120_000);

  it('the CLI verify (as snarkjs zkey verify) says so and lists the contributors', async () => {
    const { stdout } = await execFileAsync(
      process.execPath,
      [
        '--import',
        'tsx',
        'cli/ceremony.ts',
        'verify',
        CIRCUIT,
        '--zkey',
        last,
        '--r1cs',
        r1cs,
        '--ptau',
        ptau,
      ],
      { cwd: repoRoot },
    );
    expect(stdout).toContain('verifies against');
    for (const [i, name] of names.entries()) expect(stdout).toContain(`#${i + 1} ${name}\n     ${hashes[i]}`);
    expect(stdout).toContain('powers of tau NOT accepted in production');
  }, 30_000);

  it('finalize applies the beacon and installs zkey, vkey, transcript and manifest entries', async () => {
    const beacon = { value: '0123456789abcdef'.repeat(4), iterationsExp: 10 };
    finalized = await finalize(CIRCUIT, last, beacon, { r1cs, ptau, dir });
    expect(finalized.contributions.map((c) => [c.name, c.beacon])).toEqual([
      ...names.map((n) => [n, false]),
      ['final beacon', true],
    ]);
    expect(finalized.contributions.slice(0, 3).map((c) => c.hash)).toEqual(hashes);
    expect(finalized.beacon).toEqual(beacon);
    expect(finalized.ptau.blake2b512).toBe(loadManifest().ptau.blake2b512);
    const zkeyBytes = readFileSync(join(dir, `${CIRCUIT}.zkey`));
    expect(finalized.finalZkeySha256).toBe(sha256Hex(zkeyBytes));
    expect(readTranscript(CIRCUIT, dir)).toEqual(finalized);

    // The service takes the installed keys: hashes match the updated manifest and the transcript.
    env.CIRCUIT_ARTIFACTS_DIR = dir;
    resetManifestCache();
    expect(loadManifest().circuits[CIRCUIT]!.zkey.sha256).toBe(finalized.finalZkeySha256);
    expect(await artifactProblems()).toEqual([]);
    expect(ceremonyProblems()).toEqual([]);
    // And a transcript that does not end in the installed zkey is a problem.
    const edited = { ...finalized, finalZkeySha256: '0'.repeat(64) };
    writeFileSync(transcriptPath(CIRCUIT, dir), JSON.stringify(edited));
    expect(ceremonyProblems()).toEqual([
      `${CIRCUIT}: the transcript's final zkey sha256 differs from the zkey's`,
    ]);
    writeFileSync(transcriptPath(CIRCUIT, dir), JSON.stringify(finalized));

    // circuits:check re-verifies the chain where it has the r1cs, and holds the transcript's hashes to it.
    const skipped: string[] = [];
    const r1csDir = join(work, 'src', 'out');
    expect(await checkArtifacts({ ceremony: true, r1csDir, note: (l) => skipped.push(l) })).toEqual([]);
    expect(skipped.map((l) => l.split(':')[0]).sort()).toEqual([
      'approval',
      'ballot',
      'credential',
      'membership',
      'range',
    ]);
    const reordered = { ...finalized, contributions: [...finalized.contributions].reverse() };
    writeFileSync(transcriptPath(CIRCUIT, dir), JSON.stringify(reordered));
    expect(await checkArtifacts({ ceremony: true, r1csDir })).toEqual([
      `${CIRCUIT}: the transcript's contributions differ from the zkey's`,
    ]);
    writeFileSync(transcriptPath(CIRCUIT, dir), JSON.stringify(finalized));
  }, 60_000);

  it('a zkey with a contribution changed does not verify, and finalize installs nothing from it', async () => {
    const bytes = readFileSync(last);
    const mpc = mpcSectionStart(bytes);
    // csHash (64 bytes), the count (4), then the first contribution: its points, then its transcript hash.
    const tampered = Buffer.from(bytes);
    const firstLength = 64 * 3 + 128 + 64; // points and transcript; the params after them vary
    expect(tampered.readUInt32LE(mpc + 64)).toBe(3);
    const at = mpc + 68 + firstLength - 10; // inside the first contribution's transcript hash
    tampered[at] = tampered[at]! ^ 0x01;
    const path = join(work, 'tampered.zkey');
    writeFileSync(path, tampered);
    const result = await verify(CIRCUIT, path, { r1cs, ptau });
    expect(result.ok).toBe(false);
    expect(result.contributions).toEqual([]);

    const other = join(work, 'other-artifacts');
    cpSync(artifactsDir(), other, { recursive: true });
    rmSync(transcriptPath(CIRCUIT, other));
    const before = readFileSync(join(other, 'manifest.json'));
    await expect(
      finalize(CIRCUIT, path, { value: 'ab', iterationsExp: 10 }, { r1cs, ptau, dir: other }),
    ).rejects.toThrow(/does not verify/);
    expect(existsSync(transcriptPath(CIRCUIT, other))).toBe(false);
    expect(readFileSync(join(other, 'manifest.json')).equals(before)).toBe(true);
  }, 120_000);

  it('logs the transcript once and the route serves what was logged', async () => {
    env.CIRCUIT_ARTIFACTS_DIR = dir;
    resetManifestCache();
    const id = `${CIRCUIT}/${finalized.finalZkeySha256}`;
    expect(await logCeremonyTranscripts(app.deps.db)).toContain(id);
    expect(await logCeremonyTranscripts(app.deps.db)).toEqual([]);
    const leaves = await app.deps.db('translog_leaves').where('proof_id', `ceremony_transcript:${id}`);
    expect(leaves).toHaveLength(1);

    const res = await app.request.get(`/api/zk/circuits/${CIRCUIT}/ceremony`).expect(200);
    expect(res.body.transcript).toEqual(finalized);
    const logged = parseLogEntry(leaves[0].entry as Buffer)!;
    expect(logged).toMatchObject({ kind: 'ceremony_transcript', id });
    expect(logged.sha256).toBe(sha256Hex(canonicalJson(res.body.transcript)));
    expect(res.body.log).toMatchObject({ kind: 'ceremony_transcript', id, sha256: logged.sha256 });
    expect(res.body.log.index).toBe(Number(leaves[0].leaf_index));
    expect(res.body.log.proof).toContain(`index ${res.body.log.index}`);
  }, 30_000);

  it('answers 404 for a circuit without a transcript and 400 for a malformed name', async () => {
    const nf = await app.request.get('/api/zk/circuits/nosuch/ceremony').expect(404);
    expect(nf.body.code).toBe('not_found');
    rmSync(transcriptPath('range', dir));
    await app.request.get('/api/zk/circuits/range/ceremony').expect(404);
    const bad = await app.request.get('/api/zk/circuits/..%2Fmanifest/ceremony').expect(400);
    expect(bad.body.code).toBe('validation_failed');
    await app.request.get('/api/zk/circuits/__proto__/ceremony').expect(404);
  });
});
