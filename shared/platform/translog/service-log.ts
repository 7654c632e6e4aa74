// The service's own transparency log: its origin and key, the checkpoint signed with every append (or
// batch of appends), and what it publishes about itself. The formats are in checkpoint.ts and note.ts;
// the rows in pg-log.ts, pg-checkpoints.ts and pg-tiles.ts.
import type { Knex } from 'knex';
import { logOrigin, logSigningKey } from '../keys';
import { checkpointText } from './checkpoint';
import { fromHex, leafHash } from './merkle';
import { SIG_ED25519, formatNote, formatVkey, noteKeyId, signatureLine } from './note';
import type { NoteSigner } from './note';
import {
  bestCheckpointFor,
  checkpointAt,
  checkpointBetween,
  cosignatureLines,
  noteLines,
  saveCheckpoint,
  withCosignatures,
} from './pg-checkpoints';
import { appendLeaves, headOf, inclusionProofAt, leafByKey, lockLog, saveTreeHead } from './pg-log';
import type { Appended, NewLeaf, TreeHeadRow } from './pg-log';
import { EntryMissing, entryBundle, tileData } from './pg-tiles';
import { formatTlogProof } from './proof';
import { TILE_WIDTH, parseTilePath, tileWidth } from './tiles';
import { witnessPolicy } from './witnessing';
import { signTreeHead } from './tree-head';
import type { SignedTreeHead } from './tree-head';

/** The log's tiles are served under this path of the site (c2sp.org/tlog-tiles' prefix). */
export const LOG_PATH = '/log';

let signer: NoteSigner | undefined;

/** The log key as a signed-note Ed25519 signer named by the origin. */
export function logNoteSigner(): NoteSigner {
  if (!signer) {
    const key = logSigningKey();
    const name = logOrigin();
    const publicKey = Buffer.from(key.publicKey, 'base64url');
    const keyId = noteKeyId(name, SIG_ED25519, publicKey);
    signer = {
      name,
      keyId,
      vkey: formatVkey(name, SIG_ED25519, publicKey),
      signLine: (text) => signatureLine(name, keyId, Buffer.from(key.sign(text), 'base64url')),
    };
  }
  return signer;
}

export interface Signed {
  /** The checkpoint note (the log's signature only). */
  checkpoint: string;
  /** The same size and root as a JSON tree head, signed with the log key (the JSON routes' form). */
  treeHead: SignedTreeHead;
}

/** Signs and stores the checkpoint of a size, and its JSON tree head, in the append's transaction. */
export async function signCheckpoint(trx: Knex.Transaction, treeSize: number, root: Buffer): Promise<Signed> {
  const s = logNoteSigner();
  const text = checkpointText({ origin: s.name, size: treeSize, root });
  const checkpoint = formatNote(text, [s.signLine(text)]);
  await saveCheckpoint(trx, { treeSize, root, note: checkpoint });
  const treeHead = signTreeHead({ treeSize, rootHash: root, timestamp: new Date() }, logSigningKey());
  await saveTreeHead(trx, treeHead);
  return { checkpoint, treeHead };
}

/**
 * Appends entries now, under the log's lock, and signs one checkpoint for them, all in the caller's
 * transaction: a rollback leaves neither leaf nor checkpoint. For packages, published one at a time;
 * what is published often goes through the sequencer (sequencer.ts).
 */
export async function appendEntries(
  trx: Knex.Transaction,
  leaves: readonly NewLeaf[],
): Promise<Appended & Signed> {
  await lockLog(trx);
  const appended = await appendLeaves(trx, leaves);
  return { ...appended, ...(await signCheckpoint(trx, appended.treeSize, appended.root)) };
}

export interface Witness {
  name: string;
  /** The witness's cosignature key (signed-note vkey, type 0x04). */
  vkey: string;
  url?: string;
}

/** The witnesses of LOG_WITNESSES, their keys in signed-note form (none when unset). */
export function logWitnesses(): Witness[] {
  const configured = witnessPolicy();
  if (!configured) return [];
  return [...configured.policy.witnesses].map(([name, w]) => ({
    name,
    vkey: formatVkey(w.key.name, w.key.type, w.key.publicKey),
    ...(w.url ? { url: w.url } : {}),
  }));
}

/** The lines of LOG_WITNESSES a verifier's policy takes after the log's own (its witnesses, groups and quorum). */
export function witnessPolicyLines(): string {
  return (witnessPolicy()?.text ?? 'quorum none')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#') && !/^log[ \t]/.test(l))
    .map((l) => `${l}\n`)
    .join('');
}

/** A tlog-policy (c2sp.org/tlog-policy) for this log as it signs now: its key, then LOG_WITNESSES. */
export function logPolicy(tilesUrl: string): string {
  return `log ${logNoteSigner().vkey} ${tilesUrl}\n${witnessPolicyLines()}`;
}

export type LogProofOutcome =
  | { status: 'proved'; proof: string; index: number; treeSize: number }
  | { status: 'not_logged' }
  | { status: 'no_checkpoint' };

/**
 * The C2SP tlog proof of the leaf logged under `key`: its entry as `extra`, its inclusion proof, and
 * the checkpoint covering it that the most witnesses cosigned (with their cosignature lines).
 * `entryIfMissing` gives the entry of an older leaf whose bytes the log does not hold.
 */
export async function logProofFor(
  db: Knex,
  key: string,
  entryIfMissing: () => Buffer,
): Promise<LogProofOutcome> {
  const leaf = await leafByKey(db, key);
  if (!leaf) return { status: 'not_logged' };
  const cp = await bestCheckpointFor(db, leaf.index);
  if (!cp) return { status: 'no_checkpoint' };
  const entry = leaf.entry ?? entryIfMissing();
  if (!leafHash(entry).equals(leaf.leafHash))
    throw new Error(`the entry of leaf ${leaf.index} does not hash to the stored leaf`);
  const [inclusion, lines] = await Promise.all([
    inclusionProofAt(db, leaf.index, cp.treeSize),
    cosignatureLines(db, cp.treeSize),
  ]);
  const proof = formatTlogProof({
    extra: entry,
    index: leaf.index,
    path: inclusion.path.map(fromHex),
    checkpoint: withCosignatures(cp.note, lines),
  });
  return { status: 'proved', proof, index: leaf.index, treeSize: cp.treeSize };
}

/** The checkpoint a client fetches: the latest, with every cosignature stored for its size. */
export async function servedCheckpoint(db: Knex): Promise<string | undefined> {
  const cp = await checkpointAt(db);
  return cp ? withCosignatures(cp.note, await cosignatureLines(db, cp.treeSize)) : undefined;
}

/**
 * What a client polls for, in one statement (one snapshot): the latest signed tree head, and the
 * checkpoint servedCheckpoint serves (the latest, with every cosignature stored for its size).
 */
export async function logHead(
  db: Knex,
): Promise<{ head: SignedTreeHead | undefined; checkpoint: string | undefined }> {
  const { rows } = await db.raw<{
    rows: Array<Partial<TreeHeadRow> & { note: string | null; lines: string[] | null }>;
  }>(
    `select h.tree_size::text as tree_size, h.root_hash, h.timestamp, h.key_id, h.signature, c.note,
       (select json_agg(s.line order by s.cosigned_at, s.witness_name)
          from checkpoint_cosignatures s where s.tree_size = c.tree_size) as lines
     from (select 1) one
     left join lateral (select * from tree_heads order by tree_size desc limit 1) h on true
     left join lateral (select tree_size, note from checkpoints order by tree_size desc limit 1) c on true`,
  );
  const { note, lines, ...head } = rows[0]!;
  return {
    head: head.tree_size == null ? undefined : headOf(head as TreeHeadRow),
    checkpoint: note == null ? undefined : withCosignatures(note, noteLines(lines ?? [])),
  };
}

export type TileReply =
  | { status: 'ok'; body: Buffer; full: boolean }
  | { status: 'absent' }
  | { status: 'entries_unavailable'; index: number };

/**
 * A tile or entry bundle by its path under the prefix (`tile/…`), as tlog-tiles asks: a full tile once
 * the latest checkpoint's tree has it; a partial one only at a width some checkpoint's size calls for;
 * nothing else.
 */
export async function servedTile(db: Knex, path: string): Promise<TileReply> {
  const ref = path.length <= 256 ? parseTilePath(path) : null;
  if (!ref) return { status: 'absent' };
  const latest = await checkpointAt(db);
  if (!latest) return { status: 'absent' };
  const level = ref.level === 'entries' ? 0 : ref.level;
  const full = ref.width === TILE_WIDTH;
  if (full) {
    if (tileWidth(latest.treeSize, level, ref.index) !== TILE_WIDTH) return { status: 'absent' };
  } else {
    // A tree of size s has a partial tile of width floor(s / 256^L) mod 256 at index floor(s / 256^(L+1)).
    const span = TILE_WIDTH ** level;
    const from = (ref.index * TILE_WIDTH + ref.width) * span;
    if (!Number.isSafeInteger(from + span) || from > latest.treeSize) return { status: 'absent' };
    if (!(await checkpointBetween(db, from, from + span))) return { status: 'absent' };
  }
  try {
    const body =
      ref.level === 'entries'
        ? await entryBundle(db, ref.index, ref.width)
        : await tileData(db, level, ref.index, ref.width);
    return body ? { status: 'ok', body, full } : { status: 'absent' };
  } catch (err) {
    if (err instanceof EntryMissing) return { status: 'entries_unavailable', index: err.index };
    throw err;
  }
}

export interface LogDescription {
  origin: string;
  /** The log's signed-note verifier key (Ed25519, type 0x01), named by the origin. */
  vkey: string;
  /** The same key raw (base64url) with its key id: the JSON tree heads are signed with it. */
  key: { keyId: string; publicKey: string };
  /** The tlog-tiles prefix: `<tiles>checkpoint`, `<tiles>tile/<L>/<N>`, `<tiles>tile/entries/<N>`. */
  tiles: string;
  checkpoint: string;
  treeSize: number;
  witnesses: Witness[];
  /** A tlog-policy for this log and its witnesses. */
  policy: string;
}

/** What `GET /api/proof-workflows/log` says of the log, for a site served at `siteBase`. */
export async function describeLog(db: Knex, siteBase: string): Promise<LogDescription> {
  const tiles = `${siteBase}${LOG_PATH}/`;
  const latest = await checkpointAt(db);
  return {
    origin: logOrigin(),
    vkey: logNoteSigner().vkey,
    key: { keyId: logSigningKey().keyId, publicKey: logSigningKey().publicKey },
    tiles,
    checkpoint: `${tiles}checkpoint`,
    treeSize: latest?.treeSize ?? 0,
    witnesses: logWitnesses(),
    policy: logPolicy(tiles),
  };
}
