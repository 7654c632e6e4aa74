// What a production process checked of the circuit keys (snarkjs zKey.verifyFromR1cs: the zkey comes
// from this r1cs and this powers of tau), by the files' hashes: a later start on the same files takes
// the record instead of spending a minute checking again, and needs neither the r1cs nor the ptau.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('circuit_key_checks', (t) => {
    t.text('circuit').notNullable();
    t.text('zkey_sha256').notNullable();
    t.text('r1cs_sha256').notNullable();
    t.text('ptau_blake2b512').notNullable();
    t.text('tool').notNullable();
    t.text('snarkjs').notNullable();
    // The process type that ran the check (release, web, prover).
    t.text('checked_by').notNullable();
    t.timestamp('checked_at', { useTz: true }).notNullable();
    t.integer('ms').notNullable();
    t.primary(['circuit', 'zkey_sha256', 'r1cs_sha256', 'ptau_blake2b512']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('circuit_key_checks');
}
