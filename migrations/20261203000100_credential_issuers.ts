// Credential issuers an organization accepts, and the revocation roots they publish. Each registration,
// each key revocation and each revocation root is a logged statement (entry kinds credential_issuer and
// revocation_root) with its time, so a proof's issuer and root can be checked against the log offline.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('credential_issuers', (t) => {
    // 'operator' or a license id: the organization that accepts the issuer.
    t.text('owner').notNullable();
    t.text('key_id').notNullable();
    t.text('name').notNullable();
    t.jsonb('public_key').notNullable();
    // The schemas the issuer may sign for this owner: full schema documents.
    t.jsonb('schemas').notNullable();
    t.timestamp('valid_from', { useTz: true }).notNullable();
    t.timestamp('valid_until', { useTz: true });
    t.timestamp('revoked_from', { useTz: true });
    // Bumped by each logged statement about the issuer (registration, revocation).
    t.integer('version').notNullable();
    t.jsonb('statement').notNullable();
    t.bigInteger('leaf_index').notNullable();
    t.timestamp('registered_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['owner', 'key_id']);
  });
  await knex.schema.createTable('issuer_revocation_roots', (t) => {
    t.text('key_id').notNullable();
    t.integer('seq').notNullable();
    t.text('root').notNullable();
    t.jsonb('nonces').notNullable();
    // The issuer's time for the root (its publication's `at`), and when the log recorded it.
    t.timestamp('published_at', { useTz: true }).notNullable();
    t.timestamp('logged_at', { useTz: true }).notNullable();
    t.jsonb('statement').notNullable();
    t.bigInteger('leaf_index').notNullable();
    t.primary(['key_id', 'seq']);
    t.index(['key_id', 'root']);
  });
  // A workflow's accepted credential proofs, with the issuer's and the root's statements they were
  // accepted on: what its package carries.
  await knex.schema.createTable('workflow_credential_proofs', (t) => {
    t.text('workflow_id').notNullable().references('workflows.id').onDelete('CASCADE');
    t.integer('stage_idx').notNullable();
    t.text('evidence_hash').notNullable();
    t.jsonb('proof').notNullable();
    t.jsonb('public_signals').notNullable();
    t.jsonb('facts').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['workflow_id', 'evidence_hash']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('workflow_credential_proofs');
  await knex.schema.dropTable('issuer_revocation_roots');
  await knex.schema.dropTable('credential_issuers');
}
