// Lockfile repair: adds entries for optional platform packages (other OSes/CPUs) that the registry mirror
// here does not serve; without them `npm ci` rejects a lock made by `npm install`. Idempotent, and it
// writes the file exactly as npm would (packages ordered by npm's 'en' locale compare, two-space JSON),
// so `npm install` on a fresh clone leaves the repaired lock untouched.
// `node .ci/lockfile.mjs [--check] [package-lock.json]`: with --check, changes nothing and exits 1 when
// the file is not already in repaired form.
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const PLATFORM =
  /-(darwin-arm64|darwin-x64|linux-arm64|linux-arm|linux-x64|win32-x64|win32-ia32|win32-arm64|linux-ia32|linux-ppc64|linux-s390x|freebsd-x64|android-arm64|android-arm)$/;

// npm (@npmcli/arborist) orders lockfile entries with Intl.Collator('en'), not by code unit: with
// code-unit order `circom2` sorts before `circom_runtime`, and npm moves it back on every install.
const npmOrder = new Intl.Collator('en').compare;

/** Returns the repaired lockfile text and how many entries were added. */
export function repairLock(text) {
  const lock = JSON.parse(text);
  let added = 0;
  for (const [path, pkg] of Object.entries(lock.packages)) {
    for (const [dep, version] of Object.entries(pkg.optionalDependencies ?? {})) {
      const m = PLATFORM.exec(dep);
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
    Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : npmOrder(a, b))),
  );
  return { text: JSON.stringify(lock, null, 2) + '\n', added };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const check = process.argv.includes('--check');
  const file = process.argv.slice(2).find((a) => a !== '--check') ?? 'package-lock.json';
  const before = readFileSync(file, 'utf8');
  const { text, added } = repairLock(before);
  if (check) {
    if (text !== before) {
      console.error(`${file} is not in repaired form: run npm run lock:fix and commit it`);
      process.exit(1);
    }
  } else {
    writeFileSync(file, text);
    console.log(`added ${added} entries`);
  }
}
