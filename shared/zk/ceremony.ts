// Where the circuit keys come from: the powers of tau by its blake2b-512 hash (a published ceremony
// file or one the operator pins), and the phase-2 ceremony of each circuit by its transcript (who
// contributed, in order, the beacon, and the zkey it ended in). Read by setup.ts, the circuits build,
// the ceremony CLI and the transcript route.
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { blake2b } from '@noble/hashes/blake2.js';
import * as snarkjs from 'snarkjs';
import { z } from 'zod';
import { sha256Hex } from '../platform/crypto';
import { env } from '../platform/env';
import { projectPath } from '../platform/paths';
import { artifactsDir } from './artifacts';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const hex128 = z.string().regex(/^[0-9a-f]{128}$/);

const publishedSchema = z.object({
  source: z.string().min(1),
  hash: z.string(),
  files: z.array(
    z.object({ power: z.number().int().positive(), file: z.string(), url: z.string(), blake2b512: hex128 }),
  ),
});
export type PublishedPtau = z.infer<typeof publishedSchema>['files'][number];

export const publishedPtauPath = projectPath('circuits/ceremony/ptau-hashes.json');

let published: PublishedPtau[] | undefined;

/** The published ceremony files the project trusts by hash (circuits/ceremony/ptau-hashes.json). */
export function publishedPtaus(): PublishedPtau[] {
  published ??= publishedSchema.parse(JSON.parse(readFileSync(publishedPtauPath, 'utf8'))).files;
  return published;
}

export type PtauProvenance =
  { accepted: true; by: 'published'; file: string } | { accepted: true; by: 'pinned' } | { accepted: false };

/** Whether a powers of tau is trusted: its hash is a published ceremony file's or in PTAU_PINNED_HASHES. */
export function ptauProvenance(blake2b512: string): PtauProvenance {
  const hash = blake2b512.toLowerCase();
  const known = publishedPtaus().find((p) => p.blake2b512 === hash);
  if (known) return { accepted: true, by: 'published', file: known.file };
  if (env.PTAU_PINNED_HASHES.includes(hash)) return { accepted: true, by: 'pinned' };
  return { accepted: false };
}

/** blake2b-512 of a whole file (what `b2sum` prints, and what the published hashes are). */
export function blake2b512File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = blake2b.create({ dkLen: 64 });
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk as Buffer))
      .on('error', reject)
      .on('end', () => resolve(Buffer.from(hash.digest()).toString('hex')));
  });
}

export const TRANSCRIPT_TYPE = 'proof-exchange/ceremony-transcript/v1';

export const transcriptSchema = z
  .object({
    type: z.literal(TRANSCRIPT_TYPE),
    circuit: z.string().min(1).max(64),
    r1csSha256: hex64,
    ptau: z.object({ file: z.string(), blake2b512: hex128, power: z.number().int().positive() }),
    /** Every phase-2 contribution in order, the beacon last when there is one (as `snarkjs zkey verify` lists them). */
    contributions: z.array(
      z.object({
        index: z.number().int().positive(),
        name: z.string(),
        /** The contribution hash snarkjs prints (blake2b-512 of the contributor's public key). */
        hash: hex128,
        beacon: z.boolean(),
      }),
    ),
    beacon: z
      .object({ value: z.string().regex(/^[0-9a-f]+$/), iterationsExp: z.number().int().min(0).max(63) })
      .nullable(),
    /** The check that passed before the transcript was written: the zkey against r1cs and ptau. */
    verification: z.object({
      tool: z.literal('snarkjs zKey.verifyFromR1cs'),
      snarkjs: z.string(),
      ok: z.literal(true),
    }),
    finalZkeySha256: hex64,
    vkeySha256: hex64,
  })
  .meta({
    id: 'CeremonyTranscript',
    description:
      'A circuit’s phase-2 ceremony: the r1cs and powers of tau it started from, each contribution’s name and hash in order, the beacon, and the resulting zkey. Check it with stock snarkjs: `snarkjs zkey verify <circuit>.r1cs <ptau> <circuit>.zkey` prints the same contribution hashes.',
  });
export type Transcript = z.infer<typeof transcriptSchema>;

export const transcriptPath = (circuit: string, dir = artifactsDir()) =>
  join(dir, `${circuit}.ceremony.json`);

/** A circuit's transcript next to its artifacts; undefined when it has none. Throws when malformed. */
export function readTranscript(circuit: string, dir = artifactsDir()): Transcript | undefined {
  const path = transcriptPath(circuit, dir);
  if (!existsSync(path)) return undefined;
  const parsed = transcriptSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) throw new Error(`${path} is not a ceremony transcript: ${parsed.error.message}`);
  return parsed.data;
}

/** The transcript's log id: one leaf per circuit and final zkey. */
export const transcriptLogId = (t: Pick<Transcript, 'circuit' | 'finalZkeySha256'>) =>
  `${t.circuit}/${t.finalZkeySha256}`;

/**
 * What is wrong with a transcript as the record of the artifacts the manifest names: it must end in the
 * manifest's zkey and vkey and start from the manifest's r1cs and powers of tau (whether that powers of
 * tau is accepted is ptauProvenance's question, asked of the manifest). Empty when nothing is.
 */
export function transcriptProblems(
  t: Transcript,
  expected: {
    circuit: string;
    r1csSha256: string;
    zkeySha256: string;
    vkeySha256: string;
    ptauBlake2b512: string;
  },
): string[] {
  const problems: string[] = [];
  const { circuit } = expected;
  if (t.circuit !== circuit) problems.push(`${circuit}: the transcript is for ${t.circuit}`);
  if (t.finalZkeySha256 !== expected.zkeySha256)
    problems.push(`${circuit}: the transcript's final zkey sha256 differs from the zkey's`);
  if (t.vkeySha256 !== expected.vkeySha256)
    problems.push(`${circuit}: the transcript's vkey sha256 differs from the vkey's`);
  if (t.r1csSha256 !== expected.r1csSha256)
    problems.push(`${circuit}: the transcript's r1cs sha256 differs from the manifest's`);
  if (t.ptau.blake2b512 !== expected.ptauBlake2b512)
    problems.push(`${circuit}: the transcript's powers of tau differs from the manifest's`);
  if (t.contributions.length === 0) problems.push(`${circuit}: the transcript lists no contribution`);
  return problems;
}

/**
 * The contributions a `snarkjs zkey verify` run printed (its info lines, in the order given): snarkjs
 * lists them last first as `contribution #<n> <name>:` followed by the hash in four lines of hex, a
 * beacon's with its generator and iterations after it.
 */
export function parseVerifyLog(lines: readonly string[]): Pick<Transcript, 'contributions' | 'beacon'> {
  const contributions: Transcript['contributions'] = [];
  let beacon: Transcript['beacon'] = null;
  let last: Transcript['contributions'][number] | undefined;
  for (const line of lines) {
    const head = /^contribution #(\d+) ?(.*):\n([\s\S]*)$/.exec(line);
    const generator = /^Beacon generator: ([0-9a-f]+)$/.exec(line);
    const iterations = /^Beacon iterations Exp: (\d+)$/.exec(line);
    if (head) {
      last = {
        index: Number(head[1]),
        name: head[2]!,
        hash: head[3]!.replace(/[^0-9a-f]/g, ''),
        beacon: false,
      };
      contributions.push(last);
    } else if (generator && last) {
      last.beacon = true;
      // Only the last contribution's beacon is the ceremony's (snarkjs prints the last first).
      if (last.index === Math.max(...contributions.map((c) => c.index)))
        beacon = { value: generator[1]!, iterationsExp: 0 };
    } else if (iterations && last?.beacon && beacon !== null) {
      const b: NonNullable<Transcript['beacon']> = beacon;
      b.iterationsExp = Number(iterations[1]);
    }
  }
  contributions.sort((a, b) => a.index - b.index);
  if (beacon && !contributions[contributions.length - 1]!.beacon) beacon = null;
  return { contributions, beacon };
}

export interface ZkeyVerification {
  ok: boolean;
  contributions: Transcript['contributions'];
  beacon: Transcript['beacon'];
  /** What snarkjs said when it refused (or threw). */
  errors: string[];
}

/**
 * `snarkjs zkey verify` in process: the zkey was made from this r1cs and powers of tau, and every
 * contribution in its chain is consistent. Never throws for a bad zkey: a refusal is `ok: false`.
 */
export async function verifyZkey(r1cs: string, ptau: string, zkey: string): Promise<ZkeyVerification> {
  const info: string[] = [];
  const errors: string[] = [];
  const logger: snarkjs.Logger = {
    debug: () => {},
    info: (m) => info.push(String(m)),
    warn: (m) => errors.push(String(m)),
    error: (m) => errors.push(String(m)),
  };
  let ok = false;
  try {
    ok = (await snarkjs.zKey.verifyFromR1cs(r1cs, ptau, zkey, logger)) === true;
  } catch (err) {
    errors.push((err as Error).message);
  }
  const parsed = ok ? parseVerifyLog(info) : { contributions: [], beacon: null };
  return { ok, ...parsed, errors };
}

/** A transcript of a zkey that verifies against the r1cs and powers of tau; throws when it does not. */
export async function makeTranscript(files: {
  circuit: string;
  r1cs: string;
  ptau: string;
  zkey: string;
  vkey: string;
  ptauPower: number;
}): Promise<Transcript> {
  const verification = await verifyZkey(files.r1cs, files.ptau, files.zkey);
  if (!verification.ok)
    throw new Error(
      `${files.zkey} does not verify against ${files.r1cs} and ${files.ptau}: ${verification.errors.join('; ') || 'refused'}`,
    );
  return transcriptSchema.parse({
    type: TRANSCRIPT_TYPE,
    circuit: files.circuit,
    r1csSha256: sha256Hex(readFileSync(files.r1cs)),
    ptau: {
      file: basename(files.ptau),
      blake2b512: await blake2b512File(files.ptau),
      power: files.ptauPower,
    },
    contributions: verification.contributions,
    beacon: verification.beacon,
    verification: { tool: 'snarkjs zKey.verifyFromR1cs', snarkjs: snarkjsPackageVersion(), ok: true },
    finalZkeySha256: sha256Hex(readFileSync(files.zkey)),
    vkeySha256: sha256Hex(readFileSync(files.vkey)),
  });
}

export const snarkjsPackageVersion = (): string =>
  (JSON.parse(readFileSync(projectPath('node_modules/snarkjs/package.json'), 'utf8')) as { version: string })
    .version;
