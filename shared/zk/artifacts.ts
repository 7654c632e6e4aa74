// Where the circuit artifacts live and what the build manifest says about them.
import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { env } from '../platform/env';
import { projectPath } from '../platform/paths';

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

const artifactFile = z.object({
  file: z.string().min(1),
  sha256: sha256Hex,
  bytes: z.number().int().positive(),
});

export const circuitManifestSchema = z.object({
  circuit: z.string(),
  /** Blind-policy circuits only (the ballot circuit has none). */
  policyId: z.string().optional(),
  policyLabel: z.string().optional(),
  /** The policy id as the decimal field element the circuit pins its public signal to. */
  policyFieldId: z.string().regex(/^\d+$/).optional(),
  constraints: z.number().int().positive(),
  wires: z.number().int().positive(),
  privateInputs: z.number().int().nonnegative(),
  /** Number of public signals (outputs first, then public inputs) and their names in order. */
  nPublic: z.number().int().positive(),
  publicSignals: z.array(z.string()),
  /** sha256 over the circom sources, included library files and compiler flags. */
  sourceSha256: sha256Hex,
  sources: z.array(z.string()),
  r1csSha256: sha256Hex,
  wasm: artifactFile,
  zkey: artifactFile,
  vkey: artifactFile,
});

export const manifestSchema = z.object({
  version: z.literal(1),
  compiler: z.string(),
  compilerFlags: z.array(z.string()),
  snarkjs: z.string(),
  ptau: z.object({
    file: z.string(),
    sha256: sha256Hex,
    /** blake2b-512 of the whole file: what the published ceremony hashes and PTAU_PINNED_HASHES name. */
    blake2b512: z.string().regex(/^[0-9a-f]{128}$/),
    power: z.number().int().positive(),
    /**
     * True for the project's own development file: anyone who made it could forge proofs. Whether a
     * setup counts as secure is decided by blake2b512 (shared/zk/ceremony.ts), never by this flag alone.
     */
    insecure: z.boolean(),
  }),
  circuits: z.record(z.string(), circuitManifestSchema),
});

export type CircuitManifest = z.infer<typeof circuitManifestSchema>;
export type Manifest = z.infer<typeof manifestSchema>;

const defaultDir = projectPath('circuits/artifacts');

export function artifactsDir(): string {
  const dir = env.CIRCUIT_ARTIFACTS_DIR;
  if (!dir) return defaultDir;
  return isAbsolute(dir) ? dir : resolve(dir);
}

export const manifestPath = () => join(artifactsDir(), 'manifest.json');

export interface ArtifactPaths {
  wasm: string;
  zkey: string;
  vkey: string;
  /** The constraint system the zkey is checked against in production (its sha256 is the manifest's r1csSha256). */
  r1cs: string;
}

export function artifactPaths(circuit: string): ArtifactPaths {
  const dir = artifactsDir();
  return {
    wasm: join(dir, `${circuit}.wasm`),
    zkey: join(dir, `${circuit}.zkey`),
    vkey: join(dir, `${circuit}.vkey.json`),
    r1cs: join(dir, `${circuit}.r1cs`),
  };
}

let cached: Manifest | undefined;

/** The manifest written by `npm run circuits:build`, read once. */
export function loadManifest(): Manifest {
  if (cached) return cached;
  let raw: string;
  try {
    raw = readFileSync(manifestPath(), 'utf8');
  } catch {
    throw new Error(`Circuit manifest not found at ${manifestPath()}; run npm run circuits:build.`);
  }
  cached = manifestSchema.parse(JSON.parse(raw));
  return cached;
}

export function circuitManifest(circuit: string): CircuitManifest {
  const entry = loadManifest().circuits[circuit];
  if (!entry) throw new Error(`Circuit ${circuit} is missing from the manifest; run npm run circuits:build.`);
  return entry;
}

/** Forgets the cached manifest (after a rebuild in the same process). */
export function resetManifestCache(): void {
  cached = undefined;
}
