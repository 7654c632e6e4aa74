// A room's identity claims (which wallet members registered an identity of their own) become one row per
// room holding the claimed members as a sorted set, rewritten whole at each registration. One row per
// claim, appended at registration, kept the arrival order in the table's physical order; the tree's
// leaves keep it by design (leaf_index), so a dump taken at any later time paired the n-th claim with
// the n-th registered leaf. A sorted set has no arrival order, and all of a room's claims are written
// by its latest registration.
import type { Knex } from 'knex';

/** Builds `next` from `fill`, then puts it in place of `room_identity_claims` under the usual names. */
async function replace(knex: Knex, build: (t: Knex.CreateTableBuilder) => void, fill: string): Promise<void> {
  await knex.schema.createTable('room_identity_claims_next', build);
  await knex.raw(fill);
  await knex.schema.dropTable('room_identity_claims');
  await knex.schema.renameTable('room_identity_claims_next', 'room_identity_claims');
  await knex.raw('alter index room_identity_claims_next_pkey rename to room_identity_claims_pkey');
  await knex.raw(`alter table room_identity_claims rename constraint room_identity_claims_next_room_id_foreign
    to room_identity_claims_room_id_foreign`);
}

export async function up(knex: Knex): Promise<void> {
  await replace(
    knex,
    (t) => {
      t.text('room_id').primary().references('rooms.id').onDelete('CASCADE');
      // The member commitments of the wallets that registered, each once, in byte order.
      t.specificType('member_commitments', 'text[]').notNullable();
    },
    `insert into room_identity_claims_next (room_id, member_commitments)
       select room_id, array_agg(member_commitment order by member_commitment collate "C")
         from room_identity_claims group by room_id`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await replace(
    knex,
    (t) => {
      t.text('room_id').notNullable().references('rooms.id').onDelete('CASCADE');
      t.text('member_commitment').notNullable();
      t.primary(['room_id', 'member_commitment']);
    },
    `insert into room_identity_claims_next (room_id, member_commitment)
       select room_id, unnest(member_commitments) from room_identity_claims`,
  );
}
