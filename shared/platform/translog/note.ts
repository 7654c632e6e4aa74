// C2SP signed notes (c2sp.org/signed-note): a text signed by one or more keys, and the verifier keys
// (vkeys) that name them. Pure and offline: a verifier needs the note and the vkeys it trusts.
import { createHash } from 'node:crypto';
import { publicKeyFromRaw } from '../crypto';
import { sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';

/** Signature type bytes this service uses (signed-note's registry). */
export const SIG_ED25519 = 0x01;
export const SIG_COSIGNATURE_ED25519 = 0x04;

const EM_DASH = '\u2014';
/** Signed notes verifiers must accept at least this many signatures; more is refused as abuse. */
export const MAX_SIGNATURES = 64;

export interface NoteSignature {
  name: string;
  /** The 32-bit key id, as an unsigned integer. */
  keyId: number;
  /** The signature bytes after the key id. */
  signature: Buffer;
}

export interface Note {
  /** The text, ending in a newline. */
  text: string;
  signatures: NoteSignature[];
}

/** A key a note may be signed with: its name, id, type byte and 32-byte public key. */
export interface Vkey {
  name: string;
  keyId: number;
  type: number;
  publicKey: Buffer;
}

const validName = (name: string) => name.length > 0 && !/[\s+]/u.test(name);

/** `SHA-256(name || 0x0A || type || public key)[:4]`, big-endian. */
export function noteKeyId(name: string, type: number, publicKey: Uint8Array): number {
  const h = createHash('sha256')
    .update(Buffer.from(name, 'utf8'))
    .update(Buffer.from([0x0a, type]))
    .update(publicKey)
    .digest();
  return h.readUInt32BE(0);
}

/** `<name>+<hex key id>+<base64(type || public key)>`. */
export function formatVkey(name: string, type: number, publicKey: Uint8Array): string {
  if (!validName(name)) throw new Error(`not a key name: ${name}`);
  const id = noteKeyId(name, type, publicKey).toString(16).padStart(8, '0');
  return `${name}+${id}+${Buffer.concat([Buffer.from([type]), Buffer.from(publicKey)]).toString('base64')}`;
}

/** Parses a vkey; throws on a malformed one, or one whose id does not match its key. */
export function parseVkey(vkey: string): Vkey {
  // The key's base64 may itself hold '+': the name and the id end at the first two.
  const m = /^([^+]*)\+([^+]*)\+(.*)$/s.exec(vkey.trim());
  if (!m) throw new Error('a vkey is name+id+key');
  const [, name, hexId, b64] = m as unknown as [string, string, string, string];
  if (!validName(name)) throw new Error('a vkey name is non-empty, without spaces or +');
  if (!/^[0-9a-f]{8}$/.test(hexId)) throw new Error('a vkey id is 8 lowercase hex characters');
  const raw = Buffer.from(b64, 'base64');
  if (raw.toString('base64') !== b64 || raw.length !== 33)
    throw new Error('a vkey key is base64 of 33 bytes');
  const type = raw[0]!;
  const publicKey = raw.subarray(1);
  const keyId = Number.parseInt(hexId, 16);
  if (noteKeyId(name, type, publicKey) !== keyId) throw new Error('the vkey id does not match its key');
  return { name, keyId, type, publicKey };
}

/**
 * Splits a signed note into its text and signature lines. Throws on anything that is not one: no
 * blank line before the signatures, a control character, a malformed line, too many signatures.
 */
export function parseNote(note: string): Note {
  if (!note.endsWith('\n')) throw new Error('a note ends in a newline');
  for (let i = 0; i < note.length; i++) {
    const c = note.charCodeAt(i);
    if (c < 0x20 && c !== 0x0a) throw new Error('a note holds no control characters');
  }
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw new Error('a note has a blank line before its signatures');
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split('\n');
  if (lines.length === 0 || lines.length > MAX_SIGNATURES) throw new Error('too many or no signatures');
  const signatures = lines.map((line) => {
    const m = /^\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})$/.exec(line);
    if (!m || !validName(m[1]!)) throw new Error(`not a signature line: ${line.slice(0, 80)}`);
    const bytes = Buffer.from(m[2]!, 'base64');
    if (bytes.toString('base64') !== m[2] || bytes.length < 5) throw new Error('a malformed signature');
    return { name: m[1]!, keyId: bytes.readUInt32BE(0), signature: bytes.subarray(4) };
  });
  return { text, signatures };
}

/** One signature line: `— <name> base64(key id || signature)`. */
export function signatureLine(name: string, keyId: number, signature: Uint8Array): string {
  const id = Buffer.alloc(4);
  id.writeUInt32BE(keyId >>> 0);
  return `${EM_DASH} ${name} ${Buffer.concat([id, Buffer.from(signature)]).toString('base64')}\n`;
}

/** A note from its text and signature lines. */
export function formatNote(text: string, lines: readonly string[]): string {
  if (!text.endsWith('\n')) throw new Error('a note text ends in a newline');
  return `${text}\n${lines.join('')}`;
}

/** An Ed25519 note signer (type 0x01) from a 32-byte public key and a private key object. */
export interface NoteSigner {
  name: string;
  keyId: number;
  vkey: string;
  /** The signature line over `text`. */
  signLine(text: string): string;
}

export function ed25519NoteSigner(name: string, publicKey: Uint8Array, privateKey: KeyObject): NoteSigner {
  const keyId = noteKeyId(name, SIG_ED25519, publicKey);
  return {
    name,
    keyId,
    vkey: formatVkey(name, SIG_ED25519, publicKey),
    signLine: (text) => signatureLine(name, keyId, sign(null, Buffer.from(text, 'utf8'), privateKey)),
  };
}

/** Whether an Ed25519 (type 0x01) note signature by `key` over `text` verifies. Never throws. */
export function verifyEd25519NoteSignature(key: Vkey, text: string, sig: NoteSignature): boolean {
  if (key.type !== SIG_ED25519 || sig.name !== key.name || sig.keyId !== key.keyId) return false;
  if (sig.signature.length !== 64) return false;
  try {
    return verify(null, Buffer.from(text, 'utf8'), publicKeyFromRaw(key.publicKey), sig.signature);
  } catch {
    return false;
  }
}

/** The signatures of `note` made by `key` (same name and id): a note may carry several of a key. */
export const signaturesBy = (note: Note, key: Pick<Vkey, 'name' | 'keyId'>): NoteSignature[] =>
  note.signatures.filter((s) => s.name === key.name && s.keyId === key.keyId);
