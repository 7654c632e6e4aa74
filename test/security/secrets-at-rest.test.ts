// Secrets kept to be used again are sealed to their row. The migration that seals what earlier releases
// kept in the clear (up: nothing in the clear, every delivery still signed with its own secret; down:
// the clear columns back; up again); a ciphertext moved into another row, or opened under another key,
// opens nothing and sends nothing; and a push whose config was deleted or replaced is not sent with the
// new config's credentials.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../shared/platform/db/knex';
import type { Received } from './at-rest';

// The receivers are this test's own loopback servers: it opts in to private targets.
process.env.LOGISTICS_ALLOW_PRIVATE_TARGETS = 'true';

const { createDb } = await import('../../shared/platform/db/knex');
const { migrateBack, migrateNext, migrateUpTo } = await import('../../shared/platform/db/migrate');
const { hmacSha256Hex } = await import('../../shared/platform/crypto');
const { env } = await import('../../shared/platform/env');
const { newId } = await import('../../shared/platform/ids');
const { syncServiceCatalog } = await import('../../shared/jobs/catalog');
const { openSecret, sealSecret } = await import('../../shared/platform/sealing');
const { processDelivery } = await import('../../shared/deliveries/deliveries');
const { deletePushConfig, registerPushConfig } = await import('../../shared/a2a/push-configs');
const { dumpText, receiver, usableForms } = await import('./at-rest');

const MIGRATION = '20261125000600_secrets_at_rest.ts';
const base = new URL(process.env.DATABASE_URL!);
const name = `${base.pathname.slice(1)}_seal`;
const adminUrl = new URL(base);
adminUrl.pathname = '/postgres';
const dbUrl = new URL(base);
dbUrl.pathname = `/${name}`;

async function admin(sql: string) {
  const c = new pg.Client({ connectionString: adminUrl.toString() });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

const whsec = () => `whsec_${randomBytes(32).toString('base64url')}`;

let hook: Awaited<ReturnType<typeof receiver>>;
beforeAll(async () => {
  hook = await receiver();
});
afterAll(async () => {
  await hook?.close();
  await admin(`drop database if exists "${name}" with (force)`);
});

async function insertJob(db: Db): Promise<string> {
  const id = newId('job');
  await db('jobs').insert({
    id,
    service_id: 'attest.timestamp',
    status: 'succeeded',
    input: JSON.stringify({}),
    result: JSON.stringify({ ok: true }),
    finished_at: new Date(),
  });
  return id;
}

/** Sends one delivery now and returns what the receiver got for it. */
async function deliver(db: Db, id: string): Promise<Received> {
  const before = hook.received.length;
  expect(await processDelivery(db, id, 1)).toEqual({ outcome: 'delivered' });
  expect(hook.received).toHaveLength(before + 1);
  return hook.received[before]!;
}

function expectHmac(d: Received, key: string) {
  const ts = d.headers['x-delivery-timestamp'] as string;
  expect(d.headers['x-delivery-signature']).toBe(`sha256=${hmacSha256Hex(key, `${ts}.${d.raw}`)}`);
}

const columnsOf = async (db: Db, table: string) =>
  (await db('information_schema.columns')
    .where({ table_schema: 'public', table_name: table })
    .pluck('column_name')) as string[];

describe('the migration that seals kept secrets', () => {
  it('seals every secret and clears the plaintext; each delivery still signs with its own; down opens them back', async () => {
    await admin(`create database "${name}"`);
    const db = createDb(dbUrl.toString(), { poolMax: 2 });
    try {
      await migrateUpTo(db, MIGRATION);
      await syncServiceCatalog(db);
      // Rows as the previous release wrote them, secrets in the clear.
      const [a, b, c] = [await insertJob(db), await insertJob(db), await insertJob(db)];
      const jobUrl = (id: string) => `https://exchange.example/api/jobs/${id}`;
      const s = { event: whsec(), a2aUnused: whsec(), own: whsec() };
      const token = `tok-${randomBytes(16).toString('hex')}`;
      const credentials = `cred-${randomBytes(16).toString('hex')}`;
      await db('job_webhooks').insert([
        { job_id: a, url: hook.url, secret: s.event, job_url: jobUrl(a) },
        {
          job_id: b,
          url: hook.url,
          secret: s.a2aUnused,
          job_url: jobUrl(b),
          format: 'a2a',
          config_id: 'cfg-1',
          token,
          auth_scheme: 'Bearer',
          auth_credentials: credentials,
        },
      ]);
      const row = (id: string, job: string, method: string, secret: string | null, event: unknown) => ({
        id,
        job_id: job,
        method,
        target_url: method === 'polling' ? null : hook.url,
        job_url: jobUrl(job),
        webhook_secret: secret,
        status: 'queued',
        wait_until: new Date(Date.now() + 3_600_000),
        event: event ? JSON.stringify(event) : null,
      });
      const ids = { event: newId('lgx'), push: newId('lgx'), own: newId('lgx'), polling: newId('lgx') };
      await db('logistics_requests').insert([
        row(ids.event, a, 'webhook', s.event, { event: 'job.succeeded', jobId: a }),
        row(ids.push, b, 'a2a_push', token, { statusUpdate: { taskId: b } }),
        row(ids.own, c, 'webhook', s.own, null),
        row(ids.polling, c, 'polling', null, null),
      ]);
      const secrets = [s.event, s.a2aUnused, s.own, token, credentials];

      await migrateNext(db);
      expect(await columnsOf(db, 'job_webhooks')).not.toEqual(
        expect.arrayContaining(['secret', 'token', 'auth_credentials']),
      );
      expect(await columnsOf(db, 'logistics_requests')).not.toContain('webhook_secret');
      const dump = await dumpText(db, dbUrl.toString());
      for (const secret of secrets)
        for (const form of usableForms(secret)) expect(dump, `the dump holds ${form}`).not.toContain(form);
      // A subscription's deliveries keep no copy; a requested delivery keeps its own, sealed.
      expect(
        (await db('logistics_requests').whereNotNull('webhook_secret_sealed').pluck('id')) as string[],
      ).toEqual([ids.own]);

      const signs = async () => {
        expectHmac(await deliver(db, ids.event), s.event);
        const push = await deliver(db, ids.push);
        expectHmac(push, token);
        expect(push.headers['x-a2a-notification-token']).toBe(token);
        expect(push.headers.authorization).toBe(`Bearer ${credentials}`);
        expectHmac(await deliver(db, ids.own), s.own);
        expect(await processDelivery(db, ids.polling, 1)).toEqual({ outcome: 'delivered' });
      };
      await signs();

      await migrateBack(db);
      const hooks = await db('job_webhooks').orderBy('format');
      expect(hooks.map((h) => [h.job_id, h.secret === s.event, h.token, h.auth_credentials])).toEqual([
        [b, false, token, credentials],
        [a, true, null, null],
      ]);
      expect(hooks[0].secret).toMatch(/^whsec_/);
      const restored = new Map(
        (await db('logistics_requests').select('id', 'webhook_secret')).map((r) => [r.id, r.webhook_secret]),
      );
      expect(Object.fromEntries(restored)).toEqual({
        [ids.event]: s.event,
        [ids.push]: token,
        [ids.own]: s.own,
        [ids.polling]: null,
      });

      await migrateNext(db);
      await db('logistics_requests').update({ status: 'queued' });
      await signs();
    } finally {
      await db.destroy();
    }
  });
});

describe('a sealed secret', () => {
  const app = { db: undefined as unknown as Db };
  beforeAll(() => {
    app.db = createDb();
  });
  afterAll(() => app.db.destroy());

  it('opens only in its own row and column, and only under its own key', async () => {
    const secret = whsec();
    const here = { table: 'logistics_requests', id: 'lgx_a', column: 'webhook_secret_sealed' };
    const sealed = sealSecret(here, secret);
    expect(openSecret(here, sealed)).toBe(secret);
    for (const elsewhere of [
      { ...here, id: 'lgx_b' },
      { ...here, column: 'token_sealed' },
      { ...here, table: 'job_webhooks' },
    ])
      expect(() => openSecret(elsewhere, sealed)).toThrow();
    // With SEALING_KEY set, what the key derived from the signing key sealed does not open, nor the reverse.
    const configured = env.SEALING_KEY;
    env.SEALING_KEY = randomBytes(32).toString('hex');
    try {
      expect(() => openSecret(here, sealed)).toThrow();
      const underSetting = sealSecret(here, secret);
      expect(openSecret(here, underSetting)).toBe(secret);
      env.SEALING_KEY = configured;
      expect(() => openSecret(here, underSetting)).toThrow();
    } finally {
      env.SEALING_KEY = configured;
    }
  });

  it('moved into another delivery row, signs nothing and is not sent', async () => {
    const db = app.db;
    const job = await insertJob(db);
    const mine = newId('lgx');
    const theirs = newId('lgx');
    const base = {
      job_id: job,
      method: 'webhook',
      target_url: hook.url,
      job_url: `https://exchange.example/api/jobs/${job}`,
      status: 'queued',
      wait_until: new Date(Date.now() + 3_600_000),
    };
    const theirSecret = whsec();
    await db('logistics_requests').insert([
      { ...base, id: theirs, webhook_secret_sealed: sealSecret(placeOf(theirs), theirSecret) },
      { ...base, id: mine, webhook_secret_sealed: sealSecret(placeOf(mine), whsec()) },
    ]);
    // Whoever can write the table copies their ciphertext into the row they control.
    await db('logistics_requests')
      .where({ id: mine })
      .update({
        webhook_secret_sealed: (await db('logistics_requests').where({ id: theirs }).first())
          .webhook_secret_sealed,
      });
    const before = hook.received.length;
    await expect(processDelivery(db, mine, 1)).rejects.toThrow();
    expect(hook.received).toHaveLength(before);
  });

  it('of a deleted or replaced push config is never sent with the new config’s credentials', async () => {
    const db = app.db;
    const old = await receiver('/old');
    const next = await receiver('/new');
    try {
      const job = await insertJob(db);
      const jobRow = { id: job, agent_id: null, status: 'running' as const };
      const jobUrl = `https://exchange.example/api/jobs/${job}`;
      await db.transaction((trx) =>
        registerPushConfig(
          trx,
          jobRow,
          {
            id: 'a',
            url: old.url,
            token: 'token-a',
            authentication: { scheme: 'Bearer', credentials: 'cred-a' },
          },
          jobUrl,
          { fromStart: true },
        ),
      );
      // A push the relay made for config a, not yet sent.
      const push = newId('lgx');
      await db('logistics_requests').insert({
        id: push,
        job_id: job,
        method: 'a2a_push',
        target_url: old.url,
        job_url: jobUrl,
        status: 'queued',
        wait_until: new Date(),
        event: JSON.stringify({ statusUpdate: { taskId: job } }),
      });
      expect(await deletePushConfig(db, job, 'a')).toBe(true);
      expect(await db('logistics_requests').where({ id: push }).first()).toMatchObject({
        status: 'failed',
        last_error: 'The push notification config was deleted.',
      });
      await db.transaction((trx) =>
        registerPushConfig(
          trx,
          jobRow,
          {
            id: 'b',
            url: next.url,
            token: 'token-b',
            authentication: { scheme: 'Bearer', credentials: 'cred-b' },
          },
          jobUrl,
          { fromStart: false },
        ),
      );
      expect(await processDelivery(db, push, 1)).toEqual({ outcome: 'skipped' });
      // Even a push left queued (as a relay racing the deletion could leave one) goes nowhere.
      await db('logistics_requests').where({ id: push }).update({ status: 'queued' });
      expect(await processDelivery(db, push, 1)).toEqual({
        outcome: 'failed',
        reason: 'The push notification config was replaced.',
      });
      expect(old.received).toEqual([]);
      expect(next.received).toEqual([]);
    } finally {
      await old.close();
      await next.close();
    }
  });
});

const placeOf = (id: string) => ({ table: 'logistics_requests', id, column: 'webhook_secret_sealed' });
