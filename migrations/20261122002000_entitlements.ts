// Entitlements: prepaid exchange credit on licenses (debited with the job it pays), quota usage per
// license and product line, wallet-signed trial challenges, one trial per wallet, and organization
// keys recomputed with accents and whitespace folded.
import type { Knex } from 'knex';

const legalSuffixes = new Set(
  'inc incorporated llc ltd limited gmbh ag sa sas sarl bv nv plc corp corporation co company lp llp oy ab as srl spa pty kk'.split(
    ' ',
  ),
);

// Frozen copy of the rule of this release (a migration never follows later code).
function organizationKey(name: string): string {
  const words = name
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .normalize('NFKC')
    .toLowerCase()
    .replace(/ß/g, 'ss')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
    .split(' ')
    .filter(Boolean);
  while (words.length > 1 && legalSuffixes.has(words[words.length - 1]!)) words.pop();
  return words.join('');
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('licenses', (t) => {
    t.integer('credit_usd_cents').notNullable().defaultTo(0);
  });
  await knex.raw(
    'alter table licenses add constraint licenses_credit_nonnegative check (credit_usd_cents >= 0)',
  );

  await knex.schema.createTable('license_usage', (t) => {
    t.text('license_id').notNullable().references('licenses.id');
    t.text('product_line').notNullable();
    t.integer('used').notNullable().defaultTo(0);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['license_id', 'product_line']);
  });
  await knex.raw('alter table license_usage add constraint license_usage_nonnegative check (used >= 0)');

  await knex.schema.createTable('license_credit_debits', (t) => {
    t.text('job_id').primary().references('jobs.id');
    t.text('license_id').notNullable().references('licenses.id');
    t.integer('usd_cents').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['license_id']);
  });

  await knex.schema.createTable('trial_challenges', (t) => {
    t.text('nonce').primary();
    t.text('wallet').notNullable();
    // sha256 of the exact text, so an altered text matches no row.
    t.text('text_hash').notNullable();
    t.timestamp('issued_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.index(['expires_at']);
  });

  await knex.schema.createTable('trial_claims', (t) => {
    t.text('checkout_id').primary().references('checkouts.id');
    t.text('wallet').notNullable().unique();
    // HMAC of the client address under a service key: counts trials per address without keeping it.
    t.text('address_key').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['address_key', 'created_at']);
  });

  // Recompute the organization keys (placeholders first, so no old key blocks a new one); of trials
  // that now share a key, the first issued keeps it.
  await knex.raw(`update licenses set organization_key = '#' || id`);
  const trialKeys = new Set<string>();
  for (const table of ['checkouts', 'licenses'] as const) {
    const rows = (await knex(table)
      .select('id', 'organization', table === 'licenses' ? 'tier' : 'id as tier')
      .orderBy('id')) as Array<{
      id: string;
      organization: string;
      tier: string;
    }>;
    for (const row of rows) {
      let key = organizationKey(row.organization) || row.id;
      if (table === 'licenses' && row.tier === 'TRIAL') {
        if (trialKeys.has(key)) key = `${key}#${row.id}`;
        trialKeys.add(key);
      }
      await knex(table).where({ id: row.id }).update({ organization_key: key });
    }
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('trial_claims');
  await knex.schema.dropTable('trial_challenges');
  await knex.schema.dropTable('license_credit_debits');
  await knex.schema.dropTable('license_usage');
  await knex.raw('alter table licenses drop constraint licenses_credit_nonnegative');
  await knex.schema.alterTable('licenses', (t) => {
    t.dropColumn('credit_usd_cents');
  });
}
