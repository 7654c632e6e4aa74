// The client network an agent was registered from (an HMAC of its IPv4 address or IPv6 /64, never the
// address): agents cost nothing to make, so budgets meant for anonymous callers count an agent
// against the network that made it, and agent registration itself is budgeted per network.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.text('registered_network');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.dropColumn('registered_network');
  });
}
