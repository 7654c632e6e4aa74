// The committed lock is exactly what npm writes, so `npm install` on a fresh clone changes nothing, and
// every dependency install script has been decided (approved or denied) in package.json.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
