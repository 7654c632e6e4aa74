// Approver sets fixed when a workflow is prepared. A workflow takes approvals at a stage only against
// the root its owner's set had at prepare, so members added later never count for it; the fixing is
// logged (kind workflow_approvers) in the prepare transaction, before the workflow's first event. Each
// root of a set also keeps when it was made.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('approver_set_roots', (t) => {
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('workflow_approver_sets', (t) => {
    t.text('workflow_id').notNullable().references('workflows.id').onDelete('CASCADE');
    t.text('stage').notNullable();
    // The stage's position in the template, the order the statement lists the sets in.
    t.integer('idx').notNullable();
    t.text('set_id').notNullable().references('approver_sets.id');
    t.integer('root_seq').notNullable();
    t.text('root').notNullable();
    t.integer('size').notNullable();
    // The hex sha256 of the root's own logged statement (approver_set).
    t.text('root_statement').notNullable();
    t.timestamp('fixed_at', { useTz: true }).notNullable();
    // Where the workflow's workflow_approvers statement sits in the log.
    t.bigInteger('leaf_index').notNullable();
    t.primary(['workflow_id', 'stage']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('workflow_approver_sets');
  await knex.schema.alterTable('approver_set_roots', (t) => {
    t.dropColumn('created_at');
  });
}
