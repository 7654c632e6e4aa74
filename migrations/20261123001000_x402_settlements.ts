// x402 settlements: each EIP-3009 authorization a client sent in PAYMENT-SIGNATURE, written before it
// is broadcast, so a crash between settling and recording the payment loses nothing (the sweeper finds
// the transaction again) and doubles nothing (one row per authorization: the same signature settles
// once). The payment itself is the ordinary `payments` row, made from the settlement's transaction.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('x402_settlements', (t) => {
    /** CAIP-2 network, token contract and payer (lowercase), and the authorization's bytes32 nonce. */
    t.text('network').notNullable();
    t.text('token').notNullable();
    t.text('payer').notNullable();
    t.text('nonce').notNullable();
    t.primary(['network', 'token', 'payer', 'nonce']);
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.text('quote_id').notNullable().references('quotes.id').onDelete('CASCADE');
    /** sha256 of the canonical payment payload: a second, different payload with this nonce is a forgery. */
    t.text('payload_hash').notNullable();
    /** settling (written before broadcast) | settled (payment recorded) | failed (nothing moved). */
    t.text('status').notNullable();
    /** facilitator | self: who broadcast it. */
    t.text('settler').notNullable();
    /** The settling transaction, known before broadcast when the service signs it itself. */
    t.text('tx_hash');
    t.text('payment_id').references('payments.id').onDelete('SET NULL');
    /** Where to start looking for the transaction after a crash. */
    t.bigInteger('from_block');
    /** After this the authorization can never execute: an intent still unresolved then has failed. */
    t.timestamp('valid_before', { useTz: true }).notNullable();
    t.text('error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`alter table x402_settlements add constraint x402_settlements_status_check
    check (status in ('settling', 'settled', 'failed'))`);
  await knex.raw(
    `create index x402_settlements_open on x402_settlements (updated_at) where status = 'settling'`,
  );
  // One x402 settlement per job in flight or done: a second authorization for a paid job is refused
  // before it can move money.
  await knex.raw(
    `create unique index x402_settlements_one_per_job on x402_settlements (job_id) where status in ('settling', 'settled')`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('x402_settlements');
}
