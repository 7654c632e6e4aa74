// The checkout's own files, found alike from the TypeScript sources (run through tsx) and from the build
// (`npm run build`: each process bundled into one file under dist/, where a module's import.meta.url is
// its bundle's, not its source's). Code that reads a file of the checkout or starts one of its modules
// in a thread names it from the root here, never relative to its own location.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = fileURLToPath(import.meta.url);

/** True in a process started from dist/ (`node dist/…`), false under tsx. */
export const runsBuilt = !here.endsWith('.ts');

function findRoot(): string {
  // The sources sit two folders down (shared/platform); a bundle one to three (dist/api/main.js,
  // dist/workers/prover/main.js): the root is the first folder up that holds package.json.
  for (let dir = dirname(here); ;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${here}`);
    dir = up;
  }
}

/** The checkout's root folder. */
export const projectRoot = findRoot();

/** A file or folder of the checkout, from its root ('circuits/artifacts', 'api/pages/assets/site.css'). */
export const projectPath = (...parts: string[]): string => join(projectRoot, ...parts);

/**
 * The module a source file becomes where this process runs: the source itself under tsx, its bundle in
 * dist/ (same path, `.js`) in a built process. For modules started apart from the process's own bundle:
 * a thread's task module, an optional addon's loader.
 */
export function moduleFile(source: string): URL {
  const path = runsBuilt
    ? join(projectRoot, 'dist', source.replace(/\.ts$/, '.js'))
    : join(projectRoot, source);
  return pathToFileURL(path);
}
