// Crypto payments: the quotes a priced job offers, payments submitted against them, the claims that
// let one on-chain transfer pay once, and the signed receipts of confirmed payments.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // One row per (job, asset): the price locked for the quote's validity window.
  await knex.schema.createTable('quotes', (t) => {
    t.text('id').primary(); // the quote reference
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.text('asset').notNullable();
    t.text('network').notNullable();
    t.specificType('amount', 'numeric(78,0)').notNullable();
    t.smallint('decimals').notNullable();
    t.text('contract');
    t.text('pay_to').notNullable();
    t.integer('usd_cents').notNullable();
    t.jsonb('rate');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.unique(['job_id', 'asset']);
  });

  await knex.schema.createTable('payments', (t) => {
    t.text('id').primary();
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.text('quote_id').notNullable().references('quotes.id');
    t.text('asset').notNullable();
    /** CAIP-2 network: with tx_ref it names the transaction. */
    t.text('chain').notNullable();
    t.text('tx_ref').notNullable();
    t.text('payer');
    // Monero's transaction key proves a payment to the verifier; it is never returned by any route.
    t.text('tx_key');
    t.text('status').notNullable();
    /** For confirmed payments: exact, overpaid or paid_late. */
    t.text('settlement');
    t.text('reason');
    t.text('detail');
    t.specificType('amount_received', 'numeric(78,0)');
    t.text('output');
    t.integer('confirmations');
    t.integer('checks').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('next_check_at', { useTz: true });
    t.timestamp('settled_at', { useTz: true });
    t.index(['job_id', 'created_at']);
    t.index(['chain', 'tx_ref']);
    t.index(['status', 'updated_at']);
  });
  await knex.raw(`alter table payments add constraint payments_status_check check (status in
    ('pending','verifying','confirmed','rejected','underpaid','expired'))`);
  await knex.raw(`alter table payments add constraint payments_settlement_check check (settlement is null or
    settlement in ('exact','overpaid','paid_late'))`);

  // The replay guard: a transfer (one output of one transaction on one chain) is credited once.
  await knex.schema.createTable('payment_claims', (t) => {
    t.text('chain').notNullable();
    t.text('tx_ref').notNullable();
    t.text('output').notNullable();
    t.text('payment_id').notNullable().unique().references('payments.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['chain', 'tx_ref', 'output']);
  });

  await knex.schema.createTable('receipts', (t) => {
    t.text('id').primary();
    t.text('payment_id').notNullable().unique().references('payments.id');
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    /** The signed document exactly as issued (signature included). */
    t.jsonb('document').notNullable();
    t.timestamp('issued_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['job_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('receipts');
  await knex.schema.dropTable('payment_claims');
  await knex.schema.dropTable('payments');
  await knex.schema.dropTable('quotes');
}
