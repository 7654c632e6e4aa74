// The standard log (c2sp.org/tlog-checkpoint, tlog-tiles): each leaf keeps its entry bytes (what its
// hash is the hash of, served in the tiles' entry bundles), each signed checkpoint is kept, with the
// cosignature lines witnesses add to it, and what is published often waits in a queue the worker's
// sequencer integrates in batches.
//
// Leaves made before this migration hashed the canonical signed package without its log proof; their
// entry is rebuilt from the stored package, and written only when it hashes to the stored leaf, fits
// 65535 bytes (an entry bundle's bound), and the package is public already (workflow, governance and
// auction packages): entry bundles are public, and a treasury package is its owner's alone. Any other
// leaf keeps a null entry: docs/workflows.md ("Leaves without entry bytes") says what that leaves out.
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { canonicalJson } from '../shared/platform/canonical';

const BATCH = 500;
const MAX_ENTRY = 0xffff;

const leafHashOf = (data: Buffer): Buffer =>
  createHash('sha256').update(Uint8Array.of(0)).update(data).digest();

async function backfillEntries(knex: Knex): Promise<void> {
  let after = -1;
  for (;;) {
    const { rows } = (await knex.raw(
      `select l.leaf_index, l.leaf_hash,
              coalesce(p.package, pt.tally_package, pf.final_package, a.package) as package
         from translog_leaves l
         left join proof_packages p on p.id = l.proof_id
         left join proposals pt on pt.tally_proof_id = l.proof_id
         left join proposals pf on pf.final_proof_id = l.proof_id
         left join auctions a on a.proof_id = l.proof_id
        where l.leaf_index > ?
        order by l.leaf_index
        limit ?`,
      [after, BATCH],
    )) as { rows: Array<{ leaf_index: string; leaf_hash: Buffer; package: Record<string, unknown> | null }> };
    if (rows.length === 0) return;
    after = Number(rows[rows.length - 1]!.leaf_index);
    const found: Array<[number, Buffer]> = [];
    for (const r of rows) {
      if (!r.package) continue;
      const { log: _log, ...signed } = r.package;
      const entry = Buffer.from(canonicalJson(signed), 'utf8');
      if (entry.length <= MAX_ENTRY && leafHashOf(entry).equals(r.leaf_hash))
        found.push([Number(r.leaf_index), entry]);
    }
    if (found.length) {
      await knex.raw(
        `update translog_leaves t set entry = v.entry
           from (values ${found.map(() => '(?::bigint, ?::bytea)').join(', ')}) as v(i, entry)
          where t.leaf_index = v.i`,
        found.flat(),
      );
    }
  }
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('translog_leaves', (t) => {
    t.binary('entry');
  });
  await knex.raw(
    `alter table translog_leaves add constraint translog_leaves_entry_size check (octet_length(entry) <= 65535)`,
  );

  // One signed checkpoint per size the log was at when it signed (per append, or per sequenced batch).
  await knex.schema.createTable('checkpoints', (t) => {
    t.bigInteger('tree_size').primary();
    t.binary('root').notNullable();
    /** The note as the log signed it: text, blank line, the log's signature line. */
    t.text('note').notNullable();
    t.timestamp('signed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  // Witnesses' cosignature lines (c2sp.org/tlog-cosignature), served with the checkpoint of their size.
  await knex.schema.createTable('checkpoint_cosignatures', (t) => {
    // The size of the checkpoint cosigned (the witnessing loop checks each line against its text).
    t.bigInteger('tree_size').notNullable();
    // The witness's name in LOG_WITNESSES.
    t.text('witness_name').notNullable();
    // One note signature line, `— <key name> <base64>`, as the witness answered it.
    t.text('line').notNullable();
    // The time the cosignature states.
    t.timestamp('cosigned_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['tree_size', 'witness_name']);
  });

  // Entries waiting for the sequencer; a key is queued once and logged once.
  await knex.schema.createTable('translog_queue', (t) => {
    t.bigIncrements('seq').primary();
    t.text('key').notNullable().unique();
    t.binary('entry').notNullable();
    t.timestamp('enqueued_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(
    `alter table translog_queue add constraint translog_queue_entry_size check (octet_length(entry) <= 65535)`,
  );

  await backfillEntries(knex);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('translog_queue');
  await knex.schema.dropTable('checkpoint_cosignatures');
  await knex.schema.dropTable('checkpoints');
  await knex.raw('alter table translog_leaves drop constraint translog_leaves_entry_size');
  await knex.schema.alterTable('translog_leaves', (t) => {
    t.dropColumn('entry');
  });
}
