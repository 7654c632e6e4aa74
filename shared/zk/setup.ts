// Setup honesty: the circuit artifacts a process proves or verifies with must be the ones the
// manifest names (sha256, not size); the powers of tau counts as a ceremony only when its blake2b-512
// hash is a published ceremony file's (circuits/ceremony/ptau-hashes.json) or pinned by the operator
// (PTAU_PINNED_HASHES); and production refuses any other powers of tau, keys without a phase-2
// transcript that matches them, and keys that do not verify against their r1cs and the powers of tau
// file itself (what `snarkjs zkey verify` checks: the manifest's word is not taken), unless the
// operator says, with ALLOW_INSECURE_CIRCUITS=true, that forgeable proofs are acceptable.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { env, isProduction } from '../platform/env';
import { artifactPaths, artifactsDir, loadManifest } from './artifacts';
import type { Manifest } from './artifacts';
import {
  blake2b512File,
  ptauProvenance,
  readTranscript,
  snarkjsPackageVersion,
  transcriptProblems,
  verifyZkey,
} from './ceremony';
import type { Db } from '../platform/db/knex';
import { StartupFailure } from '../platform/failures';

export interface CircuitSetup {
  /** The powers of tau is neither a published ceremony file nor pinned: its maker could forge proofs. */
  insecure: boolean;
  /** ALLOW_INSECURE_CIRCUITS: the operator accepts an insecure setup in production. */
  allowInsecureCircuits: boolean;
  ptau: {
    file: string;
    power: number;
    blake2b512: string;
    /** Why it is trusted: a published ceremony file's hash, a PTAU_PINNED_HASHES entry, or neither. */
    provenance: 'published' | 'pinned' | 'unaccepted';
  };
  /** In production: when this process checked the keys against their r1cs and that file, and which. */
  keysChecked?: KeysCheck;
}

export function circuitSetup(): CircuitSetup {
  const manifest = loadManifest();
  const provenance = ptauProvenance(manifest.ptau.blake2b512);
  const checked = currentKeysCheck(manifest);
  return {
    insecure: !provenance.accepted,
    allowInsecureCircuits: env.ALLOW_INSECURE_CIRCUITS,
    ptau: {
      file: manifest.ptau.file,
      power: manifest.ptau.power,
      blake2b512: manifest.ptau.blake2b512,
      provenance: provenance.accepted ? provenance.by : 'unaccepted',
    },
    ...(checked ? { keysChecked: checked } : {}),
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
  m.ptau.insecure
    ? `Refusing to start in production: the circuit keys in ${artifactsDir()} come from the insecure development setup ` +
      `(${m.ptau.file}, one local contribution: whoever made it can forge proofs). Build real artifacts with ` +
      `CIRCUIT_PTAU=<a .ptau file from a public powers-of-tau ceremony> npm run circuits:build, ` +
      `or set ALLOW_INSECURE_CIRCUITS=true to run with forgeable proofs.`
    : `Refusing to start in production: the powers of tau ${m.ptau.file} of the circuit keys in ${artifactsDir()} ` +
      `(blake2b-512 ${m.ptau.blake2b512}) is not a published ceremony file (circuits/ceremony/ptau-hashes.json); ` +
      `rebuild with CIRCUIT_PTAU=<a powersOfTau28_hez_final_XX.ptau listed there> npm run circuits:build, ` +
      `or, if you trust the ceremony that made this file, pin it with PTAU_PINNED_HASHES=${m.ptau.blake2b512}, ` +
      `or set ALLOW_INSECURE_CIRCUITS=true to run with forgeable proofs.`;

/**
 * Each circuit's phase-2 transcript (`<circuit>.ceremony.json`) against the manifest: it must end in
 * the manifest's zkey and vkey and start from its r1cs and powers of tau. The cryptographic check of the
 * chain (snarkjs zKey.verifyFromR1cs) ran when the transcript was written, and runs again in
 * `npm run circuits:check`: it takes seconds per circuit and needs the r1cs, which is not deployed.
 */
export function ceremonyProblems(manifest: Manifest = loadManifest()): string[] {
  const problems: string[] = [];
  for (const [circuit, entry] of Object.entries(manifest.circuits)) {
    let transcript;
    try {
      transcript = readTranscript(circuit);
    } catch (err) {
      problems.push((err as Error).message);
      continue;
    }
    if (!transcript) {
      problems.push(`${circuit}: no ceremony transcript (${circuit}.ceremony.json)`);
      continue;
    }
    problems.push(
      ...transcriptProblems(transcript, {
        circuit,
        r1csSha256: entry.r1csSha256,
        zkeySha256: entry.zkey.sha256,
        vkeySha256: entry.vkey.sha256,
        ptauBlake2b512: manifest.ptau.blake2b512,
      }),
    );
  }
  return problems.sort();
}

const ceremonyLine = (problems: string[]) =>
  `Refusing to start in production: the circuit keys in ${artifactsDir()} have no phase-2 transcript that matches them ` +
  `(${problems.join('; ')}); run the ceremony and finalize it (npm run ceremony -- finalize, docs/zk.md), ` +
  `or record the verified transcript of the built keys with npm run ceremony -- transcript <circuit>, ` +
  `or set ALLOW_INSECURE_CIRCUITS=true to run with forgeable proofs.`;

/** What a production process checked of its keys at start, for readiness to say. */
export interface KeysCheck {
  /** When the check ended (the oldest circuit's, for a recorded one). */
  checkedAt: string;
  tool: 'snarkjs zKey.verifyFromR1cs';
  /** The powers of tau file checked against: its name and blake2b-512 (never where it was read). */
  ptau: { file: string; blake2b512: string };
  circuits: string[];
  ms: number;
  /**
   * Who checked: `this process`, or the process type (release, web, prover) whose check of the same
   * files (zkey, r1cs and ptau hashes) this one took from the database.
   */
  by: string;
}

/** A check of these exact files, by hash: what circuit_key_checks keeps per circuit. */
interface CheckRow {
  circuit: string;
  zkey_sha256: string;
  r1cs_sha256: string;
  ptau_blake2b512: string;
  tool: string;
  snarkjs: string;
  checked_by: string;
  checked_at: Date;
  ms: number;
}

/** Records a check that held, one row per circuit, keyed by the hashes of the files it covered. */
async function recordKeysCheck(db: Db, manifest: Manifest, check: KeysCheck, by: string): Promise<void> {
  const rows: CheckRow[] = check.circuits.map((circuit) => ({
    circuit,
    zkey_sha256: manifest.circuits[circuit]!.zkey.sha256,
    r1cs_sha256: manifest.circuits[circuit]!.r1csSha256,
    ptau_blake2b512: check.ptau.blake2b512,
    tool: check.tool,
    snarkjs: snarkjsPackageVersion(),
    checked_by: by,
    checked_at: new Date(check.checkedAt),
    ms: check.ms,
  }));
  await db('circuit_key_checks')
    .insert(rows)
    .onConflict(['circuit', 'zkey_sha256', 'r1cs_sha256', 'ptau_blake2b512'])
    .merge(['checked_by', 'checked_at', 'ms', 'snarkjs']);
}

/**
 * An earlier check of every circuit of the manifest, by the hashes of its zkey (which artifactProblems
 * has just found on disk), its r1cs and the powers of tau: undefined unless every circuit has one.
 */
async function recordedKeysCheck(db: Db, manifest: Manifest): Promise<KeysCheck | undefined> {
  const circuits = Object.keys(manifest.circuits).sort();
  const rows = (await db('circuit_key_checks')
    .where('ptau_blake2b512', manifest.ptau.blake2b512)
    .whereIn('circuit', circuits)) as CheckRow[];
  const found = circuits.map((c) =>
    rows.find(
      (r) =>
        r.circuit === c &&
        r.zkey_sha256 === manifest.circuits[c]!.zkey.sha256 &&
        r.r1cs_sha256 === manifest.circuits[c]!.r1csSha256,
    ),
  );
  if (found.some((r) => !r)) return undefined;
  const oldest = found.reduce((a, r) => (r!.checked_at < a!.checked_at ? r : a))!;
  return {
    checkedAt: new Date(oldest.checked_at).toISOString(),
    tool: 'snarkjs zKey.verifyFromR1cs',
    ptau: { file: manifest.ptau.file, blake2b512: manifest.ptau.blake2b512 },
    circuits,
    ms: found.reduce((n, r) => n + r!.ms, 0),
    by: oldest.checked_by,
  };
}

// The last check of the keys and the manifest it covered: the loaded manifest is one object until it is
// read again, and another manifest is checked anew.
let keysChecked: { manifest: Manifest; check: KeysCheck } | undefined;

/** This process's check of its keys, when it covers the manifest loaded now. */
function currentKeysCheck(manifest: Manifest): KeysCheck | undefined {
  return keysChecked?.manifest === manifest ? keysChecked.check : undefined;
}

/** Where the powers of tau file the keys are checked against is read: CIRCUIT_PTAU, or beside the artifacts. */
const ptauPathOf = (m: Manifest): string =>
  env.CIRCUIT_PTAU ? resolve(env.CIRCUIT_PTAU) : join(artifactsDir(), m.ptau.file);

const refusedLine = (what: string) =>
  `Refusing to start in production: ${what}; ` +
  `or set ALLOW_INSECURE_CIRCUITS=true to run with forgeable proofs.`;

/**
 * Checks each circuit's zkey against its r1cs and the powers of tau file the manifest names, as
 * `snarkjs zkey verify` does (zKey.verifyFromR1cs: the keys were made from this constraint system and
 * this ceremony's points, and every phase-2 contribution holds). The file must be at hand and hash to
 * the manifest's blake2b-512: a manifest naming a published ceremony whose file is not here, or is
 * another file, is refused, and so is a zkey that does not come from it. One line each, naming the fix.
 */
export async function checkKeysAgainstCeremony(manifest: Manifest = loadManifest()): Promise<KeysCheck> {
  const started = performance.now();
  const dir = artifactsDir();
  const ptauPath = ptauPathOf(manifest);
  const named = `${manifest.ptau.file} (blake2b-512 ${manifest.ptau.blake2b512.slice(0, 16)}…)`;
  if (!existsSync(ptauPath))
    throw new CircuitSetupRefused(
      refusedLine(
        `the manifest says the circuit keys in ${dir} come from the powers of tau ${named}, and that file is not at ${ptauPath} to check them against; ` +
          `put it there or set CIRCUIT_PTAU to its path`,
      ),
    );
  const actual = await blake2b512File(ptauPath);
  if (actual !== manifest.ptau.blake2b512)
    throw new CircuitSetupRefused(
      refusedLine(
        `the manifest says the circuit keys in ${dir} come from the powers of tau ${named}, but ${ptauPath} is another file (blake2b-512 ${actual.slice(0, 16)}…): ` +
          `the keys cannot be checked against the ceremony the manifest names; put that ceremony's file there or set CIRCUIT_PTAU to its path`,
      ),
    );
  const circuits = Object.keys(manifest.circuits).sort();
  // Every constraint system first (a hash each), so a missing one is said before seconds of checks.
  for (const circuit of circuits) {
    const paths = artifactPaths(circuit);
    const r1cs = existsSync(paths.r1cs) ? await fileSha256(paths.r1cs, true) : undefined;
    if (r1cs !== manifest.circuits[circuit]!.r1csSha256)
      throw new CircuitSetupRefused(
        refusedLine(
          `${circuit}'s constraint system ${paths.r1cs} is ${r1cs === undefined ? 'missing' : 'not the one the manifest names (sha256 differs)'}, so its keys cannot be checked against ${manifest.ptau.file}; ` +
            `restore it from the build (npm run circuits:build writes it beside the keys)`,
        ),
      );
  }
  // One at a time: each verification holds the circuit's points in memory.
  for (const circuit of circuits) {
    const paths = artifactPaths(circuit);
    const verified = await verifyZkey(paths.r1cs, ptauPath, paths.zkey);
    if (!verified.ok)
      throw new CircuitSetupRefused(
        refusedLine(
          `${circuit}.zkey does not come from the powers of tau ${named} and its r1cs (snarkjs zkey verify refuses it): ` +
            `the manifest's word that these keys come from that ceremony is not true of them; rebuild with CIRCUIT_PTAU=<that file> npm run circuits:build and run the phase-2 ceremony (docs/zk.md)`,
        ),
      );
  }
  const check: KeysCheck = {
    checkedAt: new Date().toISOString(),
    tool: 'snarkjs zKey.verifyFromR1cs',
    ptau: { file: manifest.ptau.file, blake2b512: actual },
    circuits,
    ms: Math.round(performance.now() - started),
    by: 'this process',
  };
  keysChecked = { manifest, check };
  return check;
}

/**
 * For every process that proves or verifies, before it serves: the artifacts match the manifest's
 * hashes, and production runs only keys from an accepted powers of tau with a matching transcript,
 * checked against their r1cs and that powers of tau file (checkKeysAgainstCeremony), unless
 * ALLOW_INSECURE_CIRCUITS=true.
 */
export async function assertCircuitSetup(
  options: {
    /**
     * Where checks are recorded: a check of the same files by an earlier process (the release, most
     * often) is taken from here instead of run again, and a check this process runs is recorded.
     */
    db?: Db;
    /** This process's type, as a recorded check names its checker. */
    process?: string;
  } = {},
): Promise<CircuitSetup> {
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
  if (isProduction(env) && !setup.allowInsecureCircuits) {
    if (setup.insecure) throw new CircuitSetupRefused(insecureLine(manifest));
    const ceremony = ceremonyProblems(manifest);
    if (ceremony.length > 0) throw new CircuitSetupRefused(ceremonyLine(ceremony));
    if (!currentKeysCheck(manifest)) {
      const recorded = options.db ? await recordedKeysCheck(options.db, manifest) : undefined;
      if (recorded) keysChecked = { manifest, check: recorded };
      else {
        const check = await checkKeysAgainstCeremony(manifest);
        if (options.db) await recordKeysCheck(options.db, manifest, check, options.process ?? 'unnamed');
      }
    }
    return circuitSetup();
  }
  return setup;
}

/**
 * The readiness check: hashes (re-read when a file changes), the production setup rule, and, in
 * production, what was checked of the keys against their r1cs and powers of tau at start, and when.
 */
export async function circuitReadiness(): Promise<{
  ok: boolean;
  detail: string;
  insecureSetup?: boolean;
  allowInsecureCircuits?: boolean;
  keysChecked?: KeysCheck;
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
  const enforced = isProduction(env) && !setup.allowInsecureCircuits;
  if (!setup.insecure) {
    const ceremony = enforced ? ceremonyProblems() : [];
    if (ceremony.length > 0) return { ok: false, detail: ceremony.join('; '), ...flags };
    const checked = currentKeysCheck(loadManifest());
    if (enforced && !checked)
      return {
        ok: false,
        detail: `${circuits}: keys not checked against their r1cs and powers of tau in this process`,
        ...flags,
      };
    return {
      ok: true,
      detail: checked
        ? `${circuits} (sha256 match the manifest; keys checked against their r1cs and ${checked.ptau.file} at ${checked.checkedAt}${checked.by === 'this process' ? '' : ` by the ${checked.by} process, recorded for these files`})`
        : `${circuits} (sha256 match the manifest)`,
      ...flags,
      ...(checked ? { keysChecked: checked } : {}),
    };
  }
  return {
    ok: !enforced,
    detail: enforced
      ? `${circuits}: insecure setup (${setup.ptau.file}, powers of tau neither published nor pinned) in production`
      : `${circuits} (sha256 match the manifest; INSECURE setup ${setup.ptau.file}${
          setup.allowInsecureCircuits ? ', allowed by ALLOW_INSECURE_CIRCUITS' : ''
        }: proofs are forgeable)`,
    ...flags,
  };
}
