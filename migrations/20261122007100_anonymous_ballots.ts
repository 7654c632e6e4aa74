// Anonymous ballots. A room now also keeps a Poseidon tree of identity commitments (room_identities)
// and the history of its roots (room_roots); a ballot is a nullifier, a root, a ciphertext and a proof,
// with nothing that names a member and no time. The old `ballots` table kept the member's commitment
// and the cast time beside each ballot: it is dropped rather than nulled out, because even without
// those columns its time-ordered ids (ULIDs) and sealed salts would still order and open the old
// ballots; every closed proposal's ballots already live in its published package, the only place a
// reader needs them. A vote still open with ballots of the old kind stops the migration: close it first
// (its ballots could be neither counted by the new close nor kept without their link).
// The plaintext room salt becomes nullable beside a sealed copy: the salt cannot be sealed here (the key
// is the service's, not the database's), so the service seals each room's salt and clears the plaintext
// at release (sealLegacyRoomSalts) and on first use.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const open = (await knex('ballots')
    .join('proposals', 'proposals.id', 'ballots.proposal_id')
    .where('proposals.status', 'voting')
    .countDistinct({ n: 'proposals.id' })
    .first()) as { n: string | number };
  if (Number(open.n) > 0)
    throw new Error(
      `${open.n} proposal(s) are being voted on with ballots of the old kind; close them (POST …/close once the window ends) before this migration.`,
    );
  await knex.schema.dropTable('ballots');

  await knex.schema.createTable('ballots', (t) => {
    t.text('proposal_id').notNullable().references('proposals.id').onDelete('CASCADE');
    // Poseidon(identity secret, proposal scope), decimal: a second ballot of one member repeats it.
    t.text('nullifier').notNullable();
    // The member tree root the proof was made against (one of the room's recent roots).
    t.text('root').notNullable();
    // The vote encrypted to the proposal key (fixed length: the length says nothing of the choice).
    t.binary('ciphertext').notNullable();
    t.jsonb('proof').notNullable();
    // Keyed by the nullifier: no id that orders ballots by arrival, no cast time.
    t.primary(['proposal_id', 'nullifier']);
  });

  await knex.schema.createTable('room_identities', (t) => {
    t.text('room_id').notNullable().references('rooms.id').onDelete('CASCADE');
    t.integer('leaf_index').notNullable();
    // Poseidon(identity secret), decimal: what the room's tree holds.
    t.text('identity_commitment').notNullable();
    t.primary(['room_id', 'leaf_index']);
    t.unique(['room_id', 'identity_commitment']);
  });

  // Which wallet members registered their own identity (one each), without saying which identity.
  await knex.schema.createTable('room_identity_claims', (t) => {
    t.text('room_id').notNullable().references('rooms.id').onDelete('CASCADE');
    t.text('member_commitment').notNullable();
    t.primary(['room_id', 'member_commitment']);
  });

  // Every root the room's tree has had, in order; ballots are taken against the most recent few.
  await knex.schema.createTable('room_roots', (t) => {
    t.text('room_id').notNullable().references('rooms.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.text('root').notNullable();
    // How many identities the tree held at this root.
    t.integer('size').notNullable();
    t.primary(['room_id', 'seq']);
  });

  await knex.schema.alterTable('proposals', (t) => {
    // The X25519 public key of the proposal's ballot key (whose private half is key_wrapped), base64url.
    t.text('ballot_public_key');
  });

  await knex.schema.alterTable('rooms', (t) => {
    // The room salt sealed under the service's ballot key; `salt` is cleared once this is set.
    t.binary('salt_sealed');
  });
  await knex.raw('alter table rooms alter column salt drop not null');
}

export async function down(knex: Knex): Promise<void> {
  if (await knex('rooms').whereNull('salt').first())
    throw new Error('Some rooms keep only a sealed salt; the old schema cannot hold them.');
  await knex.raw('alter table rooms alter column salt set not null');
  await knex.schema.alterTable('rooms', (t) => {
    t.dropColumn('salt_sealed');
  });
  await knex.schema.alterTable('proposals', (t) => {
    t.dropColumn('ballot_public_key');
  });
  await knex.schema.dropTable('room_roots');
  await knex.schema.dropTable('room_identity_claims');
  await knex.schema.dropTable('room_identities');
  await knex.schema.dropTable('ballots');
  await knex.schema.createTable('ballots', (t) => {
    t.text('id').primary();
    t.text('proposal_id').notNullable().references('proposals.id').onDelete('CASCADE');
    t.text('member_commitment').notNullable();
    t.text('ballot_commitment').notNullable();
    t.binary('sealed').notNullable();
    t.text('cast_at').notNullable();
    t.unique(['proposal_id', 'member_commitment']);
    t.unique(['proposal_id', 'ballot_commitment']);
  });
}
