// Ballots nobody can open early: a room may name trustees (their public keys and a threshold t of n),
// who run a distributed key generation whose messages are kept here as signed; proposals of such a room
// encrypt ballots to the trustees' joint key (scheme `threshold`, no key of the service's own), and after
// the close each trustee's partial decryptions are kept until t of them open the ballots.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('room_trustees', (t) => {
    t.text('room_id').primary().references('rooms.id').onDelete('CASCADE');
    t.integer('threshold').notNullable();
    // [{ index, name, publicKey, encryptionKey }], index 1 … n in order.
    t.jsonb('trustees').notNullable();
    t.text('status').notNullable().defaultTo('dealing');
    // Set when the ceremony ends: the qualified dealers, the joint key and each trustee's verification share.
    t.jsonb('qualified');
    t.text('joint_key');
    t.jsonb('verification_shares');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('finalized_at', { useTz: true });
  });
  await knex.raw(
    `alter table room_trustees add constraint room_trustees_status_check check (status in ('dealing','ready'))`,
  );

  // The ceremony's messages, each signed by its trustee: a dealing (about 0), a verdict on one dealer's
  // dealing (about = dealer), an answer to one complaint (about = complainer).
  await knex.schema.createTable('trustee_messages', (t) => {
    t.text('room_id').notNullable().references('room_trustees.room_id').onDelete('CASCADE');
    t.integer('trustee_index').notNullable();
    t.text('kind').notNullable();
    t.integer('about').notNullable().defaultTo(0);
    t.jsonb('body').notNullable();
    t.text('signature').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['room_id', 'trustee_index', 'kind', 'about']);
  });
  await knex.raw(
    `alter table trustee_messages add constraint trustee_messages_kind_check check (kind in ('dealing','verdict','answer'))`,
  );

  // One trustee's partial decryptions of a closed proposal's ballots, each with its proof.
  await knex.schema.createTable('ballot_decryptions', (t) => {
    t.text('proposal_id').notNullable().references('proposals.id').onDelete('CASCADE');
    t.integer('trustee_index').notNullable();
    // [{ nullifier, share, proof: { c, z } }]
    t.jsonb('shares').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['proposal_id', 'trustee_index']);
  });

  await knex.schema.alterTable('proposals', (t) => {
    t.text('ballot_scheme').notNullable().defaultTo('service');
  });
  await knex.raw(
    `alter table proposals add constraint proposals_ballot_scheme_check check (ballot_scheme in ('service','threshold'))`,
  );
  // A threshold proposal has no key of the service's to wrap.
  await knex.raw('alter table proposals alter column key_wrapped drop not null');
  await knex.raw('alter table proposals drop constraint proposals_status_check');
  await knex.raw(`alter table proposals add constraint proposals_status_check check (status in
    ('review','voting','decrypting','closed','executed','rejected'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex('proposals').where('ballot_scheme', 'threshold').delete();
  await knex.raw('alter table proposals drop constraint proposals_status_check');
  await knex.raw(`alter table proposals add constraint proposals_status_check check (status in
    ('review','voting','closed','executed','rejected'))`);
  await knex.raw('alter table proposals alter column key_wrapped set not null');
  await knex.raw('alter table proposals drop constraint proposals_ballot_scheme_check');
  await knex.schema.alterTable('proposals', (t) => {
    t.dropColumn('ballot_scheme');
  });
  await knex.schema.dropTable('ballot_decryptions');
  await knex.schema.dropTable('trustee_messages');
  await knex.schema.dropTable('room_trustees');
}
