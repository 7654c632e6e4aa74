// Builds the blind-policy circuit artifacts: compiles each circuit, makes (once) the insecure
// development powers of tau unless CIRCUIT_PTAU names a ceremony file, runs the Groth16 setup,
// exports the verification keys and writes artifacts/manifest.json. Up-to-date circuits are left
// alone; `--force` rebuilds them all.
//   npm run circuits:build [-- --force]
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import * as snarkjs from 'snarkjs';
import { env } from '../shared/platform/env';
import { artifactPaths, artifactsDir, manifestPath, manifestSchema } from '../shared/zk/artifacts';
import type { CircuitManifest, Manifest } from '../shared/zk/artifacts';
import { policies, preparePolicyInput } from '../shared/zk/policies';
import type { PolicyDefinition, PolicyId } from '../shared/zk/policies';
import { ballotCircuitInput, createIdentity } from '../shared/governance/ballot-client';
import { BALLOT_CIRCUIT, BALLOT_PUBLIC_SIGNALS } from '../shared/governance/ballot-protocol';
import { terminateCurves } from '../shared/zk';
import { sampleQueryInput } from '../shared/credentials/sample';
import { issueCredential, newIssuerKey } from '../shared/credentials/issuer';
import { staffRoleSchema } from '../shared/credentials/schemas';
import { sha256Hex } from '../shared/platform/crypto';
import { credentialedApprovalInput } from '../shared/workflows/approval-client';
import {
  CREDENTIALED_APPROVAL_CIRCUIT,
  CREDENTIALED_APPROVAL_PUBLIC_SIGNALS,
} from '../shared/workflows/approval-protocol';
import {
  blake2b512File,
  makeTranscript,
  ptauProvenance,
  readTranscript,
  transcriptPath,
} from '../shared/zk/ceremony';
import {
  circuitSources,
  circuitsDir,
  compilerFlags,
  compilerVersion,
  fileSha256,
  repoRoot,
  snarkjsVersion,
  sourceHash,
} from './sources';

const execFileAsync = promisify(execFile);
const buildDir = join(circuitsDir, 'build');
const outDir = artifactsDir();
const force = process.argv.includes('--force');

const log = (line: string) => process.stdout.write(`${line}\n`);
// snarkjs narrates every step at info level; keep its warnings and errors only.
const quiet: snarkjs.Logger = {
  debug: () => {},
  info: () => {},
  warn: (m) => log(`  snarkjs: ${m}`),
  error: (m) => log(`  snarkjs: ${m}`),
};
// For checks expected to fail: wtns.check reports the failure through the logger it is given.
const silent: snarkjs.Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** Sample inputs that satisfy each policy, used to check the compiled constraints really bind. */
const samples: Record<PolicyId, unknown> = {
  threshold: { value: 10, threshold: 7 },
  range: { value: 5, low: 1, high: 9 },
  membership: { value: 3, set: [1, 2, 3] },
  credential: sampleQueryInput,
};

/** A context for the samples: any non-zero value, so zeroing it in the witness is a change. */
const SAMPLE_CONTEXT = 0x5eed_c0de_5eedn;

/** A circuit the build makes: each blind policy, and the anonymous ballot of governance. */
interface Target {
  circuit: string;
  publicSignals: readonly string[];
  /** Public signals that a changed witness value must make fail a constraint. */
  pins: readonly string[];
  /** An input that satisfies the circuit. */
  sample(): Promise<unknown>;
  policy?: PolicyDefinition;
}

const targets: Target[] = [
  ...Object.values(policies).map((policy) => ({
    circuit: policy.circuit,
    publicSignals: policy.publicSignals,
    // context wherever the policy takes one: it must be part of the constrained statement; a
    // credential query's issuer, schema, subject, time, revocation root and parameters too.
    pins: [
      'result',
      'policyId',
      'context',
      'issuerAx',
      'schemaId',
      'subject',
      'now',
      'revocationRoot',
      'parameterCommitments[0]',
    ].filter((n) => policy.publicSignals.includes(n)),
    sample: async () =>
      (await preparePolicyInput(policy.id, samples[policy.id], { context: SAMPLE_CONTEXT })).circuitInput,
    policy,
  })),
  {
    circuit: BALLOT_CIRCUIT,
    publicSignals: BALLOT_PUBLIC_SIGNALS,
    pins: BALLOT_PUBLIC_SIGNALS,
    sample: async () => {
      const [voter, other] = [await createIdentity(), await createIdentity()];
      return (await ballotCircuitInput(voter, [other.commitment, voter.commitment], 'prop_sample', 7n)).input;
    },
  },
  {
    circuit: CREDENTIALED_APPROVAL_CIRCUIT,
    publicSignals: CREDENTIALED_APPROVAL_PUBLIC_SIGNALS,
    pins: [
      'root',
      'nullifier',
      'scope',
      'message',
      'issuerAx',
      'schemaId',
      'now',
      'revocationRoot',
      'parameterCommitments[0]',
    ],
    // An underwriter of a two-member set, with a staff-role credential from a fixed development key.
    sample: async () => {
      const [me, other] = [await createIdentity(), await createIdentity()];
      const key = await newIssuerKey(
        'Sample staff directory (development)',
        Buffer.from(sha256Hex('proof-exchange sample staff directory'), 'hex'),
      );
      const credential = await issueCredential(key, {
        schema: staffRoleSchema,
        subject: me.commitment,
        validFrom: '2026-01-01T00:00:00Z',
        validUntil: '2036-01-01T00:00:00Z',
        fields: { role: 'underwriter', since: '2025-03-01' },
      });
      const target = {
        proofId: 'prf_sample',
        stage: 'approval',
        setId: 'aps_sample',
        contentHash: '00'.repeat(32),
        members: [other.commitment, me.commitment],
        credential: {
          what: 'a staff-role credential',
          schema: staffRoleSchema,
          terms: [{ field: 'role', op: 'eq' as const, value: 'underwriter' }],
          maxRevocationAge: 86_400,
          maxProofAge: 86_400,
        },
      };
      return (
        await credentialedApprovalInput({
          identity: me,
          target,
          credential,
          revocation: { revoked: ['1234567', '7654321'] },
        })
      ).input;
    },
  },
];

interface Compiled {
  target: Target;
  circuit: string;
  r1cs: string;
  wasm: string;
  sym: string;
  constraints: number;
  wires: number;
  privateInputs: number;
  nPublic: number;
  publicSignals: string[];
}

async function compile(target: Target): Promise<Compiled> {
  const { circuit } = target;
  const cli = join(repoRoot, 'node_modules', 'circom2', 'cli.js');
  const args = [cli, join('circuits', `${circuit}.circom`), ...compilerFlags, '--r1cs', '--wasm', '--sym'];
  args.push('-l', 'node_modules', '-o', relative(repoRoot, buildDir));
  try {
    await execFileAsync(process.execPath, args, { cwd: repoRoot, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`circom failed for ${circuit}:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
  const r1cs = join(buildDir, `${circuit}.r1cs`);
  const sym = join(buildDir, `${circuit}.sym`);
  const info = await snarkjs.r1cs.info(r1cs);
  const nPublic = info.nOutputs + info.nPubInputs;
  // The .sym file maps witness indices to signal names; 1..nPublic are the public signals.
  const names = new Map<number, string>();
  for (const line of readFileSync(sym, 'utf8').split('\n')) {
    const [, witness, , name] = line.split(',');
    if (name?.startsWith('main.') && !name.slice(5).includes('.')) names.set(Number(witness), name.slice(5));
  }
  const publicSignals = Array.from({ length: nPublic }, (_, i) => names.get(i + 1) ?? `#${i + 1}`);
  return {
    target,
    circuit,
    r1cs,
    sym,
    wasm: join(buildDir, `${circuit}_js`, `${circuit}.wasm`),
    constraints: info.nConstraints,
    wires: info.nVars,
    privateInputs: info.nPrvInputs,
    nPublic,
    publicSignals,
  };
}

/** The power recorded in a .ptau header (section 1: n8, q, power, ceremony power). */
function ptauPower(path: string): number {
  const buf = readFileSync(path);
  if (buf.subarray(0, 4).toString('latin1') !== 'ptau') throw new Error(`${path} is not a .ptau file`);
  let pos = 12;
  const sections = buf.readUInt32LE(8);
  for (let i = 0; i < sections; i++) {
    const type = buf.readUInt32LE(pos);
    const size = Number(buf.readBigUInt64LE(pos + 4));
    if (type === 1) {
      const n8 = buf.readUInt32LE(pos + 12);
      return buf.readUInt32LE(pos + 16 + n8);
    }
    pos += 12 + size;
  }
  throw new Error(`${path} has no header section`);
}

const devPtauName = (power: number) => `dev-INSECURE-pot${power}.ptau`;

/** The ceremony file from CIRCUIT_PTAU, or the development file, made once if none is big enough. */
async function selectPtau(power: number): Promise<Manifest['ptau'] & { path: string }> {
  if (env.CIRCUIT_PTAU) {
    const path = resolve(env.CIRCUIT_PTAU);
    const filePower = ptauPower(path);
    if (filePower < power)
      throw new Error(`CIRCUIT_PTAU has power ${filePower}; the circuits need ${power}.`);
    // A ceremony file counts as one only by its hash (published or pinned), never by its name: the
    // processes decide from the recorded hash; `insecure` marks the project's development file only.
    const blake2b512 = await blake2b512File(path);
    if (!ptauProvenance(blake2b512).accepted)
      log(
        `  ${basename(path)}: blake2b-512 ${blake2b512} is neither a published ceremony file nor in PTAU_PINNED_HASHES; production will refuse it`,
      );
    return {
      path,
      file: basename(path),
      sha256: fileSha256(path),
      blake2b512,
      power: filePower,
      insecure: false,
    };
  }
  const existing = readdirSync(outDir)
    .map((f) => /^dev-INSECURE-pot(\d+)\.ptau$/.exec(f))
    .filter((m): m is RegExpExecArray => m !== null && Number(m[1]) >= power)
    .sort((a, b) => Number(a[1]) - Number(b[1]))[0];
  const file = existing ? existing[0] : devPtauName(power);
  const path = join(outDir, file);
  if (!existing) {
    log(`making the development powers of tau (2^${power}); INSECURE: its maker could forge proofs`);
    const curve = await snarkjs.curves.getCurveFromName('bn128');
    const first = join(buildDir, `pot${power}_0000.ptau`);
    const second = join(buildDir, `pot${power}_0001.ptau`);
    await snarkjs.powersOfTau.newAccumulator(curve, power, first, quiet);
    await snarkjs.powersOfTau.contribute(first, second, 'development only, INSECURE', entropy(), quiet);
    await snarkjs.powersOfTau.preparePhase2(second, path, quiet);
    for (const old of readdirSync(outDir)) {
      if (/^dev-INSECURE-pot\d+\.ptau$/.test(old) && old !== file) rmSync(join(outDir, old));
    }
  }
  return {
    path,
    file,
    sha256: fileSha256(path),
    blake2b512: await blake2b512File(path),
    power: ptauPower(path),
    insecure: true,
  };
}

const entropy = () => randomBytes(64).toString('hex');

/** The witness file's values: section 2, n8 bytes each, little-endian. */
function witnessSection(buf: Buffer): { offset: number; n8: number } {
  let pos = 12;
  let n8 = 32;
  for (let i = 0; i < buf.readUInt32LE(8); i++) {
    const type = buf.readUInt32LE(pos);
    const size = Number(buf.readBigUInt64LE(pos + 4));
    if (type === 1) n8 = buf.readUInt32LE(pos + 12);
    if (type === 2) return { offset: pos + 12, n8 };
    pos += 12 + size;
  }
  throw new Error('witness file has no values section');
}

/**
 * The witness calculator enforces the circuit's asserts, the proof only its constraints: this
 * checks that a witness with a pinned signal (a policy's result, id and context, a ballot's every public
 * signal) changed breaks a constraint, i.e. that the compiler kept those pins.
 */
async function checkPins(compiled: Compiled): Promise<void> {
  const wtnsPath = join(buildDir, `${compiled.circuit}.wtns`);
  await snarkjs.wtns.calculate(await compiled.target.sample(), compiled.wasm, wtnsPath);
  if (!(await snarkjs.wtns.check(compiled.r1cs, wtnsPath, quiet))) {
    throw new Error(`${compiled.circuit}: a valid witness fails its own constraints`);
  }
  const original = readFileSync(wtnsPath);
  const { offset, n8 } = witnessSection(original);
  for (const name of compiled.target.pins) {
    const index = compiled.publicSignals.indexOf(name) + 1;
    if (index === 0) throw new Error(`${compiled.circuit}: no public signal ${name}`);
    const tampered = Buffer.from(original);
    tampered.fill(0, offset + index * n8, offset + (index + 1) * n8);
    const tamperedPath = join(buildDir, `${compiled.circuit}.tampered.wtns`);
    writeFileSync(tamperedPath, tampered);
    if (await snarkjs.wtns.check(compiled.r1cs, tamperedPath, silent)) {
      throw new Error(`${compiled.circuit}: the ${name} signal is not constrained`);
    }
  }
}

function fileEntry(path: string) {
  return { file: basename(path), sha256: fileSha256(path), bytes: statSync(path).size };
}

function readManifest(): Manifest | undefined {
  if (!existsSync(manifestPath())) return undefined;
  const parsed = manifestSchema.safeParse(JSON.parse(readFileSync(manifestPath(), 'utf8')));
  return parsed.success ? parsed.data : undefined;
}

function upToDate(previous: Manifest | undefined, circuit: string, ptauSha: string): boolean {
  const entry = previous?.circuits[circuit];
  if (force || !entry || previous.ptau.sha256 !== ptauSha || previous.compiler !== compilerVersion())
    return false;
  if (entry.sourceSha256 !== sourceHash(circuit)) return false;
  const paths = artifactPaths(circuit);
  return (['wasm', 'zkey', 'vkey'] as const).every(
    (kind) => existsSync(paths[kind]) && fileSha256(paths[kind]) === entry[kind].sha256,
  );
}

async function setup(compiled: Compiled, ptauPath: string): Promise<void> {
  const paths = artifactPaths(compiled.circuit);
  const initial = join(buildDir, `${compiled.circuit}_0000.zkey`);
  await snarkjs.zKey.newZKey(compiled.r1cs, ptauPath, initial, quiet);
  // One phase-2 contribution with fresh entropy; a production deployment runs a multi-party phase 2.
  await snarkjs.zKey.contribute(initial, paths.zkey, 'project build contribution', entropy(), quiet);
  const vkey = await snarkjs.zKey.exportVerificationKey(paths.zkey);
  writeFileSync(paths.vkey, `${JSON.stringify(vkey, null, 2)}\n`);
  copyFileSync(compiled.wasm, paths.wasm);
  // Production checks the keys against it and the powers of tau at start (shared/zk/setup.ts).
  copyFileSync(compiled.r1cs, paths.r1cs);
}

/**
 * The phase-2 transcript of the circuit's zkey, written after a verification against the r1cs and the
 * powers of tau (kept when it already describes these keys). The build's keys have one contribution,
 * the build's own; a multi-party ceremony replaces them (npm run ceremony, docs/zk.md).
 */
async function ensureTranscript(c: Compiled, ptau: { path: string; power: number; blake2b512: string }) {
  const paths = artifactPaths(c.circuit);
  const zkeySha256 = fileSha256(paths.zkey);
  let existing;
  try {
    existing = readTranscript(c.circuit);
  } catch {
    existing = undefined;
  }
  if (
    existing?.finalZkeySha256 === zkeySha256 &&
    existing.vkeySha256 === fileSha256(paths.vkey) &&
    existing.r1csSha256 === fileSha256(c.r1cs) &&
    existing.ptau.blake2b512 === ptau.blake2b512
  )
    return;
  const transcript = await makeTranscript({
    circuit: c.circuit,
    r1cs: c.r1cs,
    ptau: ptau.path,
    zkey: paths.zkey,
    vkey: paths.vkey,
    ptauPower: ptau.power,
  });
  writeFileSync(transcriptPath(c.circuit), `${JSON.stringify(transcript, null, 2)}\n`);
  log(`${c.circuit}: ceremony transcript written (verified against the r1cs and powers of tau)`);
}

async function main(): Promise<void> {
  mkdirSync(buildDir, { recursive: true });
  mkdirSync(outDir, { recursive: true });
  const previous = readManifest();

  const compiled: Compiled[] = [];
  for (const target of targets) {
    const started = Date.now();
    const result = await compile(target);
    log(
      `compiled ${target.circuit}: ${result.constraints} constraints, ${result.nPublic} public signals (${Date.now() - started} ms)`,
    );
    if (result.publicSignals.join() !== target.publicSignals.join()) {
      throw new Error(
        `${target.circuit}: public signals ${result.publicSignals.join()} differ from the registry`,
      );
    }
    await checkPins(result);
    compiled.push(result);
  }

  // Groth16 needs a domain of at least constraints + public signals + 1 points.
  const power = Math.max(...compiled.map((c) => Math.ceil(Math.log2(c.constraints + c.nPublic + 1))));
  const ptau = await selectPtau(power);
  log(
    `powers of tau: ${relative(repoRoot, ptau.path)} (2^${ptau.power}${ptau.insecure ? ', development only, INSECURE' : ''})`,
  );

  const circuits: Record<string, CircuitManifest> = {};
  for (const c of compiled) {
    const { policy } = c.target;
    if (upToDate(previous, c.circuit, ptau.sha256)) {
      log(`${c.circuit}: up to date`);
      circuits[c.circuit] = previous!.circuits[c.circuit]!;
      await ensureTranscript(c, ptau);
      continue;
    }
    const started = Date.now();
    await setup(c, ptau.path);
    const paths = artifactPaths(c.circuit);
    circuits[c.circuit] = {
      circuit: c.circuit,
      ...(policy
        ? { policyId: policy.id, policyLabel: policy.label, policyFieldId: String(policy.fieldId) }
        : {}),
      constraints: c.constraints,
      wires: c.wires,
      privateInputs: c.privateInputs,
      nPublic: c.nPublic,
      publicSignals: c.publicSignals,
      sourceSha256: sourceHash(c.circuit),
      sources: circuitSources(c.circuit).map((f) => f.key),
      r1csSha256: fileSha256(c.r1cs),
      wasm: fileEntry(paths.wasm),
      zkey: fileEntry(paths.zkey),
      vkey: fileEntry(paths.vkey),
    };
    await ensureTranscript(c, ptau);
    log(`${c.circuit}: keys made (${Date.now() - started} ms)`);
  }

  const { path: _path, ...ptauEntry } = ptau;
  const manifest: Manifest = {
    version: 1,
    compiler: compilerVersion(),
    compilerFlags,
    snarkjs: snarkjsVersion(),
    ptau: ptauEntry,
    circuits,
  };
  writeFileSync(manifestPath(), `${JSON.stringify(manifestSchema.parse(manifest), null, 2)}\n`);
  log(`wrote ${relative(repoRoot, manifestPath())}`);
}

main()
  .then(() => terminateCurves())
  .catch(async (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    await terminateCurves();
    process.exitCode = 1;
  });
