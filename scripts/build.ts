// `npm run build`: each production process (the Procfile's release, web, worker and prover), and each
// module one of them starts apart from itself (the web's verify-pool task module, the native prover's
// loader, every migration), bundled into one ESM file under dist/ at its source's path, with a source
// map, for plain `node --enable-source-maps`. Dependencies stay in node_modules, imported as they are.
// esbuild is the compiler tsx uses; it bundles, it does not check types (npm run typecheck does).
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
export const processEntries = [
  'workers/release.ts',
  'api/main.ts',
  'workers/main.ts',
  'workers/prover/main.ts',
];
const started = [
  'api/offload/tasks.ts',
  'native-prover/index.ts',
  ...readdirSync(join(root, 'migrations'))
    .filter((f) => /^\d{14}_[\w-]+\.ts$/.test(f))
    .map((f) => `migrations/${f}`),
];

/** Builds dist/ afresh; returns the files written. */
export async function buildDist({ quiet = false }: { quiet?: boolean } = {}): Promise<string[]> {
  const outdir = join(root, 'dist');
  rmSync(outdir, { recursive: true, force: true });
  const t0 = performance.now();
  const result = await build({
    absWorkingDir: root,
    entryPoints: [...processEntries, ...started],
    outdir,
    outbase: '.',
    bundle: true,
    // Each entry whole: a module's import.meta.url is its own entry's, and the Procfile's `is this the
    // entry point` checks hold in exactly one bundle each.
    splitting: false,
    platform: 'node',
    format: 'esm',
    target: 'node20.19',
    packages: 'external',
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: quiet ? 'error' : 'warning',
    metafile: true,
  });
  const files = Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js'));
  if (!quiet)
    process.stdout.write(
      `built ${files.length} files into dist/ in ${Math.round(performance.now() - t0)} ms: ${processEntries
        .map((e) => `dist/${e.replace(/\.ts$/, '.js')}`)
        .join(', ')}\n`,
    );
  return files;
}

if (import.meta.url === `file://${process.argv[1]}`) await buildDist();
