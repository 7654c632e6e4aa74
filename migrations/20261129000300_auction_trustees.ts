// Sealed auctions opened by a room's trustees: an auction may take each bid's opening (amount and salt)
// sealed to the trustees' joint key beside its commitment; after the reveal window any threshold of the
// trustees decrypt them, so no bidder can withhold a reveal. Their partial decryptions are kept here.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('auctions', (t) => {
    t.text('reveal_by').notNullable().defaultTo('bidders');
  });
  await knex.raw(
    `alter table auctions add constraint auctions_reveal_by_check check (reveal_by in ('bidders','trustees'))`,
  );
  await knex.schema.alterTable('bids', (t) => {
    // The bid's opening encrypted to the trustees' joint key (shared/governance/threshold.ts).
    t.binary('sealed_opening');
    // Who revealed it: the bidder, or the trustees' decryption.
    t.text('revealed_by');
  });
  await knex.schema.createTable('auction_decryptions', (t) => {
    t.text('auction_id').notNullable().references('auctions.id').onDelete('CASCADE');
    t.integer('trustee_index').notNullable();
    // [{ bidId, share, proof: { c, z } }]
    t.jsonb('shares').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['auction_id', 'trustee_index']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('auction_decryptions');
  await knex.schema.alterTable('bids', (t) => {
    t.dropColumn('sealed_opening');
    t.dropColumn('revealed_by');
  });
  await knex.raw('alter table auctions drop constraint auctions_reveal_by_check');
  await knex.schema.alterTable('auctions', (t) => {
    t.dropColumn('reveal_by');
  });
}
