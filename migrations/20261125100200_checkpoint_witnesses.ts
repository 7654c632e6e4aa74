// The witnesses' side of the log: how far each witness has cosigned, so the next request carries a
// consistency proof from there and a witness that failed waits before it is asked again. The lines
// they return are kept in `checkpoint_cosignatures` (migration 20261125100100_log_checkpoints).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('witness_progress', (t) => {
    t.text('witness_name').primary();
    // The witness's vkey when this row was written: a new key starts again from 0.
    t.text('vkey').notNullable();
    t.bigInteger('cosigned_size').notNullable().defaultTo(0);
    t.integer('failures').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true });
    t.text('last_error');
    t.timestamp('last_cosigned_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('witness_progress');
}
