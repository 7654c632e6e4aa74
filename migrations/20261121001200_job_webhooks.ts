// Job webhooks: a job created with `webhook: { url }` has its state changes (job events, payment states)
// delivered as signed POSTs, one logistics request per change, through the existing `deliveries` queue.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('job_webhooks', (t) => {
    t.text('job_id').primary().references('jobs.id').onDelete('CASCADE');
    t.text('url').notNullable();
    // HMAC key of every delivery of this job; returned once by createJob, never read back by a route.
    t.text('secret').notNullable();
    t.text('job_url').notNullable();
    t.text('agent_id').references('agents.id').onDelete('SET NULL');
    /** The last job_events row turned into a delivery: the relay's cursor. */
    t.bigInteger('last_event_id').notNullable().defaultTo(0);
    /** Cleared once the job can change no more, so the relay stops looking at it. */
    t.boolean('active').notNullable().defaultTo(true);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('create index job_webhooks_active on job_webhooks (job_id) where active');
  await knex.schema.alterTable('logistics_requests', (t) => {
    // Set for state-change deliveries: the event as it was when it happened (null: a result delivery).
    t.jsonb('event');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('logistics_requests', (t) => {
    t.dropColumn('event');
  });
  await knex.schema.dropTable('job_webhooks');
}
