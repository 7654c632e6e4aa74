// What the circuit artifacts are made from (sources, includes, compiler) and the check that the
// committed artifacts still match it: used by build.ts, check.ts and the tests.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import * as snarkjs from 'snarkjs';
import { sha256Hex } from '../shared/platform/crypto';
import { env } from '../shared/platform/env';
import { blake2b512File, readTranscript, verifyZkey } from '../shared/zk/ceremony';
import { ceremonyProblems } from '../shared/zk/setup';
import { artifactPaths, artifactsDir, manifestPath, manifestSchema } from '../shared/zk/artifacts';
import type { Manifest } from '../shared/zk/artifacts';
import { policies } from '../shared/zk/policies';
import type { PolicyDefinition } from '../shared/zk/policies';
import { BALLOT_CIRCUIT, BALLOT_PUBLIC_SIGNALS } from '../shared/governance/ballot-protocol';
import {
  CREDENTIALED_APPROVAL_CIRCUIT,
  CREDENTIALED_APPROVAL_PUBLIC_SIGNALS,
} from '../shared/workflows/approval-protocol';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));
export const circuitsDir = join(repoRoot, 'circuits');
export const libraryDirs = [join(repoRoot, 'node_modules')];

/** --O2 folds linear constraints away; only the policy-id and result pins stay linear. */
export const compilerFlags = ['--O2'];

const packageVersion = (name: string): string =>
  (
    JSON.parse(readFileSync(join(repoRoot, 'node_modules', name, 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;

export const compilerVersion = () => `circom2 ${packageVersion('circom2')}`;
export const snarkjsVersion = () => packageVersion('snarkjs');

export interface SourceFile {
  /** Path relative to the repository, or to node_modules for libraries (machine-independent). */
  key: string;
  path: string;
}

const includePattern = /^\s*include\s+"([^"]+)"\s*;/gm;

/** Resolves includes the way circom does: beside the including file first, then the library dirs. */
function resolveInclude(from: string, target: string): string {
  for (const base of [dirname(from), ...libraryDirs]) {
    const candidate = resolve(base, target);
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(`${relative(repoRoot, from)}: cannot resolve include "${target}"`);
}

function sourceKey(path: string): string {
  for (const lib of libraryDirs) {
    const rel = relative(lib, path);
    if (!rel.startsWith('..')) return rel;
  }
  return relative(repoRoot, path);
}

/** The circuit's main file and everything it includes, transitively, sorted by key. */
export function circuitSources(circuit: string): SourceFile[] {
  const seen = new Map<string, SourceFile>();
  const visit = (path: string) => {
    if (seen.has(path)) return;
    seen.set(path, { key: sourceKey(path), path });
    const text = readFileSync(path, 'utf8');
    for (const match of text.matchAll(includePattern)) visit(resolveInclude(path, match[1]!));
  };
  visit(join(circuitsDir, `${circuit}.circom`));
  return [...seen.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** sha256 over the compiler, its flags and every source file's key and content. */
export function sourceHash(circuit: string): string {
  const lines = [compilerVersion(), compilerFlags.join(' ')];
  for (const file of circuitSources(circuit)) lines.push(`${file.key} ${sha256Hex(readFileSync(file.path))}`);
  return sha256Hex(lines.join('\n'));
}

export const fileSha256 = (path: string) => sha256Hex(readFileSync(path));

export interface CheckOptions {
  /** Also re-derive each verification key from its zkey (about a second per circuit). */
  deep?: boolean;
  /**
   * Also verify each zkey against its r1cs and the powers of tau as `snarkjs zkey verify` does (seconds
   * per circuit): needs circuits/build/<circuit>.r1cs (npm run circuits:build) and the ptau file.
   */
  ceremony?: boolean;
  /** Where a skipped ceremony verification is said. */
  note?: (line: string) => void;
  /** Where the r1cs files are; default circuits/build. */
  r1csDir?: string;
}

/**
 * Problems found between the sources, the manifest and the committed artifacts; empty when all
 * match. A source edited without a rebuild, or keys swapped or edited, shows up here.
 */
export async function checkArtifacts(options: CheckOptions = {}): Promise<string[]> {
  const problems: string[] = [];
  let manifest: Manifest;
  try {
    manifest = manifestSchema.parse(JSON.parse(readFileSync(manifestPath(), 'utf8')));
  } catch (err) {
    return [`manifest ${manifestPath()} is missing or malformed: ${(err as Error).message}`];
  }
  if (manifest.compiler !== compilerVersion()) {
    problems.push(`manifest was built with ${manifest.compiler}, installed is ${compilerVersion()}`);
  }
  const ptauPath = env.CIRCUIT_PTAU ? resolve(env.CIRCUIT_PTAU) : join(artifactsDir(), manifest.ptau.file);
  const ptauPresent = existsSync(ptauPath);
  if (ptauPresent && fileSha256(ptauPath) !== manifest.ptau.sha256) {
    problems.push(`${manifest.ptau.file}: sha256 differs from the manifest`);
  } else if (ptauPresent && (await blake2b512File(ptauPath)) !== manifest.ptau.blake2b512) {
    problems.push(`${manifest.ptau.file}: blake2b-512 differs from the manifest`);
  }
  problems.push(...ceremonyProblems(manifest));
  const expected: Array<{ circuit: string; publicSignals: readonly string[]; policy?: PolicyDefinition }> = [
    ...Object.values(policies).map((policy) => ({
      circuit: policy.circuit,
      publicSignals: policy.publicSignals,
      policy,
    })),
    { circuit: BALLOT_CIRCUIT, publicSignals: BALLOT_PUBLIC_SIGNALS },
    { circuit: CREDENTIALED_APPROVAL_CIRCUIT, publicSignals: CREDENTIALED_APPROVAL_PUBLIC_SIGNALS },
  ];
  for (const { circuit: name, publicSignals, policy } of expected) {
    const entry = manifest.circuits[name];
    if (!entry) {
      problems.push(`${name}: missing from the manifest`);
      continue;
    }
    if (policy && (entry.policyId !== policy.id || entry.policyFieldId !== String(policy.fieldId))) {
      problems.push(`${name}: policy id in the manifest differs from the registry`);
    }
    if (!isDeepStrictEqual(entry.publicSignals, [...publicSignals])) {
      problems.push(`${name}: public signals ${entry.publicSignals.join(',')} differ from the registry`);
    }
    if (entry.sourceSha256 !== sourceHash(name)) {
      problems.push(`${name}: sources changed since the artifacts were built; run npm run circuits:build`);
    }
    const paths = artifactPaths(name);
    for (const kind of ['wasm', 'zkey', 'vkey'] as const) {
      const path = paths[kind];
      if (!existsSync(path)) problems.push(`${name}: ${kind} file ${relative(repoRoot, path)} is missing`);
      else if (fileSha256(path) !== entry[kind].sha256)
        problems.push(`${name}: ${kind} sha256 differs from the manifest`);
    }
    if (!existsSync(paths.vkey)) continue;
    const vkey = JSON.parse(readFileSync(paths.vkey, 'utf8')) as Record<string, unknown>;
    if (vkey.nPublic !== entry.nPublic) problems.push(`${name}: vkey nPublic differs from the manifest`);
    if (options.ceremony && existsSync(paths.zkey)) {
      // The r1cs committed beside the keys, or the one npm run circuits:build made.
      const r1cs =
        options.r1csDir === undefined && existsSync(paths.r1cs)
          ? paths.r1cs
          : join(options.r1csDir ?? join(circuitsDir, 'build'), `${name}.r1cs`);
      if (!existsSync(r1cs) || fileSha256(r1cs) !== entry.r1csSha256 || !ptauPresent) {
        options.note?.(
          `${name}: ceremony not re-verified (${!ptauPresent ? `no ${ptauPath}` : 'no matching circuits/build r1cs: npm run circuits:build'})`,
        );
      } else {
        const verified = await verifyZkey(r1cs, ptauPath, paths.zkey);
        if (!verified.ok) problems.push(`${name}: zkey does not verify against its r1cs and powers of tau`);
        else {
          const transcript = readTranscript(name);
          const listed = transcript?.contributions.map((c) => c.hash).join();
          if (listed !== verified.contributions.map((c) => c.hash).join())
            problems.push(`${name}: the transcript's contributions differ from the zkey's`);
        }
      }
    }
    if (options.deep && existsSync(paths.zkey)) {
      const derived = await snarkjs.zKey.exportVerificationKey(paths.zkey);
      if (!isDeepStrictEqual(JSON.parse(JSON.stringify(derived)), vkey)) {
        problems.push(`${name}: vkey is not the verification key of the committed zkey`);
      }
    }
  }
  return problems;
}
