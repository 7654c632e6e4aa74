// Platform tables: the service catalog, jobs and their event log, idempotency records.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('services', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.text('description').notNullable();
    t.integer('price_usd_cents').notNullable().defaultTo(0);
    t.jsonb('input_schema').notNullable();
    t.integer('expected_duration_ms').notNullable();
    t.boolean('active').notNullable().defaultTo(true);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('jobs', (t) => {
    t.text('id').primary();
    t.text('service_id').notNullable().references('services.id');
    t.text('status').notNullable();
    t.jsonb('input').notNullable();
    t.jsonb('result');
    t.jsonb('error');
    t.smallint('progress').notNullable().defaultTo(0);
    t.text('progress_stage');
    t.integer('price_usd_cents').notNullable().defaultTo(0);
    t.text('agent_id');
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('queued_at', { useTz: true });
    t.timestamp('started_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.timestamp('expires_at', { useTz: true });
    t.index(['status', 'updated_at']);
    t.index(['agent_id', 'created_at']);
  });
  await knex.raw(`alter table jobs add constraint jobs_status_check check (status in
    ('awaiting_payment','queued','running','succeeded','failed','expired','cancelled'))`);

  // One line per state change: the order of events, the long-poll wake-ups and the job's SSE stream.
  await knex.schema.createTable('job_events', (t) => {
    t.bigIncrements('id').primary();
    t.text('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.jsonb('data').notNullable().defaultTo('{}');
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['job_id', 'id']);
  });
  await knex.raw(`
    create function job_events_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify('job_events', new.job_id);
      return new;
    end $$;
    create trigger job_events_notify after insert on job_events
      for each row execute function job_events_notify();
  `);

  await knex.schema.createTable('idempotency_keys', (t) => {
    t.text('scope').notNullable();
    t.text('key').notNullable();
    t.text('request_hash').notNullable();
    t.integer('response_status');
    t.jsonb('response_body');
    t.jsonb('response_headers');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('locked_at', { useTz: true });
    t.primary(['scope', 'key']);
    t.index(['created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('idempotency_keys');
  await knex.raw(
    'drop trigger if exists job_events_notify on job_events; drop function if exists job_events_notify()',
  );
  await knex.schema.dropTable('job_events');
  await knex.schema.dropTable('jobs');
  await knex.schema.dropTable('services');
}
