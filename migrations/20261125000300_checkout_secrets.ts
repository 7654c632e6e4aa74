// Checkouts and payment-gate requests open with a client secret (only its sha256 stored); a checkout's
// license key is sealed to an X25519 key derived from that secret; licenses keep the sha256 of their
// token instead of the token; organization keys recomputed by their confusables skeleton (UTS #39)
// with legal forms dropped at either end.
import type { Knex } from 'knex';
import unhomoglyph from 'unhomoglyph';

// Frozen copies of the organization-key rules (a migration never follows later code): this release's,
// and the one before it (20261122002000) for the way down.
const legalForms = new Set(
  [
    'the inc incorporated corp corporation co company llc pllc ltd limited plc lp llp lllp pty pte pvt cic',
    'gmbh mbh ag kg kgaa ohg ug ev eg se bv nv bvba vof',
    'sa sas sasu sarl sca snc sl slu ltda lda spa srl srls sapa',
    'oy oyj ab as asa aps hf sro sp zoo kft zrt doo',
    'kk gk bhd sdn',
  ]
    .join(' ')
    .split(' ')
    .map((f) => words(fold(f)).join('')),
);

function skeleton(s: string): string {
  return unhomoglyph(s.normalize('NFD')).normalize('NFD');
}

function fold(text: string): string {
  let s = skeleton(text.normalize('NFKD'));
  s = skeleton(s.toUpperCase());
  s = skeleton(s.toLowerCase());
  return s.replace(/\p{M}+/gu, '');
}

function words(folded: string): string[] {
  const out: string[] = [];
  let run = '';
  for (const w of folded.split(/[^\p{L}\p{N}]+/u).filter(Boolean)) {
    if ([...w].length === 1) {
      run += w;
      continue;
    }
    if (run) out.push(run);
    run = '';
    out.push(w);
  }
  if (run) out.push(run);
  return out;
}

function organizationKey(name: string): string {
  const w = words(fold(name));
  while (w.length > 1 && legalForms.has(w[w.length - 1]!)) w.pop();
  while (w.length > 1 && legalForms.has(w[0]!)) w.shift();
  return w.join('');
}

const previousSuffixes = new Set(
  'inc incorporated llc ltd limited gmbh ag sa sas sarl bv nv plc corp corporation co company lp llp oy ab as srl spa pty kk'.split(
    ' ',
  ),
);

function previousOrganizationKey(name: string): string {
  const w = name
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .normalize('NFKC')
    .toLowerCase()
    .replace(/ß/g, 'ss')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
    .split(' ')
    .filter(Boolean);
  while (w.length > 1 && previousSuffixes.has(w[w.length - 1]!)) w.pop();
  return w.join('');
}

/**
 * Recomputes every organization key (placeholders first, so no old key blocks a new one). Of trials
 * that now share a key the first issued keeps it; the others keep theirs apart (`key#licenseId`), so
 * the one-trial-per-organization index holds and none of them is taken away.
 */
async function rekey(knex: Knex, keyOf: (name: string) => string): Promise<void> {
  await knex.raw(`update licenses set organization_key = '#' || id`);
  const trialKeys = new Set<string>();
  for (const table of ['checkouts', 'licenses'] as const) {
    const rows = (await knex(table)
      .select('id', 'organization', table === 'licenses' ? 'tier' : 'id as tier')
      .orderBy(table === 'licenses' ? 'issued_at' : 'created_at')
      .orderBy('id')) as Array<{ id: string; organization: string; tier: string }>;
    for (const row of rows) {
      let key = keyOf(row.organization) || row.id;
      if (table === 'licenses' && row.tier === 'TRIAL') {
        if (trialKeys.has(key)) key = `${key}#${row.id}`;
        trialKeys.add(key);
      }
      await knex(table).where({ id: row.id }).update({ organization_key: key });
    }
  }
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('checkouts', (t) => {
    // Null for checkouts made before: no one can open them (status and verify answer 404).
    t.text('client_secret_hash');
    t.binary('license_seal_key');
    t.binary('license_box');
  });
  await knex.schema.alterTable('payment_gate_requests', (t) => {
    t.text('client_secret_hash');
  });

  // Licenses: the token's sha256 replaces the token. Existing tokens keep working (the resolver
  // compares hashes); a license whose token was lost on a way down gets a hash no token has.
  await knex.schema.alterTable('licenses', (t) => {
    t.text('token_hash');
  });
  await knex.raw(
    `update licenses set token_hash = encode(sha256(convert_to(coalesce(token, 'lost:' || id), 'UTF8')), 'hex')`,
  );
  await knex.schema.alterTable('licenses', (t) => {
    t.dropNullable('token_hash');
    t.dropColumn('token');
  });

  await rekey(knex, organizationKey);
}

export async function down(knex: Knex): Promise<void> {
  await rekey(knex, previousOrganizationKey);
  // The tokens cannot come back: only their hashes were kept. The column returns empty (nullable), so
  // under the previous code no license key authenticates until licenses are issued again.
  await knex.schema.alterTable('licenses', (t) => {
    t.text('token');
  });
  await knex.schema.alterTable('licenses', (t) => {
    t.dropColumn('token_hash');
  });
  await knex.schema.alterTable('payment_gate_requests', (t) => {
    t.dropColumn('client_secret_hash');
  });
  await knex.schema.alterTable('checkouts', (t) => {
    t.dropColumn('license_box');
    t.dropColumn('license_seal_key');
    t.dropColumn('client_secret_hash');
  });
}
