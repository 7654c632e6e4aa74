// The committed lock is exactly what npm writes, so `npm install` on a fresh clone changes nothing, and
// every dependency install script has been decided (approved or denied) in package.json.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

describe('package-lock.json', () => {
  it('is already in the form npm install writes (lock:fix would change nothing)', () => {
    // Exits 1 when repairing the file would change it, for instance when entries are not in npm's
    // 'en' collation order (circom2 after circom_runtime), which npm install would rewrite.
    expect(() =>
      execFileSync(process.execPath, ['.ci/lockfile.mjs', '--check', 'package-lock.json']),
    ).not.toThrow();
    const keys = Object.keys(JSON.parse(readFileSync('package-lock.json', 'utf8')).packages as object);
    expect(keys.indexOf('node_modules/circom_runtime')).toBeLessThan(keys.indexOf('node_modules/circom2'));
  });
});

describe('allowScripts', () => {
  it('decides every installed package that has an install script', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { allowScripts: Record<string, boolean> };
    const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean; inBundle?: boolean }>;
    };
    // Bundled dependencies come inside their parent's tarball and npm does not ask about them.
    const withScripts = Object.entries(lock.packages)
      .filter(([path, p]) => p.hasInstallScript && !p.inBundle && path.includes('node_modules/'))
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(withScripts.length).toBeGreaterThan(0);
    const undecided = withScripts.filter((name) => !(name in pkg.allowScripts));
    expect(undecided).toEqual([]);
  });
});

describe('engines', () => {
  // npm ci warns EBADENGINE for any installed package whose `engines.node` the oldest Node the project
  // supports does not satisfy; the README and package.json name that version, and they must agree.
  it('every locked package runs on the oldest Node that package.json and the README name', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } };
    const oldest = semver.minVersion(pkg.engines.node)!;
    expect(readFileSync('README.md', 'utf8')).toContain(`Node.js ${oldest.major}.${oldest.minor} or newer`);
    const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
      packages: Record<
        string,
        { engines?: { node?: string } | string[]; optional?: boolean; version?: string }
      >;
    };
    const refused = Object.entries(lock.packages)
      .filter(([path, p]) => path.includes('node_modules/') && !Array.isArray(p.engines) && p.engines?.node)
      .filter(([, p]) => !semver.satisfies(oldest, (p.engines as { node: string }).node))
      .map(([path, p]) => `${path}@${p.version} needs node ${(p.engines as { node: string }).node}`);
    expect(refused).toEqual([]);
  });
});
