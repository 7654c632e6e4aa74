// The C2SP formats the log speaks, checked against the specifications' own examples where they give
// one: signed notes and vkeys, checkpoints, Ed25519 cosignatures, tile paths and widths, entry
// bundles, tlog proofs and policies.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  checkpointText,
  cosigner,
  cosignatureTime,
  logSigned,
  parseCheckpoint,
} from '../../shared/platform/translog/checkpoint';
import { leafHash, rootHash, subtreeHash } from '../../shared/platform/translog/merkle';
import {
  SIG_ED25519,
  ed25519NoteSigner,
  formatNote,
  formatVkey,
  parseNote,
  parseVkey,
  verifyEd25519NoteSignature,
} from '../../shared/platform/translog/note';
import { checkCheckpoint, parsePolicy } from '../../shared/platform/translog/policy';
import { formatTlogProof, parseTlogProof } from '../../shared/platform/translog/proof';
import {
  decodeEntryBundle,
  encodeEntryBundle,
  encodeIndex,
  parseTilePath,
  tileBytes,
  tilePath,
  tileWidth,
} from '../../shared/platform/translog/tiles';

function keyPair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
  return { raw, privateKey };
}

describe('signed notes (c2sp.org/signed-note)', () => {
  it('verifies the specification’s example with its vkey', () => {
    const key = parseVkey('example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k');
    expect(key).toMatchObject({ name: 'example.com/foo', keyId: 0x530d903a, type: SIG_ED25519 });
    const note = parseNote(
      'This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n',
    );
    expect(note.text).toBe('This is an example message.\n');
    expect(verifyEd25519NoteSignature(key, note.text, note.signatures[0]!)).toBe(true);
    expect(verifyEd25519NoteSignature(key, 'This is another message.\n', note.signatures[0]!)).toBe(false);
  });

  it('makes vkeys whose id matches their key, and refuses one that does not', () => {
    const { raw } = keyPair();
    const vkey = formatVkey('log.example/x', SIG_ED25519, raw);
    expect(parseVkey(vkey).publicKey.equals(raw)).toBe(true);
    const [, name, key] = /^([^+]+)\+[0-9a-f]{8}\+(.*)$/.exec(vkey)!;
    expect(() => parseVkey(`${name}+00000000+${key}`)).toThrow(/does not match/);
    expect(() => parseVkey('bad name+00000000+AA==')).toThrow();
  });

  it('refuses notes with control characters, no blank line or malformed signature lines', () => {
    expect(() => parseNote('text\n— a AAAAAAA=\n')).toThrow();
    expect(() => parseNote('te\u0007xt\n\n— a AAAAAAA=\n')).toThrow(/control/);
    expect(() => parseNote('text\n\n- a AAAAAAA=\n')).toThrow(/signature line/);
    expect(() => parseNote('text\n\n— a AAAAAAA=')).toThrow(/newline/);
  });
});

describe('checkpoints and cosignatures', () => {
  const log = keyPair();
  const signer = ed25519NoteSigner('log.example/x', log.raw, log.privateKey);
  const root = rootHash([leafHash(Buffer.from('a')), leafHash(Buffer.from('b'))], 2);
  const text = checkpointText({ origin: 'log.example/x', size: 2, root });

  it('signs a checkpoint the log key verifies, and nothing else does', () => {
    const cp = parseCheckpoint(formatNote(text, [signer.signLine(text)]));
    expect(cp).toMatchObject({ origin: 'log.example/x', size: 2 });
    expect(cp.root.equals(root)).toBe(true);
    expect(logSigned(cp, parseVkey(signer.vkey))).toBe(true);
    const other = keyPair();
    const impostor = ed25519NoteSigner('log.example/x', other.raw, other.privateKey);
    expect(logSigned(cp, parseVkey(impostor.vkey))).toBe(false);
    // The same signature over another size is no checkpoint of this log.
    const forged = parseCheckpoint(formatNote(text.replace('\n2\n', '\n3\n'), [signer.signLine(text)]));
    expect(logSigned(forged, parseVkey(signer.vkey))).toBe(false);
  });

  it('refuses malformed checkpoint texts', () => {
    for (const bad of ['o\n02\nAAAA\n', 'o\n2\n', 'o\n-1\n' + root.toString('base64') + '\n', 'o\n2\nAAAA\n'])
      expect(() => parseCheckpoint(formatNote(bad, [signer.signLine(bad)]))).toThrow();
  });

  it('adds a witness cosignature with its time, and it verifies only over its checkpoint', () => {
    const w = keyPair();
    const witness = cosigner('witness.example/w1', w.raw, w.privateKey);
    const note = formatNote(text, [signer.signLine(text), witness.cosignLine(text, 1_700_000_000)]);
    const cp = parseCheckpoint(note);
    expect(cosignatureTime(cp, parseVkey(witness.vkey))).toBe(1_700_000_000);
    const moved = parseCheckpoint(
      formatNote(text.replace('\n2\n', '\n3\n'), [witness.cosignLine(text, 1_700_000_000)]),
    );
    expect(cosignatureTime(moved, parseVkey(witness.vkey))).toBeNull();
  });
});

describe('tiles (c2sp.org/tlog-tiles)', () => {
  it('encodes indexes and paths as the specification does', () => {
    expect(encodeIndex(1234067)).toBe('x001/x234/067');
    expect(encodeIndex(0)).toBe('000');
    expect(tilePath({ level: 0, index: 1234067, width: 256 })).toBe('tile/0/x001/x234/067');
    expect(tilePath({ level: 'entries', index: 5, width: 17 })).toBe('tile/entries/005.p/17');
    expect(parseTilePath('tile/2/x001/x234/067.p/8')).toEqual({ level: 2, index: 1234067, width: 8 });
    for (const bad of ['tile/0/1234', 'tile/64/000', 'tile/0/x000/001', 'tile/0/000.p/256', 'tile/0/000.p/0'])
      expect(parseTilePath(bad), bad).toBeNull();
  });

  it('gives a tree of 70,000 leaves the tiles the specification lists', () => {
    const size = 70_000;
    const full0 = Array.from({ length: 300 }, (_, i) => tileWidth(size, 0, i)).filter((w) => w === 256);
    expect(full0).toHaveLength(273);
    expect(tileWidth(size, 0, 273)).toBe(112);
    expect(tileWidth(size, 1, 0)).toBe(256);
    expect(tileWidth(size, 1, 1)).toBe(17);
    expect(tileWidth(size, 2, 0)).toBe(1);
    expect(tileWidth(256, 0, 0)).toBe(256);
    expect(tileWidth(256, 1, 0)).toBe(1);
  });

  it('builds level-1 tiles of the Merkle hashes of full level-0 tiles', async () => {
    const leaves = Array.from({ length: 600 }, (_, i) => leafHash(Buffer.from(`entry ${i}`)));
    const source = {
      subtree: (start: number, height: number) => subtreeHash(leaves, start, start + 2 ** height),
    };
    const level1 = await tileBytes(source, 1, 0, tileWidth(600, 1, 0));
    expect(level1.length).toBe(2 * 32);
    expect(level1.subarray(32).equals(subtreeHash(leaves, 256, 512))).toBe(true);
  });

  it('bundles entries with uint16 lengths', () => {
    const entries = [Buffer.from('one'), Buffer.alloc(0), Buffer.alloc(65535, 7)];
    expect(decodeEntryBundle(encodeEntryBundle(entries))).toEqual(entries);
    expect(() => encodeEntryBundle([Buffer.alloc(65536)])).toThrow();
    expect(() => decodeEntryBundle(Buffer.from([0, 5, 1]))).toThrow(/truncated/);
  });
});

describe('tlog proofs and policies', () => {
  const log = keyPair();
  const signer = ed25519NoteSigner('log.example/x', log.raw, log.privateKey);
  const w1 = keyPair();
  const w2 = keyPair();
  const c1 = cosigner('w1.example', w1.raw, w1.privateKey);
  const c2 = cosigner('w2.example', w2.raw, w2.privateKey);
  const root = rootHash([leafHash(Buffer.from('a'))], 1);
  const text = checkpointText({ origin: 'log.example/x', size: 1, root });

  it('round-trips a tlog proof with its extra data', () => {
    const checkpoint = formatNote(text, [signer.signLine(text)]);
    const proof = formatTlogProof({ extra: Buffer.from('entry'), index: 0, path: [], checkpoint });
    expect(proof.startsWith('c2sp.org/tlog-proof@v1\nextra ZW50cnk=\nindex 0\n\n')).toBe(true);
    const parsed = parseTlogProof(proof);
    expect(parsed.extra?.toString()).toBe('entry');
    expect(parsed.parsed.size).toBe(1);
    expect(() => parseTlogProof(proof.replace('index 0', 'index 01'))).toThrow();
  });

  it('checks a checkpoint against a k-of-n quorum', () => {
    const policy = parsePolicy(
      [
        `log ${signer.vkey}`,
        `witness A ${c1.vkey}`,
        `witness B ${c2.vkey}`,
        'group both all A B',
        'quorum both',
      ].join('\n'),
    );
    const one = parseCheckpoint(formatNote(text, [signer.signLine(text), c1.cosignLine(text, 10)]));
    expect(checkCheckpoint(policy, one)).toMatchObject({ ok: false });
    const two = parseCheckpoint(
      formatNote(text, [signer.signLine(text), c1.cosignLine(text, 10), c2.cosignLine(text, 11)]),
    );
    expect(checkCheckpoint(policy, two)).toMatchObject({ ok: true });
    expect(() => parsePolicy(`witness A ${signer.vkey}\nquorum A`)).toThrow(/cosignature key/);
    expect(() => parsePolicy('group g 1 nobody\nquorum g')).toThrow(/not defined/);
    expect(checkCheckpoint(parsePolicy(`log ${signer.vkey}\nquorum none`), one).ok).toBe(true);
  });
});
