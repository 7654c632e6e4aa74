// How a test starts one of the Procfile's process types: as the Procfile runs it, plain node on the build
// in dist/ (test/setup/global.ts builds it once a run, as a deployment's `npm run build` does).
import { readFileSync } from 'node:fs';

export type ProcessType = 'release' | 'web' | 'worker' | 'prover';

const procfile = Object.fromEntries(
  [...readFileSync('Procfile', 'utf8').matchAll(/^(\w+): node (.+)$/gm)].map((m) => [
    m[1]!,
    m[2]!.split(' '),
  ]),
) as Partial<Record<string, string[]>>;

/** The node arguments of a process type's Procfile line (`--enable-source-maps dist/api/main.js`). */
export function processArgs(type: ProcessType): string[] {
  const args = procfile[type];
  if (!args) throw new Error(`the Procfile has no ${type} process`);
  return [...args];
}
