// Grants follow their grantor: what a license key or an organization key minted dies with it. A license
// counts its keys (`key_generation`, one more at each rotation), so a request that authenticated with
// the key just rotated away is told apart from one with the new key; an organization key names the key
// that minted it (`minted_by_key_id`, null when the license key did), so revoking a key reaches the keys
// it minted, and theirs; a job made with an organization key names it (`organization_key_id`), so its
// capability dies with that key. `created_by` stays what the audit showed.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('licenses', (t) => {
    t.integer('key_generation').notNullable().defaultTo(1);
  });
  await knex.schema.alterTable('organization_keys', (t) => {
    t.text('minted_by_key_id').references('organization_keys.id');
    t.index(['minted_by_key_id'], 'organization_keys_minted_by_key_id_index');
  });
  await knex.raw(`update organization_keys set minted_by_key_id = substring(created_by from 5)
    where created_by like 'key:%'`);
  await knex.schema.alterTable('jobs', (t) => {
    t.text('organization_key_id').references('organization_keys.id');
  });
  // Only the jobs whose capability a rotation or a revocation may still reach are indexed.
  await knex.raw(`create index jobs_license_capability on jobs (license_id)
    where license_id is not null and access_hash is not null`);
  await knex.raw(`create index jobs_organization_key_capability on jobs (organization_key_id)
    where organization_key_id is not null and access_hash is not null`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index jobs_organization_key_capability');
  await knex.raw('drop index jobs_license_capability');
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('organization_key_id');
  });
  await knex.schema.alterTable('organization_keys', (t) => {
    t.dropIndex([], 'organization_keys_minted_by_key_id_index');
    t.dropColumn('minted_by_key_id');
  });
  await knex.schema.alterTable('licenses', (t) => {
    t.dropColumn('key_generation');
  });
}
