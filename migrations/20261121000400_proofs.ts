// Blind policy proofs: the outbox of the `proofs` queue for Groth16 policy proofs, with the proof, its
// public signals and timings once proved, and the sealed circuit input only while a prover still needs it.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('proofs', (t) => {
    t.text('id').primary();
    t.text('policy').notNullable();
    // held: proved only once a paid exchange job releases it (see docs/zk.md).
    t.text('status').notNullable().defaultTo('queued');
    // Public by construction: Poseidon commitments, the policy id and the result.
    t.jsonb('commitments').notNullable();
    t.jsonb('public_signals');
    t.jsonb('proof');
    t.text('backend');
    t.double('witness_ms');
    t.double('proving_ms');
    t.double('total_ms');
    t.double('queue_ms');
    t.smallint('progress').notNullable().defaultTo(0);
    t.text('progress_stage');
    t.integer('attempts').notNullable().defaultTo(0);
    t.jsonb('error');
    t.text('agent_id');
    // The exchange job that released a held proof; unique so a retried job finds its own proof.
    t.text('job_id').unique();
    // AES-256-GCM sealed circuit input (private values and salts), bound to the row id; NULL once done.
    t.binary('input_sealed');
    t.timestamp('hold_expires_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.index(['status', 'updated_at']);
    t.index(['finished_at']);
  });
  await knex.raw(`alter table proofs add constraint proofs_status_check check (status in
    ('held','queued','running','succeeded','failed'))`);
  // The wipe is a database guarantee, not only a code path: a finished proof cannot keep its input.
  await knex.raw(`alter table proofs add constraint proofs_input_wiped check
    (status not in ('succeeded','failed') or input_sealed is null)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('proofs');
}
