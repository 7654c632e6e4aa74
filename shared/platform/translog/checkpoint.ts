// C2SP checkpoints (c2sp.org/tlog-checkpoint) and the timestamped Ed25519 cosignatures witnesses add
// to them (c2sp.org/tlog-cosignature, type 0x04). Pure and offline.
import { sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { publicKeyFromRaw } from '../crypto';
import {
  SIG_COSIGNATURE_ED25519,
  formatVkey,
  noteKeyId,
  parseNote,
  signatureLine,
  signaturesBy,
  verifyEd25519NoteSignature,
} from './note';
import type { Note, NoteSignature, Vkey } from './note';

export interface Checkpoint {
  origin: string;
  size: number;
  /** The RFC 6962 root of the first `size` leaves. */
  root: Buffer;
  /** Extension lines, if any (this log writes none). */
  extensions: string[];
}

/** The note text of a checkpoint: origin, decimal size, base64 root, each on its own line. */
export function checkpointText(c: Pick<Checkpoint, 'origin' | 'size' | 'root'>): string {
  if (!c.origin || /[\s+]/u.test(c.origin)) throw new Error('an origin has no spaces or +');
  if (!Number.isSafeInteger(c.size) || c.size < 0) throw new Error('a tree size is a natural number');
  if (c.root.length !== 32) throw new Error('a root is 32 bytes');
  return `${c.origin}\n${c.size}\n${c.root.toString('base64')}\n`;
}

/** Parses a checkpoint's note text (not its signatures). Throws on a malformed one. */
export function parseCheckpointText(text: string): Checkpoint {
  const lines = text.split('\n');
  if (lines.pop() !== '' || lines.length < 3) throw new Error('a checkpoint has at least three lines');
  const [origin, size, root, ...extensions] = lines as [string, string, string, ...string[]];
  if (!origin) throw new Error('a checkpoint names its origin');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(size) || !Number.isSafeInteger(Number(size)))
    throw new Error('a checkpoint size is a decimal without leading zeroes');
  const rootBytes = Buffer.from(root, 'base64');
  if (rootBytes.length !== 32 || rootBytes.toString('base64') !== root)
    throw new Error('a checkpoint root is base64 of 32 bytes');
  if (extensions.some((l) => l === '')) throw new Error('extension lines are not empty');
  return { origin, size: Number(size), root: rootBytes, extensions };
}

/** A checkpoint note: its text parsed, with the note's signatures. */
export interface SignedCheckpoint extends Checkpoint {
  text: string;
  note: Note;
}

export function parseCheckpoint(note: string): SignedCheckpoint {
  const parsed = parseNote(note);
  return { ...parseCheckpointText(parsed.text), text: parsed.text, note: parsed };
}

/** Whether the log key signed the checkpoint (its name must be the origin). Never throws. */
export function logSigned(cp: SignedCheckpoint, logKey: Vkey): boolean {
  if (logKey.name !== cp.origin) return false;
  const sigs = signaturesBy(cp.note, logKey);
  return sigs.length > 0 && sigs.every((s) => verifyEd25519NoteSignature(logKey, cp.text, s));
}

// ---------------------------------------------------------------------------------------------------
// Cosignatures (type 0x04): `cosignature/v1\ntime <t>\n` followed by the checkpoint text is signed;
// the signature bytes are the big-endian u64 timestamp then the 64-byte Ed25519 signature.

export const cosignedMessage = (text: string, timestamp: number): Buffer =>
  Buffer.from(`cosignature/v1\ntime ${timestamp}\n${text}`, 'utf8');

export interface Cosigner {
  name: string;
  keyId: number;
  vkey: string;
  /** A cosignature line over a checkpoint text, at `timestamp` (POSIX seconds). */
  cosignLine(text: string, timestamp: number): string;
}

export function cosigner(name: string, publicKey: Uint8Array, privateKey: KeyObject): Cosigner {
  const keyId = noteKeyId(name, SIG_COSIGNATURE_ED25519, publicKey);
  return {
    name,
    keyId,
    vkey: formatVkey(name, SIG_COSIGNATURE_ED25519, publicKey),
    cosignLine: (text, timestamp) => {
      const ts = Buffer.alloc(8);
      ts.writeBigUInt64BE(BigInt(timestamp));
      const sig = sign(null, cosignedMessage(text, timestamp), privateKey);
      return signatureLine(name, keyId, Buffer.concat([ts, sig]));
    },
  };
}

/**
 * The time a witness's cosignature says it saw the checkpoint (POSIX seconds), or null when the
 * cosignature does not verify. Never throws.
 */
export function verifyCosignature(key: Vkey, text: string, sig: NoteSignature): number | null {
  if (key.type !== SIG_COSIGNATURE_ED25519 || sig.name !== key.name || sig.keyId !== key.keyId) return null;
  if (sig.signature.length !== 72) return null;
  const timestamp = sig.signature.readBigUInt64BE(0);
  if (timestamp > 2n ** 63n - 1n) return null;
  try {
    const ok = verify(
      null,
      cosignedMessage(text, Number(timestamp)),
      publicKeyFromRaw(key.publicKey),
      sig.signature.subarray(8),
    );
    return ok ? Number(timestamp) : null;
  } catch {
    return null;
  }
}

/** When `key`'s cosignature on the checkpoint says it saw it (the latest, if several), or null. */
export function cosignatureTime(cp: SignedCheckpoint, key: Vkey): number | null {
  let latest: number | null = null;
  for (const s of signaturesBy(cp.note, key)) {
    const t = verifyCosignature(key, cp.text, s);
    if (t !== null && (latest === null || t > latest)) latest = t;
  }
  return latest;
}
