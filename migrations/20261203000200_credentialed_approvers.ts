// Credentialed approver sets: what each approver of a set must hold (a credential requirement, in its
// root statement and so fixed with the set at prepare), and for each credentialed approval the issuer's
// and the revocation root's statements it was accepted on, which its package carries.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('approver_set_roots', (t) => {
    t.jsonb('credential');
  });
  await knex.schema.alterTable('workflow_approver_sets', (t) => {
    t.jsonb('credential');
  });
  await knex.schema.alterTable('workflow_approvals', (t) => {
    t.jsonb('credential');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workflow_approvals', (t) => {
    t.dropColumn('credential');
  });
  await knex.schema.alterTable('workflow_approver_sets', (t) => {
    t.dropColumn('credential');
  });
  await knex.schema.alterTable('approver_set_roots', (t) => {
    t.dropColumn('credential');
  });
}
