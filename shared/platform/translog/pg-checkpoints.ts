// Checkpoints (c2sp.org/tlog-checkpoint) of the transparency log in Postgres, and the witnesses'
// cosignature lines for them.
import type { Conn } from './pg-log';

export interface StoredCheckpoint {
  treeSize: number;
  root: Buffer;
  /** The signed note as the log signed it: its text and the log's signature line. */
  note: string;
}

export async function saveCheckpoint(db: Conn, c: StoredCheckpoint): Promise<void> {
  await db('checkpoints')
    .insert({ tree_size: c.treeSize, root: c.root, note: c.note })
    .onConflict('tree_size')
    .ignore();
}

interface CheckpointRow {
  tree_size: string;
  root: Buffer;
  note: string;
}

const checkpointOf = (r: CheckpointRow): StoredCheckpoint => ({
  treeSize: Number(r.tree_size),
  root: r.root,
  note: r.note,
});

/** The checkpoint of a size (the latest without one), or undefined. */
export async function checkpointAt(db: Conn, size?: number): Promise<StoredCheckpoint | undefined> {
  const q = db('checkpoints').select('tree_size', 'root', 'note');
  const row = (await (
    size === undefined ? q.orderBy('tree_size', 'desc') : q.where('tree_size', size)
  ).first()) as CheckpointRow | undefined;
  return row ? checkpointOf(row) : undefined;
}

/** A signature line as a note carries it: `— <name> <base64>` and a newline. */
const SIGNATURE_LINE = /^\u2014 [^\s+]+ [A-Za-z0-9+/]+={0,2}$/;
/** A note carries at most 64 signatures (signed-note): the log's, and this many cosignatures. */
const MAX_COSIGNATURES = 63;

/**
 * The cosignature lines stored for a checkpoint size, oldest first. Lines that could not sit in a
 * note are left out, so a bad row never breaks the checkpoint a verifier reads.
 */
export async function cosignatureLines(db: Conn, size: number): Promise<string[]> {
  const rows = (await db('checkpoint_cosignatures')
    .where('tree_size', size)
    .orderBy([
      { column: 'cosigned_at', order: 'asc' },
      { column: 'witness_name', order: 'asc' },
    ])
    .select('line')) as Array<{ line: string }>;
  return noteLines(rows.map((r) => r.line));
}

/** Stored cosignature lines (oldest first) as a note carries them: those that fit, each with its newline. */
export function noteLines(stored: readonly string[]): string[] {
  return stored
    .map((l) => l.replace(/\n$/, ''))
    .filter((l) => SIGNATURE_LINE.test(l))
    .slice(0, MAX_COSIGNATURES)
    .map((l) => `${l}\n`);
}

/** The checkpoint note with every cosignature line stored for its size appended. */
export const withCosignatures = (note: string, lines: readonly string[]): string => note + lines.join('');

/**
 * The checkpoint covering leaf `index` a verifier is most likely to accept: the one the most
 * witnesses cosigned among the latest 64 cosigned, the latest if none was; undefined if no
 * checkpoint covers it.
 */
export async function bestCheckpointFor(db: Conn, index: number): Promise<StoredCheckpoint | undefined> {
  const { rows } = (await db.raw(
    `select tree_size from (
       select tree_size, count(*) as n from checkpoint_cosignatures
       where tree_size in (select distinct tree_size from checkpoint_cosignatures where tree_size > ?
                           order by tree_size desc limit 64)
       group by tree_size
     ) c order by n desc, tree_size desc limit 1`,
    [index],
  )) as { rows: Array<{ tree_size: string }> };
  const cosigned = rows[0] ? await checkpointAt(db, Number(rows[0].tree_size)) : undefined;
  const latest = await checkpointAt(db);
  if (cosigned) return cosigned;
  return latest && latest.treeSize > index ? latest : undefined;
}

/** Whether a checkpoint was made at a size in [from, to). */
export async function checkpointBetween(db: Conn, from: number, to: number): Promise<boolean> {
  const row = (await db('checkpoints')
    .where('tree_size', '>=', from)
    .andWhere('tree_size', '<', to)
    .first('tree_size')) as unknown;
  return row !== undefined;
}
