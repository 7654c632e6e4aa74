// A trustee signs the set of partial decryptions it posts (of a vote, of an auction's bid openings):
// the signature is checked before any proof, and names who decrypted where nothing was cast to prove it.
// Kept beside the set, so the package can carry it to offline verifiers. Null for sets taken before.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  for (const table of ['ballot_decryptions', 'auction_decryptions']) {
    await knex.schema.alterTable(table, (t) => {
      t.text('signature');
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['ballot_decryptions', 'auction_decryptions']) {
    await knex.schema.alterTable(table, (t) => {
      t.dropColumn('signature');
    });
  }
}
