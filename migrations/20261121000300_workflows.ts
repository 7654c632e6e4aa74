// Proof workflows: workflows, their stage records and hash-chained audit entries, proof packages, and
// the one append-only transparency log (leaves, complete subtrees, signed tree heads).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('workflows', (t) => {
    t.text('id').primary();
    t.text('proof_id').notNullable().unique();
    t.text('template').notNullable();
    t.integer('template_version').notNullable();
    t.text('status').notNullable().defaultTo('active');
    // Who may post events: 'operator' or a license id. Never an actor identity.
    t.text('owner').notNullable();
    t.text('chain_head').notNullable();
    t.integer('entry_count').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['template', 'status']);
  });
  await knex.raw(`alter table workflows add constraint workflows_status_check check (status in
    ('active','completed','rejected'))`);

  // The spec's stage record; timestamps are kept as the exact ISO strings the hashes cover.
  await knex.schema.createTable('workflow_stages', (t) => {
    t.text('workflow_id').notNullable().references('workflows.id').onDelete('CASCADE');
    t.smallint('idx').notNullable();
    t.text('stage').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.text('actor_commitment');
    t.text('timestamp');
    t.text('proof_hash');
    t.primary(['workflow_id', 'idx']);
    t.unique(['workflow_id', 'stage']);
  });
  await knex.raw(`alter table workflow_stages add constraint workflow_stages_status_check check (status in
    ('pending','in_progress','changes_requested','completed','rejected'))`);

  // One row per chained entry; (workflow_id, seq) unique so two writers can never fork a chain.
  await knex.schema.createTable('audit_entries', (t) => {
    t.text('workflow_id').notNullable().references('workflows.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.text('stage').notNullable();
    t.text('action').notNullable();
    t.text('actor_commitment').notNullable();
    t.text('evidence_commitment');
    t.text('evidence_kind');
    t.text('at').notNullable();
    t.text('prev_hash').notNullable();
    t.text('entry_hash').notNullable();
    // The salt of the evidence commitment: private, never published; lets the owner open it later.
    t.text('evidence_salt');
    t.timestamp('recorded_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['workflow_id', 'seq']);
  });

  // Hashes of blind policy proofs the service has verified: evidence naming one counts as such a proof.
  await knex.schema.createTable('verified_policy_proofs', (t) => {
    t.text('proof_hash').primary();
    t.text('policy_id').notNullable();
    t.timestamp('verified_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  // The outbox of the `proofs` queue for workflow packages; id is the proof id (the job id).
  await knex.schema.createTable('proof_packages', (t) => {
    t.text('id').primary();
    t.text('workflow_id').notNullable().unique().references('workflows.id').onDelete('CASCADE');
    t.text('kind').notNullable().defaultTo('workflow');
    t.text('status').notNullable().defaultTo('pending');
    t.jsonb('package');
    t.bigInteger('leaf_index');
    t.text('error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['status', 'updated_at']);
  });
  await knex.raw(`alter table proof_packages add constraint proof_packages_status_check check (status in
    ('pending','logged','failed'))`);

  await knex.schema.createTable('translog_leaves', (t) => {
    t.bigInteger('leaf_index').primary();
    t.binary('leaf_hash').notNullable();
    // One leaf per package: a retried job finds its leaf instead of appending a second.
    t.text('proof_id').notNullable().unique();
    t.timestamp('appended_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`alter table translog_leaves add constraint translog_leaves_dense check (leaf_index >= 0)`);

  // Complete subtrees (2^level leaves from `start`), level >= 1: proofs read O(log n) rows.
  await knex.schema.createTable('translog_nodes', (t) => {
    t.smallint('level').notNullable();
    t.bigInteger('start').notNullable();
    t.binary('hash').notNullable();
    t.primary(['level', 'start']);
  });

  await knex.schema.createTable('tree_heads', (t) => {
    t.bigInteger('tree_size').primary();
    t.text('root_hash').notNullable();
    t.text('timestamp').notNullable();
    t.text('key_id').notNullable();
    t.text('signature').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('tree_heads');
  await knex.schema.dropTable('translog_nodes');
  await knex.schema.dropTable('translog_leaves');
  await knex.schema.dropTable('proof_packages');
  await knex.schema.dropTable('verified_policy_proofs');
  await knex.schema.dropTable('audit_entries');
  await knex.schema.dropTable('workflow_stages');
  await knex.schema.dropTable('workflows');
}
