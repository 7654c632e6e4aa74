// `npm run ceremony -- start | contribute | verify | finalize | transcript`: a circuit's phase-2 (per
// circuit) trusted setup as a multi-party ceremony. The coordinator starts it from the r1cs and the
// powers of tau; each contributor, on a machine of their own, takes the latest zkey, adds a contribution
// with entropy only they hold, and hands the new zkey on; anyone verifies a zkey against the r1cs and
// powers of tau (the same check as `snarkjs zkey verify`); the coordinator finalizes with a public random
// beacon, which exports the verification key, writes the transcript beside the artifacts and records
// the new zkey and vkey in the manifest. The procedure is in docs/zk.md ("Phase 2: the ceremony").
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import * as snarkjs from 'snarkjs';
import { sha256Hex } from '../shared/platform/crypto';
import { env } from '../shared/platform/env';
import {
  artifactPaths,
  artifactsDir,
  manifestPath,
  manifestSchema,
  resetManifestCache,
} from '../shared/zk/artifacts';
import type { Manifest } from '../shared/zk/artifacts';
import {
  blake2b512File,
  makeTranscript,
  ptauProvenance,
  transcriptPath,
  verifyZkey,
} from '../shared/zk/ceremony';
import type { Transcript } from '../shared/zk/ceremony';
import { terminateCurves } from '../shared/zk';
import { printable } from '../shared/platform/text';

const usage = `usage: npm run ceremony -- start <circuit> --out <zkey> [--r1cs <file>] [--ptau <file>]
       npm run ceremony -- contribute --in <zkey> --out <zkey> --name <name> [--entropy <text>]
       npm run ceremony -- verify <circuit> --zkey <file> [--r1cs <file>] [--ptau <file>]
       npm run ceremony -- finalize <circuit> --zkey <file> --beacon <hex> --iterations <n> [--name <text>]
                                    [--r1cs <file>] [--ptau <file>] [--dir <artifacts folder>]
       npm run ceremony -- transcript <circuit> [--r1cs <file>] [--ptau <file>] [--dir <artifacts folder>]
  start       the ceremony's first zkey (no contribution yet) from the circuit and the powers of tau
  contribute  add your contribution to the latest zkey and hand the new one on; entropy is 64 random
              bytes of this machine, with --entropy mixed in; the printed hash is yours to publish
  verify      check a zkey against the r1cs and powers of tau (as snarkjs zkey verify) and list its
              contributions in order; exits 1 when it does not verify
  finalize    apply the public random beacon (hex, hashed 2^iterations times, iterations 10 to 63), verify, and install the
              zkey, its verification key and the transcript (<circuit>.ceremony.json) in the artifacts
              folder, updating the manifest
  transcript  write the transcript of the installed zkey (verified first)
  --r1cs defaults to circuits/build/<circuit>.r1cs (npm run circuits:build makes it), --ptau to CIRCUIT_PTAU
  or the manifest's powers of tau in the artifacts folder.`;

export class CeremonyError extends Error {}

const log = (line: string) => process.stdout.write(`${line}\n`);
const quiet: snarkjs.Logger = { debug: () => {}, info: () => {}, warn: log, error: log };

const repoRoot = resolve(new URL('..', import.meta.url).pathname);

function readManifestAt(dir: string): Manifest | undefined {
  const path = join(dir, 'manifest.json');
  return existsSync(path) ? manifestSchema.parse(JSON.parse(readFileSync(path, 'utf8'))) : undefined;
}

/** The r1cs and powers of tau a circuit's ceremony runs on: the options, else the build's and the manifest's. */
export function ceremonyInputs(
  circuit: string,
  o: { r1cs?: string; ptau?: string; dir?: string },
): { r1cs: string; ptau: string } {
  const dir = o.dir ?? artifactsDir();
  const r1cs = resolve(o.r1cs ?? join(repoRoot, 'circuits', 'build', `${circuit}.r1cs`));
  let ptau = o.ptau ?? env.CIRCUIT_PTAU;
  if (!ptau) {
    const manifest = readManifestAt(dir);
    if (!manifest) throw new CeremonyError(`no --ptau given and no manifest in ${dir}`);
    ptau = join(dir, manifest.ptau.file);
  }
  for (const [what, path] of [
    ['r1cs', r1cs],
    ['powers of tau', resolve(ptau)],
  ] as const) {
    if (!existsSync(path))
      throw new CeremonyError(
        `${what} ${path} not found${what === 'r1cs' ? ' (npm run circuits:build makes it, or give --r1cs)' : ' (give --ptau)'}`,
      );
  }
  return { r1cs, ptau: resolve(ptau) };
}

/** The power recorded in a .ptau header (section 1: n8, q, power). */
function ptauPower(path: string): number {
  const buf = readFileSync(path);
  let pos = 12;
  for (let i = 0; i < buf.readUInt32LE(8); i++) {
    const type = buf.readUInt32LE(pos);
    const size = Number(buf.readBigUInt64LE(pos + 4));
    if (type === 1) return buf.readUInt32LE(pos + 16 + buf.readUInt32LE(pos + 12));
    pos += 12 + size;
  }
  throw new CeremonyError(`${path} has no powers-of-tau header`);
}

export async function start(circuit: string, out: string, o: { r1cs?: string; ptau?: string } = {}) {
  const { r1cs, ptau } = ceremonyInputs(circuit, o);
  await snarkjs.zKey.newZKey(r1cs, ptau, out, quiet);
  return { zkey: out, sha256: sha256Hex(readFileSync(out)) };
}

/** One contribution: returns its hash (what `verify` lists for it) and the new zkey's sha256. */
export async function contribute(input: string, out: string, name: string, entropy = '') {
  if (!existsSync(input)) throw new CeremonyError(`${input} not found`);
  if (name.trim() === '') throw new CeremonyError('a contribution needs --name');
  // The machine's randomness, with whatever the contributor adds; neither is written anywhere.
  const mixed = `${randomBytes(64).toString('hex')}${entropy}`;
  const hash = (await snarkjs.zKey.contribute(input, out, name, mixed, quiet)) as Uint8Array;
  return { hash: Buffer.from(hash).toString('hex'), sha256: sha256Hex(readFileSync(out)) };
}

export async function verify(circuit: string, zkey: string, o: { r1cs?: string; ptau?: string } = {}) {
  const { r1cs, ptau } = ceremonyInputs(circuit, o);
  return { r1cs, ptau, ...(await verifyZkey(r1cs, ptau, zkey)) };
}

/** Writes a file whole or not at all (a crash leaves the old one). */
function writeAtomic(path: string, data: string | Buffer): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

/**
 * Records a verified zkey as the circuit's artifact in `dir`: the zkey, its verification key, the
 * transcript and, when the folder has a manifest naming the circuit, the manifest's zkey and vkey
 * entries. Refuses a zkey that does not verify, or r1cs and powers of tau other than the manifest's.
 */
async function install(circuit: string, zkey: string, dir: string, r1cs: string, ptau: string) {
  const manifest = readManifestAt(dir);
  const entry = manifest?.circuits[circuit];
  if (entry && sha256Hex(readFileSync(r1cs)) !== entry.r1csSha256)
    throw new CeremonyError(`${r1cs} is not the r1cs the manifest records for ${circuit}; rebuild it`);
  const paths = artifactPaths(circuit);
  const target = { zkey: join(dir, basename(paths.zkey)), vkey: join(dir, basename(paths.vkey)) };
  const scratch = mkdtempSync(join(tmpdir(), 'px-ceremony-'));
  try {
    const vkeyPath = join(scratch, 'vkey.json');
    const vkey = await snarkjs.zKey.exportVerificationKey(zkey, quiet);
    writeFileSync(vkeyPath, `${JSON.stringify(vkey, null, 2)}\n`);
    const transcript = await makeTranscript({
      circuit,
      r1cs,
      ptau,
      zkey,
      vkey: vkeyPath,
      ptauPower: ptauPower(ptau),
    });
    if (manifest && transcript.ptau.blake2b512 !== manifest.ptau.blake2b512)
      throw new CeremonyError(
        `${ptau} is not the powers of tau the manifest records (${manifest.ptau.file})`,
      );
    if (resolve(zkey) !== resolve(target.zkey)) writeAtomic(target.zkey, readFileSync(zkey));
    writeAtomic(target.vkey, readFileSync(vkeyPath));
    writeAtomic(transcriptPath(circuit, dir), `${JSON.stringify(transcript, null, 2)}\n`);
    if (manifest && entry) {
      const fileEntry = (p: string) => ({
        file: basename(p),
        sha256: sha256Hex(readFileSync(p)),
        bytes: statSync(p).size,
      });
      entry.zkey = fileEntry(target.zkey);
      entry.vkey = fileEntry(target.vkey);
      writeAtomic(join(dir, 'manifest.json'), `${JSON.stringify(manifestSchema.parse(manifest), null, 2)}\n`);
      if (join(dir, 'manifest.json') === manifestPath()) resetManifestCache();
    }
    return transcript;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

export async function finalize(
  circuit: string,
  zkey: string,
  beacon: { value: string; iterationsExp: number; name?: string },
  o: { r1cs?: string; ptau?: string; dir?: string } = {},
): Promise<Transcript> {
  if (!/^[0-9a-fA-F]+$/.test(beacon.value) || beacon.value.length % 2 !== 0)
    throw new CeremonyError('--beacon is a hex value (an even number of hex digits)');
  if (!Number.isInteger(beacon.iterationsExp) || beacon.iterationsExp < 10 || beacon.iterationsExp > 63)
    throw new CeremonyError('--iterations is an exponent from 10 to 63 (the beacon is hashed 2^n times)');
  if (beacon.value.length > 510) throw new CeremonyError('--beacon is at most 255 bytes');
  const dir = o.dir ?? artifactsDir();
  const { r1cs, ptau } = ceremonyInputs(circuit, { ...o, dir });
  const scratch = mkdtempSync(join(tmpdir(), 'px-ceremony-'));
  try {
    const beaconed = join(scratch, `${circuit}.zkey`);
    const name = beacon.name ?? 'final beacon';
    const hash = await snarkjs.zKey.beacon(
      zkey,
      beaconed,
      name,
      beacon.value.toLowerCase(),
      beacon.iterationsExp,
      quiet,
    );
    if (hash === false || !existsSync(beaconed))
      throw new CeremonyError(`snarkjs refused the beacon on ${zkey}`);
    return await install(circuit, beaconed, dir, r1cs, ptau);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The transcript of the zkey already installed in `dir` (the build's, or one installed by hand). */
export async function transcript(circuit: string, o: { r1cs?: string; ptau?: string; dir?: string } = {}) {
  const dir = o.dir ?? artifactsDir();
  const { r1cs, ptau } = ceremonyInputs(circuit, { ...o, dir });
  return install(circuit, join(dir, basename(artifactPaths(circuit).zkey)), dir, r1cs, ptau);
}

function options(args: string[]): { positional: string[]; flags: Map<string, string> } {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('--')) {
      positional.push(a);
      continue;
    }
    const value = args[i + 1];
    if (value === undefined) throw new CeremonyError(`${a} needs a value`);
    flags.set(a.slice(2), value);
    i++;
  }
  return { positional, flags };
}

function printContributions(t: Pick<Transcript, 'contributions' | 'beacon'>): void {
  for (const c of t.contributions)
    log(
      `  #${c.index} ${c.name ? printable(c.name) : '(no name)'}${c.beacon ? ' [beacon]' : ''}\n     ${printable(c.hash)}`,
    );
  if (t.beacon) log(`  beacon ${t.beacon.value}, 2^${t.beacon.iterationsExp} iterations`);
}

function printProvenance(blake2b512: string): void {
  const p = ptauProvenance(blake2b512);
  log(
    p.accepted
      ? `powers of tau accepted (${p.by === 'published' ? `published ceremony file ${p.file}` : 'pinned in PTAU_PINNED_HASHES'})`
      : 'powers of tau NOT accepted in production: not a published ceremony file, not in PTAU_PINNED_HASHES',
  );
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const [command, ...rest] = argv;
  const { positional, flags } = options(rest);
  const need = (name: string) => {
    const v = flags.get(name);
    if (v === undefined) throw new CeremonyError(`${command} needs --${name}`);
    return v;
  };
  const circuitArg = () => {
    const c = positional[0];
    if (!c || !/^[a-z0-9_]+$/.test(c)) throw new CeremonyError(`${command} needs a circuit name`);
    return c;
  };
  const io = { r1cs: flags.get('r1cs'), ptau: flags.get('ptau'), dir: flags.get('dir') };
  switch (command) {
    case 'start': {
      const r = await start(circuitArg(), need('out'), io);
      log(`${r.zkey}: no contribution yet (sha256 ${r.sha256}); hand it to the first contributor`);
      return 0;
    }
    case 'contribute': {
      const r = await contribute(need('in'), need('out'), need('name'), flags.get('entropy'));
      log(`contribution hash (publish it; verify lists it under your name):\n  ${r.hash}`);
      log(`${need('out')} sha256 ${r.sha256}: hand it to the next contributor`);
      return 0;
    }
    case 'verify': {
      const circuit = circuitArg();
      const r = await verify(circuit, need('zkey'), io);
      if (!r.ok) {
        log(
          `${need('zkey')} does NOT verify against ${r.r1cs} and ${r.ptau}: ${r.errors.join('; ') || 'refused'}`,
        );
        return 1;
      }
      log(`${need('zkey')} verifies against ${r.r1cs} and ${r.ptau}; contributions in order:`);
      printContributions(r);
      printProvenance(await blake2b512File(r.ptau));
      return 0;
    }
    case 'finalize': {
      const iterations = Number(need('iterations'));
      const t = await finalize(
        circuitArg(),
        need('zkey'),
        { value: need('beacon'), iterationsExp: iterations, name: flags.get('name') },
        io,
      );
      log(`${t.circuit}: finalized, verified and installed; transcript ${transcriptPath(t.circuit, io.dir)}`);
      printContributions(t);
      printProvenance(t.ptau.blake2b512);
      return 0;
    }
    case 'transcript': {
      const t = await transcript(circuitArg(), io);
      log(`${t.circuit}: verified; transcript ${transcriptPath(t.circuit, io.dir)}`);
      printContributions(t);
      printProvenance(t.ptau.blake2b512);
      return 0;
    }
    default:
      log(usage);
      return command === undefined || command === 'help' ? 0 : 2;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2))
    .then((code) => {
      process.exitCode = code;
    })
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = err instanceof CeremonyError ? 2 : 1;
    })
    .finally(() => terminateCurves());
}
