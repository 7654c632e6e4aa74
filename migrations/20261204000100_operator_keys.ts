// Named operator keys: people who operate the service, each with a role (read-only, support, admin),
// issued and revoked by an admin operator and named in every audited action they take. Only a key's
// sha256 is kept; the bootstrap OPERATOR_TOKEN stays outside this table.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('operator_keys', (t) => {
    t.text('id').primary();
    // Unique for good, revoked keys included: an audit line's name is one person's.
    t.text('name').notNullable().unique();
    t.text('role').notNullable();
    t.text('key_hash').notNullable().unique();
    t.text('prefix').notNullable();
    t.text('created_by').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('rotated_at', { useTz: true });
    t.timestamp('last_used_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
  });
  await knex.raw(
    `alter table operator_keys add constraint operator_keys_role check (role in ('read-only', 'support', 'admin'))`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('operator_keys');
}
