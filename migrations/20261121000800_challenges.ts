// Login challenges of the private-payments hand-off: each issued text, so the provider can redeem it
// once through the service before it expires.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('login_challenges', (t) => {
    // sha256 of the exact text, so a text altered after issue matches no row.
    t.text('challenge_hash').primary();
    t.text('wallet').notNullable();
    t.timestamp('issued_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('redeemed_at', { useTz: true });
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('login_challenges');
}
