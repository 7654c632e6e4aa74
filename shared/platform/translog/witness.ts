// A C2SP tlog-witness (c2sp.org/tlog-witness) `add-checkpoint`, as pure functions: the request body,
// the checks in the order the specification gives their answers, the witness's record of each log and
// the cosignature. The program around it (the HTTP server, the state file, the key) is cli/witness.ts;
// the log's side, which sends these requests, is witnessing.ts.
import { createPrivateKey, createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { z } from 'zod';
import { cosigner, parseCheckpoint } from './checkpoint';
import type { Cosigner, SignedCheckpoint } from './checkpoint';
import { EMPTY_ROOT, verifyConsistency } from './merkle';
import { SIG_ED25519, signatureLine, signaturesBy, verifyEd25519NoteSignature } from './note';
import type { Vkey } from './note';

/** A client sends at most this many consistency proof lines. */
export const MAX_PROOF_LINES = 63;
/** The Content-Type of a 409's body: the size the witness last cosigned. */
export const SIZE_CONTENT_TYPE = 'text/x.tlog.size';

const decimal = /^(0|[1-9][0-9]{0,15})$/;

export interface AddCheckpoint {
  oldSize: number;
  proof: Buffer[];
  /** The checkpoint note as sent, signatures included. */
  note: string;
  checkpoint: SignedCheckpoint;
}

/** Why a request is answered with something other than 200: the status and a line for the caller. */
export class WitnessRefusal extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 409 | 422,
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'WitnessRefusal';
  }
}

/** The add-checkpoint body: `old <size>`, up to 63 base64 hashes, a blank line, the checkpoint note. */
export function formatAddCheckpoint(oldSize: number, proof: readonly Uint8Array[], note: string): string {
  if (proof.length > MAX_PROOF_LINES) throw new Error(`at most ${MAX_PROOF_LINES} proof lines`);
  return `old ${oldSize}\n${proof.map((h) => `${Buffer.from(h).toString('base64')}\n`).join('')}\n${note}`;
}

/** Parses an add-checkpoint body; a malformed one is a 400 refusal. */
export function parseAddCheckpoint(body: string): AddCheckpoint {
  const bad = (why: string): never => {
    throw new WitnessRefusal(400, why);
  };
  let at = body.indexOf('\n');
  const first = at < 0 ? bad('the body starts with an old size line') : body.slice(0, at);
  const old = /^old (.*)$/.exec(first);
  if (!old || !decimal.test(old[1]!)) bad('the first line is `old <size>`, a decimal without leading zeroes');
  const oldSize = Number(old![1]);
  const proof: Buffer[] = [];
  for (;;) {
    const start = at + 1;
    at = body.indexOf('\n', start);
    if (at < 0) bad('a blank line ends the consistency proof');
    const line = body.slice(start, at);
    if (line === '') break;
    if (proof.length === MAX_PROOF_LINES) bad(`at most ${MAX_PROOF_LINES} consistency proof lines`);
    const hash = Buffer.from(line, 'base64');
    if (hash.length !== 32 || hash.toString('base64') !== line)
      bad('each consistency proof line is the base64 of a 32-byte hash');
    proof.push(hash);
  }
  const note = body.slice(at + 1);
  let checkpoint: SignedCheckpoint;
  try {
    checkpoint = parseCheckpoint(note);
  } catch (err) {
    return bad(`not a checkpoint: ${(err as Error).message}`);
  }
  return { oldSize, proof, note, checkpoint };
}

/** What a witness keeps of one log: the latest checkpoint it cosigned. */
export interface WitnessedLog {
  size: number;
  root: Buffer;
  /** The checkpoint with the log's verified signatures and this witness's cosignature. */
  checkpoint: string;
  /** The cosignature's time, POSIX seconds. */
  cosignedAt: number;
}

/** The logs a witness accepts: each origin with the keys it trusts for it (more than one while a key rotates). */
export type TrustedLogs = ReadonlyMap<string, readonly Vkey[]>;

/**
 * The signature lines of trusted keys on the checkpoint, all verified; a 403 refusal when there is none,
 * or when one that names a trusted key (its name and id) does not verify (the note is then malformed).
 * Signatures of other keys are ignored.
 */
export function trustedSignatureLines(cp: SignedCheckpoint, keys: readonly Vkey[]): string[] {
  const lines: string[] = [];
  for (const key of keys) {
    for (const sig of signaturesBy(cp.note, key)) {
      if (!verifyEd25519NoteSignature(key, cp.text, sig))
        throw new WitnessRefusal(403, `a signature by ${key.name} does not verify`);
      lines.push(signatureLine(sig.name, sig.keyId, sig.signature));
    }
  }
  if (lines.length === 0)
    throw new WitnessRefusal(403, 'no signature by a key this witness trusts for the log');
  return lines;
}

/**
 * The specification's checks, in its order: unknown origin 404; log signature 403; old size above the
 * checkpoint's 400; old size other than the latest cosigned 409; an empty tree's root, a proof from
 * size 0, the consistency proof, equal sizes with other roots 422. Returns the log's verified signature
 * lines when every check passes; throws a WitnessRefusal otherwise.
 */
export function checkAddCheckpoint(
  req: AddCheckpoint,
  trusted: TrustedLogs,
  latest: WitnessedLog | undefined,
): string[] {
  const cp = req.checkpoint;
  const keys = trusted.get(cp.origin);
  if (!keys) throw new WitnessRefusal(404, 'this witness does not know the log');
  const logLines = trustedSignatureLines(cp, keys);
  if (req.oldSize > cp.size) throw new WitnessRefusal(400, 'the old size is above the checkpoint size');
  const latestSize = latest?.size ?? 0;
  if (req.oldSize !== latestSize)
    throw new WitnessRefusal(409, 'the old size is not the latest cosigned size');
  if (cp.size === 0 && !cp.root.equals(EMPTY_ROOT))
    throw new WitnessRefusal(422, 'a checkpoint of size 0 has the empty tree’s root');
  if (req.oldSize === 0) {
    if (req.proof.length > 0) throw new WitnessRefusal(422, 'a proof from size 0 is empty');
    return logLines;
  }
  const latestRoot = latest!.root;
  if (req.oldSize === cp.size) {
    if (!latestRoot.equals(cp.root))
      throw new WitnessRefusal(422, 'the same size as the latest cosigned checkpoint, with another root');
    if (req.proof.length > 0) throw new WitnessRefusal(422, 'a proof between equal sizes is empty');
    return logLines;
  }
  if (!verifyConsistency(req.oldSize, cp.size, latestRoot, cp.root, req.proof))
    throw new WitnessRefusal(
      422,
      'the consistency proof from the latest cosigned checkpoint does not verify',
    );
  return logLines;
}

/**
 * The witness's new record of the log after a 200, and the cosignature line it answers with. The time
 * never goes back from the previous cosignature's, whatever the clock does.
 */
export function cosign(
  req: AddCheckpoint,
  logLines: readonly string[],
  witness: Cosigner,
  latest: WitnessedLog | undefined,
  now = Date.now(),
): { record: WitnessedLog; line: string } {
  const cosignedAt = Math.max(Math.floor(now / 1000), latest?.cosignedAt ?? 0, 1);
  const line = witness.cosignLine(req.checkpoint.text, cosignedAt);
  return {
    line,
    record: {
      size: req.checkpoint.size,
      root: req.checkpoint.root,
      checkpoint: `${req.checkpoint.text}\n${logLines.join('')}${line}`,
      cosignedAt,
    },
  };
}

/** The body of a 409: the latest cosigned size and a newline. */
export const sizeBody = (size: number): string => `${size}\n`;

/** Reads a 409's body; undefined when it is not one. */
export function parseSizeBody(body: string): number | undefined {
  const m = /^(0|[1-9][0-9]{0,15})\n$/.exec(body);
  return m ? Number(m[1]) : undefined;
}

// ---------------------------------------------------------------------------------------------------
// The witness's state file and key.

const stateSchema = z
  .object({
    format: z.literal('proof-exchange/witness-state/v1'),
    logs: z.record(
      z.string(),
      z
        .object({
          size: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
          root: z.base64().refine((r) => Buffer.from(r, 'base64').length === 32, 'a 32-byte root'),
          checkpoint: z.string(),
          cosignedAt: z.number().int().positive(),
        })
        .strict(),
    ),
  })
  .strict();

/** The JSON of a witness's state: the latest cosigned checkpoint of each log. */
export function formatWitnessState(logs: ReadonlyMap<string, WitnessedLog>): string {
  const out: Record<string, unknown> = {};
  for (const [origin, l] of [...logs].sort(([a], [b]) => (a < b ? -1 : 1)))
    out[origin] = {
      size: l.size,
      root: l.root.toString('base64'),
      checkpoint: l.checkpoint,
      cosignedAt: l.cosignedAt,
    };
  return `${JSON.stringify({ format: 'proof-exchange/witness-state/v1', logs: out }, null, 2)}\n`;
}

/** Parses a state file; throws on anything else (a witness never starts over from a state it cannot read). */
export function parseWitnessState(text: string): Map<string, WitnessedLog> {
  const parsed = stateSchema.parse(JSON.parse(text));
  const logs = new Map<string, WitnessedLog>();
  for (const [origin, l] of Object.entries(parsed.logs)) {
    const cp = parseCheckpoint(l.checkpoint);
    const root = Buffer.from(l.root, 'base64');
    if (cp.origin !== origin || cp.size !== l.size || !cp.root.equals(root))
      throw new Error(`the checkpoint kept for ${origin} is not the one its record names`);
    logs.set(origin, { size: l.size, root, checkpoint: l.checkpoint, cosignedAt: l.cosignedAt });
  }
  return logs;
}

const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The witness's cosigner from its name and 32-byte Ed25519 seed. */
export function witnessCosigner(name: string, seed: Uint8Array): Cosigner {
  if (seed.length !== 32) throw new Error('a witness key is a 32-byte Ed25519 seed');
  const privateKey: KeyObject = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519, Buffer.from(seed)]),
    format: 'der',
    type: 'pkcs8',
  });
  const raw = createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(12);
  return cosigner(name, raw, privateKey);
}

/** Whether a vkey can be a log's (an Ed25519 note key named as the origin it signs). */
export const isLogKey = (key: Vkey): boolean => key.type === SIG_ED25519;
