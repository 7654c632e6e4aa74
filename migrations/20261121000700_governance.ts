// Private governance, treasury coordination and sealed auctions: rooms whose members are commitments,
// committees, proposals with encrypted ballots, treasury requests with m-of-n approvals and spending
// limits, sealed-bid auctions, and the hash-chained audit entries of proposals and treasury requests.
import type { Knex } from 'knex';

const check = (knex: Knex, table: string, column: string, values: string[]) =>
  knex.raw(
    `alter table ${table} add constraint ${table}_${column}_check check (${column} in (${values
      .map((v) => `'${v}'`)
      .join(',')}))`,
  );

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('rooms', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    // Private: with it anyone could test a wallet key for membership.
    t.text('salt').notNullable();
    t.text('owner').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  // sha256(room salt ‖ wallet public key); the key itself is never stored.
  await knex.schema.createTable('room_members', (t) => {
    t.text('room_id').notNullable().references('rooms.id').onDelete('CASCADE');
    t.text('member_commitment').notNullable();
    t.timestamp('added_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['room_id', 'member_commitment']);
  });

  await knex.schema.createTable('committees', (t) => {
    t.text('room_id').notNullable().references('rooms.id').onDelete('CASCADE');
    t.text('slug').notNullable();
    t.text('name').notNullable();
    t.smallint('threshold').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['room_id', 'slug']);
  });

  await knex.schema.createTable('committee_members', (t) => {
    t.text('room_id').notNullable();
    t.text('committee').notNullable();
    t.text('member_commitment').notNullable();
    t.primary(['room_id', 'committee', 'member_commitment']);
    t.foreign(['room_id', 'committee'])
      .references(['room_id', 'slug'])
      .inTable('committees')
      .onDelete('CASCADE');
    t.foreign(['room_id', 'member_commitment'])
      .references(['room_id', 'member_commitment'])
      .inTable('room_members')
      .onDelete('CASCADE');
  });

  // Hash-chained audit entries of proposals and treasury requests (subject = proposal or request id).
  await knex.schema.createTable('coordination_entries', (t) => {
    t.text('subject_id').notNullable();
    t.integer('seq').notNullable();
    t.jsonb('body').notNullable();
    t.text('prev_hash').notNullable();
    t.text('entry_hash').notNullable();
    t.primary(['subject_id', 'seq']);
  });

  await knex.schema.createTable('proposals', (t) => {
    t.text('id').primary();
    t.text('room_id').notNullable().references('rooms.id');
    t.text('title').notNullable();
    t.text('description_hash');
    t.jsonb('options').notNullable();
    t.text('review_committee').notNullable();
    t.integer('quorum').notNullable().defaultTo(0);
    t.text('status').notNullable().defaultTo('review');
    t.text('outcome');
    // Either an absolute end, or a duration counted from the opening of the vote.
    t.timestamp('voting_ends_at', { useTz: true });
    t.integer('voting_seconds');
    t.text('voting_opened_at');
    t.text('created_at_iso').notNullable();
    // The per-proposal ballot key, AES-256-GCM-wrapped under the service ballot key.
    t.binary('key_wrapped').notNullable();
    t.text('chain_genesis').notNullable();
    t.text('chain_head').notNullable();
    t.integer('entry_count').notNullable().defaultTo(0);
    t.text('tally_proof_id').unique();
    t.jsonb('tally_package');
    t.text('final_proof_id').unique();
    t.jsonb('final_package');
    t.text('owner').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['status', 'voting_ends_at']);
  });
  await check(knex, 'proposals', 'status', ['review', 'voting', 'closed', 'executed', 'rejected']);

  await knex.schema.createTable('proposal_reviews', (t) => {
    t.text('proposal_id').notNullable().references('proposals.id').onDelete('CASCADE');
    t.text('member_commitment').notNullable();
    t.text('decision').notNullable();
    t.text('at').notNullable();
    t.primary(['proposal_id', 'member_commitment']);
  });

  // One ballot per member commitment; the choice and its salt only as ciphertext until the close.
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

  await knex.schema.createTable('spending_limits', (t) => {
    t.text('room_id').notNullable().references('rooms.id').onDelete('CASCADE');
    t.text('asset').notNullable();
    t.integer('period_seconds').notNullable();
    t.specificType('limit_amount', 'numeric(78,0)').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['room_id', 'asset']);
  });

  await knex.schema.createTable('treasury_requests', (t) => {
    t.text('id').primary();
    t.text('room_id').notNullable().references('rooms.id');
    t.text('committee').notNullable();
    t.text('operation').notNullable();
    t.text('asset').notNullable();
    t.specificType('amount', 'numeric(78,0)').notNullable();
    t.text('recipient').notNullable();
    t.text('purpose_hash').notNullable();
    t.smallint('threshold').notNullable();
    t.smallint('committee_size').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.timestamp('period_start', { useTz: true });
    t.text('created_at_iso').notNullable();
    t.text('chain_genesis').notNullable();
    t.text('chain_head').notNullable();
    t.integer('entry_count').notNullable().defaultTo(0);
    t.text('proof_id').unique();
    t.jsonb('package');
    t.text('owner').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['room_id', 'asset', 'status', 'period_start']);
  });
  await check(knex, 'treasury_requests', 'status', ['pending', 'approved', 'rejected']);
  await check(knex, 'treasury_requests', 'operation', ['spend', 'mint', 'burn', 'transfer']);

  await knex.schema.createTable('approvals', (t) => {
    t.text('request_id').notNullable().references('treasury_requests.id').onDelete('CASCADE');
    t.text('member_commitment').notNullable();
    t.text('decision').notNullable();
    t.text('at').notNullable();
    t.primary(['request_id', 'member_commitment']);
  });

  await knex.schema.createTable('auctions', (t) => {
    t.text('id').primary();
    t.text('room_id').references('rooms.id');
    t.text('title').notNullable();
    t.text('pricing').notNullable();
    t.text('asset').notNullable();
    t.specificType('reserve', 'numeric(78,0)').notNullable().defaultTo(0);
    t.text('unrevealed_deposit').notNullable();
    t.text('created_at_iso').notNullable();
    t.text('bidding_ends_at').notNullable();
    t.text('reveal_ends_at').notNullable();
    t.text('status').notNullable().defaultTo('open');
    t.text('proof_id').unique();
    t.jsonb('package');
    t.text('owner').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await check(knex, 'auctions', 'status', ['open', 'finalized']);
  await check(knex, 'auctions', 'pricing', ['first', 'second']);

  await knex.schema.createTable('bids', (t) => {
    t.text('id').primary();
    t.text('auction_id').notNullable().references('auctions.id').onDelete('CASCADE');
    t.text('bidder').notNullable();
    t.text('commitment').notNullable();
    t.text('deposit_ref').notNullable();
    t.text('committed_at').notNullable();
    t.text('amount');
    t.text('salt');
    t.text('revealed_at');
    t.text('reveal_status');
    t.unique(['auction_id', 'bidder']);
    t.unique(['auction_id', 'commitment']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'bids',
    'auctions',
    'approvals',
    'treasury_requests',
    'spending_limits',
    'ballots',
    'proposal_reviews',
    'proposals',
    'coordination_entries',
    'committee_members',
    'committees',
    'room_members',
    'rooms',
  ])
    await knex.schema.dropTable(table);
}
