// A credential stage's parameters published in plain (the template allows it, the owner chose it at
// prepare): by field, without salts (each is committed with salt 0). Null: the parameters are committed.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workflow_stages', (t) => {
    t.jsonb('policy_plain');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workflow_stages', (t) => {
    t.dropColumn('policy_plain');
  });
}
