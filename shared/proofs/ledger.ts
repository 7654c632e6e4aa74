// What proposals, treasury requests and auctions share: their hash-chained audit entries (the chain of
// proof workflows) and the append of a signed package to the one transparency log, in the caller's
// transaction so a crash leaves neither a package without its leaf nor a leaf without its package.
import type { Knex } from 'knex';
import { chainEntry } from './chain';
import { attachLogProof, packageEntry } from './envelope';
import type { Envelope } from './envelope';
import { findLeaf, inclusionProofAt, lockLog } from '../platform/translog/pg-log';
import { appendEntries } from '../platform/translog/service-log';
import { leafHashHex } from '../platform/translog/tree-head';
import type { ChainLink, EntryBody } from './records';

export type { ChainLink, EntryBody } from './records';

interface ChainedRow {
  chain_head: string;
  entry_count: number;
}

/**
 * Appends an entry to the subject's chain. The caller holds the subject's row lock, so the sequence
 * cannot fork; the row's head and count move in the same transaction.
 */
export async function appendEntry(
  trx: Knex.Transaction,
  table: 'proposals' | 'treasury_requests',
  subjectId: string,
  row: ChainedRow,
  entry: Omit<EntryBody, 'seq'>,
): Promise<ChainLink> {
  const body: EntryBody = { seq: row.entry_count, ...entry };
  const link = chainEntry(row.chain_head, body);
  await trx('coordination_entries').insert({
    subject_id: subjectId,
    seq: body.seq,
    body: JSON.stringify(body),
    prev_hash: link.prevHash,
    entry_hash: link.entryHash,
  });
  await trx(table)
    .where({ id: subjectId, entry_count: row.entry_count })
    .update({ chain_head: link.entryHash, entry_count: row.entry_count + 1, updated_at: trx.fn.now() });
  row.chain_head = link.entryHash;
  row.entry_count += 1;
  return link;
}

export async function loadEntries(db: Knex | Knex.Transaction, subjectId: string): Promise<ChainLink[]> {
  const rows = (await db('coordination_entries').where('subject_id', subjectId).orderBy('seq')) as Array<{
    body: EntryBody;
    prev_hash: string;
    entry_hash: string;
  }>;
  return rows.map((r) => ({ ...r.body, prevHash: r.prev_hash, entryHash: r.entry_hash }));
}

/**
 * Appends a signed package's log entry (its kind, proof id and sha256) under its proof id to the
 * transparency log, with a checkpoint, and returns the package with its inclusion proof.
 */
export async function appendPackageToLog<P extends Envelope>(trx: Knex.Transaction, pkg: P): Promise<P> {
  await lockLog(trx);
  if (await findLeaf(trx, pkg.proofId)) throw new Error(`the log already holds a leaf for ${pkg.proofId}`);
  const entry = packageEntry(pkg);
  const { start: index, treeSize, treeHead } = await appendEntries(trx, [{ key: pkg.proofId, entry }]);
  const inclusion = await inclusionProofAt(trx, index, treeSize);
  return attachLogProof(pkg, {
    leafIndex: index,
    treeSize,
    path: inclusion.path,
    treeHead,
    leafHash: leafHashHex(entry),
  });
}
