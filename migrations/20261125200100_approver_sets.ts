// Anonymous approvals for proof workflows. An organization keeps, per template stage, an approver set:
// identity commitments its approvers made themselves (Poseidon of a secret only they hold), in a
// Poseidon tree whose every root is put on the transparency log. An approval is then a membership proof
// with a nullifier scoped to (workflow proof id, stage) and bound to the stage's content: the service
// keeps the proof beside the audit entry it recorded, keyed by the nullifier (one approval per approver
// per stage), and nothing that says which approver made it.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('approver_sets', (t) => {
    t.text('id').primary();
    // The license (or 'operator') whose workflows of this template take this set's approvals.
    t.text('owner').notNullable();
    t.text('template').notNullable();
    t.text('stage').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['owner', 'template', 'stage']);
  });

  await knex.schema.createTable('approver_set_members', (t) => {
    t.text('set_id').notNullable().references('approver_sets.id').onDelete('CASCADE');
    t.integer('leaf_index').notNullable();
    // Poseidon(identity secret), decimal.
    t.text('identity_commitment').notNullable();
    t.primary(['set_id', 'leaf_index']);
    t.unique(['set_id', 'identity_commitment']);
  });

  // Every root the set's tree has had, in order; approvals are taken against the most recent few.
  await knex.schema.createTable('approver_set_roots', (t) => {
    t.text('set_id').notNullable().references('approver_sets.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.text('root').notNullable();
    t.integer('size').notNullable();
    // The hex sha256 of the root's statement, as its log entry names it.
    t.text('statement_sha256').notNullable();
    t.primary(['set_id', 'seq']);
  });

  await knex.schema.createTable('workflow_approvals', (t) => {
    t.text('workflow_id').notNullable().references('workflows.id').onDelete('CASCADE');
    // The audit entry (an `approve`) this proof stands behind.
    t.integer('seq').notNullable();
    t.text('stage').notNullable();
    // Poseidon(identity secret, scope), decimal: a second approval of one approver repeats it.
    t.text('nullifier').notNullable().unique();
    t.text('set_id').notNullable().references('approver_sets.id');
    t.integer('root_seq').notNullable();
    t.text('root').notNullable();
    t.jsonb('proof').notNullable();
    t.jsonb('public_signals').notNullable();
    t.primary(['workflow_id', 'seq']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('workflow_approvals');
  await knex.schema.dropTable('approver_set_roots');
  await knex.schema.dropTable('approver_set_members');
  await knex.schema.dropTable('approver_sets');
}
