// The committed artifacts must match their sources: a circuit edited without a rebuild, or keys
// replaced by hand, fail here (and in npm run circuits:check).
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkArtifacts, circuitSources, sourceHash } from '../../../circuits/sources';
import { env } from '../../../shared/platform/env';
import { artifactsDir, loadManifest } from '../../../shared/zk/artifacts';
import type { Manifest } from '../../../shared/zk/artifacts';
import { describePolicies, policies, terminateCurves } from '../../../shared/zk';

afterAll(async () => {
  await terminateCurves();
});

/** Runs the check against a scratch copy of the artifacts, altered by `change`. */
async function checkCopy(change: (dir: string) => void): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'px-artifacts-'));
  const original = env.CIRCUIT_ARTIFACTS_DIR;
  try {
    cpSync(artifactsDir(), dir, { recursive: true });
    change(dir);
    env.CIRCUIT_ARTIFACTS_DIR = dir;
    return await checkArtifacts();
  } finally {
    env.CIRCUIT_ARTIFACTS_DIR = original;
    rmSync(dir, { recursive: true, force: true });
  }
}

function editManifest(dir: string, edit: (m: Manifest) => void) {
  const path = join(dir, 'manifest.json');
  const manifest = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
  edit(manifest);
  writeFileSync(path, JSON.stringify(manifest));
}

describe('circuit manifest', () => {
  it('matches the sources, and each verification key is the one of its zkey', async () => {
    expect(await checkArtifacts({ deep: true })).toEqual([]);
  });

  it('hashes the included circomlib files too', () => {
    const keys = circuitSources('membership').map((f) => f.key);
    expect(keys).toContain('circuits/membership.circom');
    expect(keys).toContain('circuits/lib/policy.circom');
    expect(keys).toContain('circomlib/circuits/poseidon.circom');
    expect(keys).toContain('circomlib/circuits/comparators.circom');
    expect(loadManifest().circuits.membership!.sourceSha256).toBe(sourceHash('membership'));
  });

  it('fails when a source no longer matches the manifest', async () => {
    const problems = await checkCopy((dir) =>
      editManifest(dir, (m) => {
        m.circuits.range!.sourceSha256 = '0'.repeat(64);
      }),
    );
    expect(problems).toEqual([expect.stringMatching(/^range: sources changed/)]);
  });

  it('fails when a committed key differs from the manifest', async () => {
    const problems = await checkCopy((dir) => {
      const vkey = join(dir, 'threshold.vkey.json');
      writeFileSync(vkey, readFileSync(vkey, 'utf8').replace('"nPublic": 5', '"nPublic": 5 '));
      cpSync(join(dir, 'range.zkey'), join(dir, 'membership.zkey'));
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        'threshold: vkey sha256 differs from the manifest',
        'membership: zkey sha256 differs from the manifest',
      ]),
    );
  });

  it('describes each policy from the manifest', () => {
    const described = describePolicies();
    expect(described.map((p) => p.id)).toEqual(Object.keys(policies));
    for (const policy of described) {
      expect(policy.constraints).toBeGreaterThan(0);
      // Groth16 needs constraints + public signals + 1 points in the setup's domain.
      expect(policy.constraints + policy.publicSignals.length + 1).toBeLessThanOrEqual(2 ** 14);
      expect(policy.publicSignals).toEqual([...policies[policy.id].publicSignals]);
      expect(policy.insecureSetup).toBe(true);
    }
  });
});
