// A2A conversations. A message of text alone, from a caller with a key, makes a task that waits for
// input (TASK_STATE_INPUT_REQUIRED): the agent answered which skills there are and needs a request. Its
// id is a job id minted ahead: when a follow-up message carries a request, the job is created with that
// id, and the task is the job from then on (`job_id` set). Its history is the conversation's messages,
// the caller's texts and the agent's replies (the request that made the job is not kept).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('a2a_conversations', (t) => {
    t.text('id').primary();
    t.text('context_id').notNullable();
    // The owner's key, as a2a_tasks.caller_key: agent:<id> or license:<id>.
    t.text('caller_key').notNullable();
    t.text('agent_id').references('agents.id').onDelete('CASCADE');
    t.text('license_id').references('licenses.id').onDelete('CASCADE');
    t.text('message_id').notNullable();
    // input_required: waits for a request; canceled; started: the job `id` carries on.
    t.text('state').notNullable().defaultTo('input_required');
    t.jsonb('history').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['caller_key', 'message_id']);
    t.index(['agent_id', 'id']);
    t.index(['license_id', 'id']);
  });
  await knex.raw(`alter table a2a_conversations add constraint a2a_conversations_state_check check (state in
    ('input_required','canceled','started'))`);
  await knex.raw(`alter table a2a_conversations add constraint a2a_conversations_owner_check check
    ((agent_id is null) <> (license_id is null))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('a2a_conversations');
}
