// Setup honesty: the circuit artifacts a process proves or verifies with must be the ones the
// manifest names (sha256, not size), and production refuses the project's development ceremony
// unless the operator says, with ALLOW_INSECURE_CIRCUITS=true, that forgeable proofs are acceptable.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { env, isProduction } from '../platform/env';
import { artifactPaths, artifactsDir, loadManifest } from './artifacts';
import type { Manifest } from './artifacts';
import { StartupFailure } from '../platform/failures';

export interface CircuitSetup {
  /** The keys come from a setup whose maker could forge proofs (the committed development ptau). */
  insecure: boolean;
  /** ALLOW_INSECURE_CIRCUITS: the operator accepts an insecure setup in production. */
  allowInsecureCircuits: boolean;
  ptau: { file: string; power: number };
}

/** The committed development file says so in its name as well as in the manifest's flag. */
const isInsecure = (m: Manifest) => m.ptau.insecure || /INSECURE/i.test(m.ptau.file);

export function circuitSetup(): CircuitSetup {
  const manifest = loadManifest();
  return {
    insecure: isInsecure(manifest),
    allowInsecureCircuits: env.ALLOW_INSECURE_CIRCUITS,
    ptau: { file: manifest.ptau.file, power: manifest.ptau.power },
  };
}

/** What every proof verification result carries: whether proofs under these keys could be forged. */
export const insecureSetup = (): boolean => circuitSetup().insecure;

/** A process must not start with these artifacts: it ends with this one line, which says the fix too. */
export class CircuitSetupRefused extends StartupFailure {
  constructor(message: string) {
    super(message, 'see the line above', true);
    this.name = 'CircuitSetupRefused';
  }
}

function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}

// Readiness is polled: a file is hashed again only when its size, mtime or inode changed.
const hashed = new Map<string, { key: string; sha256: string }>();

async function fileSha256(path: string, cached: boolean): Promise<string> {
  const s = await stat(path);
  const key = `${s.size}:${s.mtimeMs}:${s.ino}`;
  const hit = hashed.get(path);
  if (cached && hit?.key === key) return hit.sha256;
  const sha256 = await sha256File(path);
  hashed.set(path, { key, sha256 });
  return sha256;
}

/** Every artifact of every circuit in the manifest against its recorded sha256; the problems found. */
export async function artifactProblems(options: { cached?: boolean } = {}): Promise<string[]> {
  let manifest: Manifest;
  try {
    manifest = loadManifest();
  } catch (err) {
    return [(err as Error).message];
  }
  const circuits = Object.keys(manifest.circuits);
  if (circuits.length === 0) return ['the manifest lists no circuits'];
  const problems: string[] = [];
  await Promise.all(
    circuits.map(async (circuit) => {
      const entry = manifest.circuits[circuit]!;
      const paths = artifactPaths(circuit);
      for (const kind of ['wasm', 'zkey', 'vkey'] as const) {
        const actual = await fileSha256(paths[kind], options.cached ?? false).catch(() => undefined);
        if (actual === undefined) problems.push(`${circuit}.${kind} is missing`);
        else if (actual !== entry[kind].sha256)
          problems.push(`${circuit}.${kind} sha256 differs from the manifest`);
      }
    }),
  );
  return problems.sort();
}

const insecureLine = (m: Manifest) =>
  `Refusing to start in production: the circuit keys in ${artifactsDir()} come from the insecure development setup ` +
  `(${m.ptau.file}, one local contribution: whoever made it can forge proofs). Build real artifacts with ` +
  `CIRCUIT_PTAU=<a .ptau file from a public powers-of-tau ceremony> npm run circuits:build, ` +
  `or set ALLOW_INSECURE_CIRCUITS=true to run with forgeable proofs.`;

/**
 * For every process that proves or verifies, before it serves: the artifacts match the manifest's
 * hashes, and production does not run the development setup unless ALLOW_INSECURE_CIRCUITS=true.
 */
export async function assertCircuitSetup(): Promise<CircuitSetup> {
  let manifest: Manifest;
  try {
    manifest = loadManifest();
  } catch (err) {
    throw new CircuitSetupRefused(`Refusing to start: ${(err as Error).message}`);
  }
  const problems = await artifactProblems();
  if (problems.length > 0) {
    throw new CircuitSetupRefused(
      `Refusing to start: the circuit artifacts in ${artifactsDir()} do not match their manifest (${problems.join('; ')}); ` +
        `restore them or rebuild with npm run circuits:build.`,
    );
  }
  const setup = circuitSetup();
  if (setup.insecure && isProduction(env) && !setup.allowInsecureCircuits) {
    throw new CircuitSetupRefused(insecureLine(manifest));
  }
  return setup;
}

/** The readiness check: hashes (re-read when a file changes) and the production setup rule. */
export async function circuitReadiness(): Promise<{
  ok: boolean;
  detail: string;
  insecureSetup?: boolean;
  allowInsecureCircuits?: boolean;
}> {
  let setup: CircuitSetup;
  try {
    setup = circuitSetup();
  } catch (err) {
    return { ok: false, detail: (err as Error).message };
  }
  const problems = await artifactProblems({ cached: true });
  const flags = { insecureSetup: setup.insecure, allowInsecureCircuits: setup.allowInsecureCircuits };
  if (problems.length > 0) return { ok: false, detail: problems.join('; '), ...flags };
  const circuits = Object.keys(loadManifest().circuits).join(', ');
  if (!setup.insecure) return { ok: true, detail: `${circuits} (sha256 match the manifest)`, ...flags };
  const refused = isProduction(env) && !setup.allowInsecureCircuits;
  return {
    ok: !refused,
    detail: refused
      ? `${circuits}: insecure development setup (${setup.ptau.file}) in production`
      : `${circuits} (sha256 match the manifest; INSECURE development setup ${setup.ptau.file}${
          setup.allowInsecureCircuits ? ', allowed by ALLOW_INSECURE_CIRCUITS' : ''
        }: proofs are forgeable)`,
    ...flags,
  };
}
