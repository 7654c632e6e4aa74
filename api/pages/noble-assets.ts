// The browser's copy of @noble/curves' ristretto255 for the voting page, served as the package's own ES
// modules (no bundler): the files ed25519.js needs, found by following its imports once at start, under
// /circuits/noble/<package>/<file>, with an import map for the bare @noble/hashes specifiers.
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const roots: Record<string, string> = {
  curves: dirname(fileURLToPath(import.meta.resolve('@noble/curves/ed25519.js'))),
  hashes: dirname(fileURLToPath(import.meta.resolve('@noble/hashes/sha2.js'))),
};

const IMPORT = /(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]/g;

/** Every module ed25519.js reaches, as `<package>/<file>` → absolute path. */
function closure(): Map<string, string> {
  const files = new Map<string, string>();
  const stack: Array<[string, string]> = [['curves', 'ed25519.js']];
  while (stack.length) {
    const [pkg, file] = stack.pop()!;
    const key = `${pkg}/${file}`;
    if (files.has(key)) continue;
    const path = join(roots[pkg]!, file);
    files.set(key, path);
    for (const [, spec] of readFileSync(path, 'utf8').matchAll(IMPORT)) {
      if (spec!.startsWith('@noble/')) {
        const [name, ...rest] = spec!.slice('@noble/'.length).split('/');
        if (roots[name!]) stack.push([name!, rest.join('/')]);
      } else if (spec!.startsWith('.')) stack.push([pkg, normalize(join(dirname(file), spec!))]);
    }
  }
  return files;
}

export const NOBLE_PREFIX = '/circuits/noble/';
let served: Map<string, string> | undefined;
/** The served files: `curves/ed25519.js` → its path. */
export const nobleFiles = (): Map<string, string> => (served ??= closure());

const imports = JSON.stringify({
  imports: { '@noble/hashes/': `${NOBLE_PREFIX}hashes/`, '@noble/curves/': `${NOBLE_PREFIX}curves/` },
});
/**
 * The import map the page's module scripts need for @noble/curves' own imports of @noble/hashes: an
 * inline script to the page's policy, so it carries the response's nonce.
 */
export const nobleImportMap = (nonce: string): string =>
  `<script type="importmap" nonce="${nonce}">${imports}</script>`;
