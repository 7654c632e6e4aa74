// The agent exchange: registered agents and their API keys, referrals (and the job column that carries
// one), marketplace listings, logistics (result delivery) requests and agreements between agents.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // array_to_string is only STABLE (it goes through type output functions); for text[] the result
  // cannot change, so this wrapper may be IMMUTABLE and feed a generated column.
  await knex.raw(`create function px_text_array_join(text[]) returns text
    language sql immutable parallel safe as $$ select coalesce(array_to_string($1, ' '), '') $$`);

  await knex.schema.createTable('agents', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.text('description').notNullable().defaultTo('');
    t.specificType('capabilities', 'text[]').notNullable().defaultTo('{}');
    t.specificType('tags', 'text[]').notNullable().defaultTo('{}');
    t.text('endpoint_url');
    /** ed25519 public key, base58 (a Solana address). */
    t.text('wallet_public_key').notNullable();
    t.text('status').notNullable().defaultTo('active');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['wallet_public_key']);
  });
  await knex.raw(
    `alter table agents add constraint agents_status_check check (status in ('active','suspended'))`,
  );
  await knex.raw(`alter table agents add column search_vector tsvector generated always as (
      setweight(to_tsvector('english', name), 'A') ||
      setweight(to_tsvector('english', description), 'B') ||
      setweight(to_tsvector('english', px_text_array_join(capabilities || tags)), 'C')
    ) stored`);
  await knex.raw('create index agents_search_idx on agents using gin (search_vector)');
  await knex.raw('create index agents_capabilities_idx on agents using gin (capabilities)');
  await knex.raw('create index agents_tags_idx on agents using gin (tags)');

  // Only the sha256 of a key is kept; the key itself is shown once, at registration.
  await knex.schema.createTable('api_keys', (t) => {
    t.text('id').primary();
    t.text('agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    t.text('key_hash').notNullable().unique();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_used_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.index(['agent_id']);
  });

  await knex.schema.createTable('referrals', (t) => {
    t.text('id').primary();
    t.text('code').notNullable().unique();
    t.text('agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    t.integer('commission_bps').notNullable();
    t.text('note');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['agent_id', 'created_at']);
  });
  await knex.schema.alterTable('jobs', (t) => {
    t.text('referral_id').references('referrals.id').onDelete('SET NULL');
    t.index(['referral_id']);
  });

  await knex.schema.createTable('listings', (t) => {
    t.text('id').primary();
    t.text('seller_agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    t.text('title').notNullable();
    t.text('description').notNullable();
    t.specificType('tags', 'text[]').notNullable().defaultTo('{}');
    t.integer('price_usd_cents').notNullable();
    t.text('asset').notNullable();
    t.text('service_endpoint').notNullable();
    t.text('status').notNullable().defaultTo('active');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['seller_agent_id', 'id']);
    t.index(['price_usd_cents']);
  });
  await knex.raw(
    `alter table listings add constraint listings_status_check check (status in ('active','withdrawn'))`,
  );
  await knex.raw('alter table listings add constraint listings_price_check check (price_usd_cents >= 0)');
  await knex.raw(`alter table listings add column search_vector tsvector generated always as (
      setweight(to_tsvector('english', title), 'A') ||
      setweight(to_tsvector('english', description), 'B') ||
      setweight(to_tsvector('english', px_text_array_join(tags)), 'C')
    ) stored`);
  await knex.raw('create index listings_search_idx on listings using gin (search_vector)');
  await knex.raw('create index listings_tags_idx on listings using gin (tags)');

  await knex.schema.createTable('logistics_requests', (t) => {
    t.text('id').primary();
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.text('agent_id').references('agents.id').onDelete('SET NULL');
    t.text('method').notNullable();
    t.text('target_url');
    t.text('target_agent_id').references('agents.id').onDelete('SET NULL');
    /** The job's public address, fixed when the request is made (the worker has no request to derive it from). */
    t.text('job_url').notNullable();
    // HMAC key of the webhook signatures; returned once, never read back by any route.
    t.text('webhook_secret');
    t.text('status').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.integer('last_status_code');
    t.text('last_error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('wait_until', { useTz: true }).notNullable();
    t.timestamp('delivered_at', { useTz: true });
    t.index(['job_id']);
    t.index(['status', 'updated_at']);
  });
  await knex.raw(`alter table logistics_requests add constraint logistics_requests_status_check check (status in
    ('queued','delivering','delivered','failed'))`);
  await knex.raw(`alter table logistics_requests add constraint logistics_requests_method_check check (method in
    ('webhook','polling','agent_handoff'))`);

  await knex.schema.createTable('agreements', (t) => {
    t.text('id').primary();
    t.text('proposer_agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    t.text('counterparty_agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    /** The terms exactly as hashed (canonical JSON of this object is what terms_hash commits to). */
    t.jsonb('terms').notNullable();
    t.text('terms_hash').notNullable().unique();
    t.text('status').notNullable().defaultTo('proposed');
    t.text('proposer_signature');
    t.text('proposer_key');
    t.text('acceptance_signature');
    t.text('acceptance_key');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('accepted_at', { useTz: true });
    t.index(['proposer_agent_id', 'created_at']);
    t.index(['counterparty_agent_id', 'created_at']);
  });
  await knex.raw(`alter table agreements add constraint agreements_status_check check (status in
    ('proposed','accepted','expired','cancelled'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('agreements');
  await knex.schema.dropTable('logistics_requests');
  await knex.schema.dropTable('listings');
  await knex.schema.alterTable('jobs', (t) => {
    t.dropIndex(['referral_id']);
    t.dropColumn('referral_id');
  });
  await knex.schema.dropTable('referrals');
  await knex.schema.dropTable('api_keys');
  await knex.schema.dropTable('agents');
  await knex.raw('drop function if exists px_text_array_join(text[])');
}
