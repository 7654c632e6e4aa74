// Payments settled on a development chain (npm start's local chain) are marked, so demo money is never
// summed as revenue, and a production process can refuse a database that holds some. Existing rows are
// marked by their network: the local EVM nodes' chain ids.
import type { Knex } from 'knex';

const LOCAL_CHAIN_NETWORKS = ['eip155:1337', 'eip155:31337'];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('payments', (t) => {
    t.boolean('development').notNullable().defaultTo(false);
  });
  await knex('payments').whereIn('chain', LOCAL_CHAIN_NETWORKS).update({ development: true });
  await knex.raw('create index payments_development on payments (id) where development');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists payments_development');
  await knex.schema.alterTable('payments', (t) => {
    t.dropColumn('development');
  });
}
