// Binding payments to quotes: every payable row (job quotes, checkouts, payment gate requests) keeps the
// asset terms it was made with and what ties a transfer to it (a Solana Pay reference key, a unique
// amount, or an address of its own); unique amounts are reserved in one table across the three, and
// the next BIP84 address index per account key is kept here.
import type { Knex } from 'knex';

const payable = ['quotes', 'checkouts', 'payment_gate_requests'] as const;

export async function up(knex: Knex): Promise<void> {
  for (const table of payable) {
    await knex.schema.alterTable(table, (t) => {
      /** Solana: the mint's token program when the row was made (SPL Token or Token-2022). */
      t.text('token_program');
      /** reference | amount | address; null for rows made before bindings (verified without one). */
      t.text('binding');
      /** Solana Pay: the public key the paying transaction must name among its accounts. */
      t.text('reference_key');
      /** The BIP84 index or Monero subaddress index of a row's own address. */
      t.integer('address_index');
    });
    await knex.raw(`alter table ${table} add constraint ${table}_binding_check
      check (binding is null or binding in ('reference', 'amount', 'address'))`);
    await knex.raw(
      `create unique index ${table}_reference_key on ${table} (reference_key) where reference_key is not null`,
    );
  }
  await knex.schema.alterTable('quotes', (t) => {
    /** The price in base units before the unique offset (equal to amount without one). */
    t.specificType('base_amount', 'numeric(78,0)');
  });
  await knex.schema.alterTable('checkouts', (t) => {
    t.specificType('base_amount', 'numeric(78,0)');
  });
  // When the chain says the paying transfer was made: lateness is judged by it.
  for (const table of ['payments', 'checkouts']) {
    await knex.schema.alterTable(table, (t) => {
      t.timestamp('block_time', { useTz: true });
    });
  }
  // Addresses of their own are never shared between two quotes.
  await knex.raw(
    `create unique index quotes_own_address on quotes (network, pay_to) where binding = 'address'`,
  );
  await knex.raw(
    `create unique index checkouts_own_address on checkouts (network, pay_to) where binding = 'address'`,
  );

  // An amount that identifies a quote is held by one open quote only, whichever kind of row it is.
  await knex.schema.createTable('payment_amounts', (t) => {
    t.bigIncrements('id');
    t.text('network').notNullable();
    /** The contract or mint, lower-cased where the chain ignores case; 'native' for the coin itself. */
    t.text('token').notNullable();
    t.text('pay_to').notNullable();
    t.specificType('amount', 'numeric(78,0)').notNullable();
    /** The quote, checkout or gate request holding it. */
    t.text('owner').notNullable();
    /** Past this (the end of the owner's watch window) the amount is free again. */
    t.timestamp('open_until', { useTz: true }).notNullable();
    t.unique(['network', 'token', 'pay_to', 'amount'], { indexName: 'payment_amounts_unique' });
    t.index(['owner']);
    t.index(['open_until']);
  });

  // The next unused BIP84 receiving index per account key and chain (the key is public).
  await knex.schema.createTable('address_counters', (t) => {
    t.text('scheme').primary();
    t.integer('next_index').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('address_counters');
  await knex.schema.dropTable('payment_amounts');
  await knex.raw('drop index if exists checkouts_own_address');
  await knex.raw('drop index if exists quotes_own_address');
  for (const table of ['quotes', 'checkouts']) {
    await knex.schema.alterTable(table, (t) => t.dropColumn('base_amount'));
  }
  for (const table of ['payments', 'checkouts']) {
    await knex.schema.alterTable(table, (t) => t.dropColumn('block_time'));
  }
  for (const table of payable) {
    await knex.raw(`drop index if exists ${table}_reference_key`);
    await knex.raw(`alter table ${table} drop constraint ${table}_binding_check`);
    await knex.schema.alterTable(table, (t) => {
      t.dropColumn('address_index');
      t.dropColumn('reference_key');
      t.dropColumn('binding');
      t.dropColumn('token_program');
    });
  }
}
