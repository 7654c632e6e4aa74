// The key history: every key the service has signed with, what it signs, and when it was valid. A process
// adds its keys at start (shared/platform/key-history.ts); the operator closes a key's period or marks it
// revoked from a time (`npm run keys`). Rows are never deleted: a key's period outlives the key.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('trust_keys', (t) => {
    /** The first 16 hex characters of the sha256 of the raw public key, as items name their key. */
    t.text('key_id').primary();
    /** The raw ed25519 public key, base64url. */
    t.text('public_key').notNullable().unique();
    /** What it signs: package, receipt, license, attestation, log, witness. */
    t.specificType('roles', 'text[]').notNullable();
    // Milliseconds, as the ISO times items carry: a time read back is the time written.
    t.timestamp('valid_from', { useTz: true, precision: 3 }).notNullable();
    /** Retired: nothing signed at or after this time verifies under it. */
    t.timestamp('valid_until', { useTz: true, precision: 3 });
    /** Revoked: only what was logged before this time verifies under it. */
    t.timestamp('revoked_from', { useTz: true, precision: 3 });
    /** Why it was revoked, as the operator said it. */
    t.text('reason');
    /** The last time the row changed: the trust root's issuedAt is the latest of these. */
    t.timestamp('changed_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`alter table trust_keys
    add constraint trust_keys_roles check (cardinality(roles) > 0
      and roles <@ array['package','receipt','license','attestation','log','witness']::text[]),
    add constraint trust_keys_period check (valid_until is null or valid_until >= valid_from),
    add constraint trust_keys_key_id check (key_id ~ '^[0-9a-f]{16}$')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('trust_keys');
}
