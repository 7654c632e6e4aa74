// Commercial: license checkouts and the licenses they issue, payment-gate requests matched by a unique
// amount, the chain follower's statistics and events; payment claims widened so checkouts and gate
// requests take a transfer from the same replay guard as job payments.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('checkouts', (t) => {
    t.text('id').primary();
    t.text('license_type').notNullable();
    t.text('organization').notNullable();
    /** The organization name normalized (case, spacing, punctuation, legal suffix): one trial per value. */
    t.text('organization_key').notNullable();
    // Personal data: stored for the license holder's records, never logged, never on a public reply.
    t.text('email').notNullable();
    t.text('asset');
    t.text('network');
    t.specificType('amount', 'numeric(78,0)');
    t.smallint('decimals');
    t.text('contract');
    t.text('pay_to');
    t.integer('usd_cents').notNullable();
    t.jsonb('rate');
    t.text('status').notNullable();
    t.text('settlement');
    t.text('reason');
    t.text('detail');
    t.text('tx_ref');
    t.text('tx_key');
    t.text('payer');
    t.specificType('amount_received', 'numeric(78,0)');
    t.text('output');
    t.integer('confirmations');
    t.integer('checks').notNullable().defaultTo(0);
    t.timestamp('submitted_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('next_check_at', { useTz: true });
    t.timestamp('settled_at', { useTz: true });
    t.index(['status', 'updated_at']);
    t.index(['network', 'tx_ref']);
  });
  await knex.raw(`alter table checkouts add constraint checkouts_status_check check (status in
    ('awaiting_payment','pending','verifying','confirmed','rejected','underpaid','expired'))`);
  await knex.raw(`alter table checkouts add constraint checkouts_type_check check (license_type in
    ('TRIAL','Starter','Business','Enterprise'))`);
  await knex.raw(`alter table checkouts add constraint checkouts_settlement_check check (settlement is null or
    settlement in ('exact','overpaid','paid_late','trial'))`);

  await knex.schema.createTable('licenses', (t) => {
    t.text('id').primary();
    // One license per checkout: the constraint that makes a second issue impossible.
    t.text('checkout_id').notNullable().unique().references('checkouts.id');
    t.text('tier').notNullable();
    t.text('organization').notNullable();
    t.text('organization_key').notNullable();
    t.integer('period_days').notNullable();
    /** The signed token (lk_…) as issued. */
    t.text('token').notNullable();
    t.text('key_id').notNullable();
    t.timestamp('issued_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true });
    t.index(['organization_key']);
  });
  await knex.raw(
    `create unique index licenses_one_trial_per_organization on licenses (organization_key) where tier = 'TRIAL'`,
  );

  await knex.schema.createTable('payment_gate_requests', (t) => {
    t.text('id').primary();
    t.text('asset').notNullable();
    t.text('network').notNullable();
    t.smallint('decimals').notNullable();
    t.text('contract');
    t.text('pay_to').notNullable();
    t.specificType('base_amount', 'numeric(78,0)').notNullable();
    t.specificType('amount', 'numeric(78,0)').notNullable();
    t.integer('usd_cents');
    t.text('status').notNullable();
    t.text('tx_ref');
    t.text('output');
    t.text('payer');
    t.text('reason');
    t.text('detail');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('matched_at', { useTz: true });
  });
  await knex.raw(`alter table payment_gate_requests add constraint payment_gate_status_check check (status in
    ('open','matched','expired'))`);
  // The amount is the only thing binding a transfer to a request: no two open requests may share it.
  await knex.raw(
    `create unique index payment_gate_open_amount on payment_gate_requests (asset, amount) where status = 'open'`,
  );

  // A claim now belongs to exactly one of: a job payment, a checkout, a gate request.
  await knex.schema.alterTable('payment_claims', (t) => {
    t.setNullable('payment_id');
    // Not unique: an underpaid transfer keeps its claim while the checkout is paid by another one.
    t.text('checkout_id').references('checkouts.id').onDelete('CASCADE').index();
    t.text('gate_request_id').references('payment_gate_requests.id').onDelete('CASCADE').index();
  });
  await knex.raw(`alter table payment_claims add constraint payment_claims_one_owner
    check (num_nonnulls(payment_id, checkout_id, gate_request_id) = 1)`);

  // One row per followed network, written by the worker's follower and read by the web process.
  await knex.schema.createTable('chain_stream_stats', (t) => {
    t.text('network').primary();
    t.text('family').notNullable();
    t.text('endpoint').notNullable();
    t.text('address');
    /** The follower process holding the lease, and until when. */
    t.text('owner');
    t.timestamp('lease_until', { useTz: true });
    t.bigint('last_block');
    t.bigint('head_block');
    t.timestamp('last_block_time', { useTz: true });
    t.text('cursor');
    t.bigint('events_seen').notNullable().defaultTo(0);
    t.bigint('blocks_seen').notNullable().defaultTo(0);
    t.integer('reconnects').notNullable().defaultTo(0);
    t.integer('errors').notNullable().defaultTo(0);
    t.boolean('healthy').notNullable().defaultTo(true);
    t.text('last_error');
    t.timestamp('last_event_at', { useTz: true });
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('chain_stream_events', (t) => {
    t.bigIncrements('id');
    t.text('network').notNullable();
    t.bigint('block');
    t.text('tx_ref').notNullable();
    t.text('output').notNullable();
    t.text('token').notNullable();
    t.text('to_address').notNullable();
    t.specificType('amount', 'numeric(78,0)');
    t.timestamp('seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['network', 'tx_ref', 'output']);
    t.index(['network', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('chain_stream_events');
  await knex.schema.dropTable('chain_stream_stats');
  await knex.raw('alter table payment_claims drop constraint payment_claims_one_owner');
  await knex('payment_claims').whereNull('payment_id').delete();
  await knex.schema.alterTable('payment_claims', (t) => {
    t.dropColumn('gate_request_id');
    t.dropColumn('checkout_id');
    t.dropNullable('payment_id');
  });
  await knex.schema.dropTable('payment_gate_requests');
  await knex.schema.dropTable('licenses');
  await knex.schema.dropTable('checkouts');
}
