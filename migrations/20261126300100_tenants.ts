// Tenants: licenses an operator issues by hand (an invoice paid off-chain), suspends, resumes, revokes
// and rotates; an organization's own API keys with scopes, stored as hashes; and the record of every
// administrative action (who, what, when). Indexes so an organization lists its own resources by id.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('licenses', (t) => {
    t.timestamp('suspended_at', { useTz: true });
    // The operator's note on a license issued by hand (the invoice it settles); never public.
    t.text('note');
    t.timestamp('rotated_at', { useTz: true });
  });
  // A license issued by hand has a checkout of its own, settled `manual`, so every license keeps one.
  await knex.raw('alter table checkouts drop constraint checkouts_settlement_check');
  await knex.raw(`alter table checkouts add constraint checkouts_settlement_check check (settlement is null or
    settlement in ('exact','overpaid','paid_late','trial','manual'))`);

  await knex.schema.createTable('organization_keys', (t) => {
    t.text('id').primary();
    t.text('license_id').notNullable().references('licenses.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.specificType('scopes', 'text[]').notNullable();
    // sha256 of the key; the key itself is shown once and never stored.
    t.text('key_hash').notNullable().unique();
    // The first characters of the key, for a person to tell keys apart in a list.
    t.text('prefix').notNullable();
    t.text('created_by').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_used_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.index(['license_id', 'id']);
  });

  await knex.schema.createTable('admin_actions', (t) => {
    t.bigIncrements('id');
    // 'operator', or the organization's credential: `license:<id>` or `key:<id>`.
    t.text('actor').notNullable();
    t.text('action').notNullable();
    t.text('target').notNullable();
    // The license the action concerns (null for agent keys), so an organization's actions list together.
    t.text('license_id');
    t.jsonb('detail').notNullable().defaultTo('{}');
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['license_id', 'id']);
  });

  for (const table of ['workflows', 'rooms', 'proposals', 'treasury_requests', 'auctions'])
    await knex.schema.alterTable(table, (t) => t.index(['owner', 'id'], `${table}_owner_id_index`));
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['workflows', 'rooms', 'proposals', 'treasury_requests', 'auctions'])
    await knex.schema.alterTable(table, (t) => t.dropIndex([], `${table}_owner_id_index`));
  await knex.schema.dropTable('admin_actions');
  await knex.schema.dropTable('organization_keys');
  await knex.raw(`update checkouts set settlement = 'exact' where settlement = 'manual'`);
  await knex.raw('alter table checkouts drop constraint checkouts_settlement_check');
  await knex.raw(`alter table checkouts add constraint checkouts_settlement_check check (settlement is null or
    settlement in ('exact','overpaid','paid_late','trial'))`);
  await knex.schema.alterTable('licenses', (t) => {
    t.dropColumn('rotated_at');
    t.dropColumn('note');
    t.dropColumn('suspended_at');
  });
}
