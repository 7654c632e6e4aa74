// Secrets the service keeps to use again are sealed (AES-256-GCM under the sealing key, SEALING_KEY or
// derived from the signing key; the associated data names the table, the row and the column, so a
// ciphertext opens nowhere else): a job webhook's signing secret, the token and credentials an A2A
// push receiver asked for, and the signing secret of a delivery requested with requestLogistics. The
// plaintext columns are cleared, then dropped.
//
// A delivery made from a subscription (a job webhook's event, an A2A push) kept a copy of the
// subscription's secret; it no longer does (the deliveries worker takes it from the subscription when
// it sends), so those copies are cleared, not sealed.
//
// The row versions that held the plaintext stay in the table files until VACUUM reclaims them; the
// release notes in docs/security.md say how to rewrite the tables at once.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { openSecret, sealSecret } from '../shared/platform/sealing';

const BATCH = 500;

type Value = string | Buffer | null;

/** One statement per batch: `update … from (values …)`, every column cast to its type. */
async function updateRows(
  knex: Knex,
  table: string,
  idColumn: string,
  types: Record<string, 'text' | 'bytea'>,
  rows: Array<{ id: string; set: Record<string, Value> }>,
): Promise<void> {
  if (rows.length === 0) return;
  const cols = Object.keys(types);
  const tuple = `(?::text, ${cols.map((c) => `?::${types[c]}`).join(', ')})`;
  await knex.raw(
    `update ?? as t set ${cols.map(() => '?? = v.??').join(', ')}
       from (values ${rows.map(() => tuple).join(', ')}) as v(id, ${cols.map(() => '??').join(', ')})
      where t.?? = v.id`,
    [
      table,
      ...cols.flatMap((c) => [c, c]),
      ...rows.flatMap((r) => [r.id, ...cols.map((c) => r.set[c] ?? null)]),
      ...cols,
      idColumn,
    ],
  );
}

/** Every row matching `where`, a batch at a time in id order, rewritten by `change`. */
async function eachBatch(
  knex: Knex,
  table: string,
  idColumn: string,
  columns: string[],
  where: (q: Knex.QueryBuilder) => void,
  types: Record<string, 'text' | 'bytea'>,
  change: (row: Record<string, unknown>) => Record<string, Value>,
): Promise<void> {
  let after = '';
  for (;;) {
    const rows = (await knex(table)
      .select(idColumn, ...columns)
      .where(idColumn, '>', after)
      .where(where)
      .orderBy(idColumn)
      .limit(BATCH)) as Array<Record<string, unknown>>;
    if (rows.length === 0) return;
    await updateRows(
      knex,
      table,
      idColumn,
      types,
      rows.map((r) => ({ id: r[idColumn] as string, set: change(r) })),
    );
    after = rows[rows.length - 1]![idColumn] as string;
  }
}

const sealed = (table: string, id: string, column: string, plain: unknown): Buffer | null =>
  typeof plain === 'string' ? sealSecret({ table, id, column }, plain) : null;

const opened = (table: string, id: string, column: string, value: unknown): string | null =>
  value ? openSecret({ table, id, column }, value as Buffer) : null;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('job_webhooks', (t) => {
    // The HMAC key of an `event` subscription's deliveries (A2A pushes are keyed with the token).
    t.binary('secret_sealed');
    // What an A2A receiver asked to get back: `X-A2A-Notification-Token`, and Authorization's credentials.
    t.binary('token_sealed');
    t.binary('auth_credentials_sealed');
  });
  await knex.raw('alter table job_webhooks alter column secret drop not null');
  const W = 'job_webhooks';
  await eachBatch(
    knex,
    W,
    'job_id',
    ['format', 'secret', 'token', 'auth_credentials'],
    (q) => q.whereNotNull('secret').orWhereNotNull('token').orWhereNotNull('auth_credentials'),
    {
      secret_sealed: 'bytea',
      token_sealed: 'bytea',
      auth_credentials_sealed: 'bytea',
      secret: 'text',
      token: 'text',
      auth_credentials: 'text',
    },
    (r) => {
      const id = r.job_id as string;
      return {
        // An A2A subscription's secret was a random value nobody saw or used: it is not kept.
        secret_sealed: r.format === 'a2a' ? null : sealed(W, id, 'secret_sealed', r.secret),
        token_sealed: sealed(W, id, 'token_sealed', r.token),
        auth_credentials_sealed: sealed(W, id, 'auth_credentials_sealed', r.auth_credentials),
        secret: null,
        token: null,
        auth_credentials: null,
      };
    },
  );
  await knex.schema.alterTable('job_webhooks', (t) => {
    t.dropColumn('secret');
    t.dropColumn('token');
    t.dropColumn('auth_credentials');
  });
  await knex.raw(`alter table job_webhooks add constraint job_webhooks_secret_check
    check (format = 'a2a' or secret_sealed is not null)`);

  await knex.schema.alterTable('logistics_requests', (t) => {
    // A requestLogistics delivery's own HMAC key; null for polling and for a subscription's deliveries.
    t.binary('webhook_secret_sealed');
  });
  await knex('logistics_requests')
    .whereNotNull('event')
    .whereNotNull('webhook_secret')
    .update({ webhook_secret: null });
  const L = 'logistics_requests';
  await eachBatch(
    knex,
    L,
    'id',
    ['webhook_secret'],
    (q) => q.whereNotNull('webhook_secret'),
    { webhook_secret_sealed: 'bytea', webhook_secret: 'text' },
    (r) => ({
      webhook_secret_sealed: sealed(L, r.id as string, 'webhook_secret_sealed', r.webhook_secret),
      webhook_secret: null,
    }),
  );
  await knex.schema.alterTable('logistics_requests', (t) => {
    t.dropColumn('webhook_secret');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table job_webhooks drop constraint job_webhooks_secret_check');
  await knex.schema.alterTable('job_webhooks', (t) => {
    t.text('secret');
    t.text('token');
    t.text('auth_credentials');
  });
  const W = 'job_webhooks';
  await eachBatch(
    knex,
    W,
    'job_id',
    ['secret_sealed', 'token_sealed', 'auth_credentials_sealed'],
    (q) => q.whereNotNull('job_id'),
    { secret: 'text', token: 'text', auth_credentials: 'text' },
    (r) => {
      const id = r.job_id as string;
      return {
        // The old schema wants a secret in every row; an A2A one had a random value nobody used.
        secret:
          opened(W, id, 'secret_sealed', r.secret_sealed) ?? `whsec_${randomBytes(32).toString('base64url')}`,
        token: opened(W, id, 'token_sealed', r.token_sealed),
        auth_credentials: opened(W, id, 'auth_credentials_sealed', r.auth_credentials_sealed),
      };
    },
  );
  await knex.raw('alter table job_webhooks alter column secret set not null');

  await knex.schema.alterTable('logistics_requests', (t) => {
    t.text('webhook_secret');
  });
  const L = 'logistics_requests';
  await eachBatch(
    knex,
    L,
    'id',
    ['webhook_secret_sealed'],
    (q) => q.whereNotNull('webhook_secret_sealed'),
    { webhook_secret: 'text' },
    (r) => ({ webhook_secret: opened(L, r.id as string, 'webhook_secret_sealed', r.webhook_secret_sealed) }),
  );
  // A subscription's deliveries carried a copy of its key again: the token for an A2A push.
  await knex.raw(`update logistics_requests l
       set webhook_secret = case when l.method = 'a2a_push' then w.token else w.secret end
      from job_webhooks w
     where w.job_id = l.job_id and l.event is not null`);

  await knex.schema.alterTable('logistics_requests', (t) => {
    t.dropColumn('webhook_secret_sealed');
  });
  await knex.schema.alterTable('job_webhooks', (t) => {
    t.dropColumn('auth_credentials_sealed');
    t.dropColumn('token_sealed');
    t.dropColumn('secret_sealed');
  });
}
