// Policy proofs bound to their stage: the policy and parameter commitments a stage fixes at prepare,
// and the single use of each proof's statement. The table of bare verified proof hashes goes: a
// stage now checks the proof itself, so no table needs to hold a plain evidence hash.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workflow_stages', (t) => {
    // The policy a stage's proof must be of, and the commitments to its parameters (never the
    // parameters): fixed when the workflow is prepared, never changed after.
    t.text('policy');
    t.jsonb('policy_commitments');
  });
  await knex.raw(`alter table workflow_stages add constraint workflow_stages_policy_gate check
    ((policy is null) = (policy_commitments is null))`);

  // One row per policy proof a stage accepted, keyed by its statement (policy and public signals),
  // not by the proof bytes: a Groth16 proof can be re-randomized, its statement cannot.
  await knex.schema.createTable('policy_proof_uses', (t) => {
    t.text('statement_hash').primary();
    t.text('workflow_id').notNullable().references('workflows.id').onDelete('CASCADE');
    t.smallint('stage_idx').notNullable();
    t.timestamp('used_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workflow_id']);
  });

  await knex.schema.dropTable('verified_policy_proofs');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.createTable('verified_policy_proofs', (t) => {
    t.text('proof_hash').primary();
    t.text('policy_id').notNullable();
    t.timestamp('verified_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.dropTable('policy_proof_uses');
  await knex.raw('alter table workflow_stages drop constraint workflow_stages_policy_gate');
  await knex.schema.alterTable('workflow_stages', (t) => {
    t.dropColumn('policy_commitments');
    t.dropColumn('policy');
  });
}
