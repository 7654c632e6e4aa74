// A2A. A task created over the A2A protocol is a job; `a2a_tasks` keeps what the protocol adds to it
// (the context id, and who sent which message id, so a resent message answers the task it made instead
// of making another). A push notification config is a job webhook of its own format: the relay turns
// the job's events into A2A payloads, delivered by the `deliveries` queue as method `a2a_push`.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('a2a_tasks', (t) => {
    t.text('job_id').primary().references('jobs.id').onDelete('CASCADE');
    t.text('context_id').notNullable();
    // The sender: agent:<id>, license:<id>, or addr:<client address> when anonymous.
    t.text('caller_key').notNullable();
    t.text('message_id').notNullable();
    // sha256 of the canonical request (service, input, push target): a resent id must carry the same.
    t.text('request_hash').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['caller_key', 'message_id']);
  });
  await knex.schema.alterTable('job_webhooks', (t) => {
    // `event`: the exchange's own event bodies (createJob's webhook); `a2a`: A2A StreamResponse bodies.
    t.text('format').notNullable().defaultTo('event');
    t.text('config_id');
    // What the A2A receiver asked to be sent back (token header, Authorization); never read by a route.
    t.text('token');
    t.text('auth_scheme');
    t.text('auth_credentials');
  });
  await knex.raw(`alter table job_webhooks add constraint job_webhooks_format_check check (format in
    ('event','a2a'))`);
  await knex.raw('alter table logistics_requests drop constraint logistics_requests_method_check');
  await knex.raw(`alter table logistics_requests add constraint logistics_requests_method_check check (method in
    ('webhook','polling','agent_handoff','a2a_push'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex('logistics_requests').where({ method: 'a2a_push' }).delete();
  await knex.raw('alter table logistics_requests drop constraint logistics_requests_method_check');
  await knex.raw(`alter table logistics_requests add constraint logistics_requests_method_check check (method in
    ('webhook','polling','agent_handoff'))`);
  await knex('job_webhooks').where({ format: 'a2a' }).delete();
  await knex.raw('alter table job_webhooks drop constraint job_webhooks_format_check');
  await knex.schema.alterTable('job_webhooks', (t) => {
    t.dropColumn('auth_credentials');
    t.dropColumn('auth_scheme');
    t.dropColumn('token');
    t.dropColumn('config_id');
    t.dropColumn('format');
  });
  await knex.schema.dropTable('a2a_tasks');
}
