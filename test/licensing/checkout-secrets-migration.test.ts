// The migration to client secrets and hashed license keys, on rows made before it: each license
// token becomes its sha256 and keeps working, organization keys become skeletons (a look-alike that
// had its own trial keeps it, apart), and down then up again leaves no token that authenticates.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Knex } from 'knex';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { normalizeOrganization } from '../../shared/licensing/organizations';
import { resolveLicenseToken } from '../../shared/licensing/licenses';
import { signLicense } from '../../shared/licensing/license-token';
import { sha256Hex } from '../../shared/platform/crypto';
import { createDb } from '../../shared/platform/db/knex';
import type { Db } from '../../shared/platform/db/knex';
import { migrationsDirectory } from '../../shared/platform/db/migrate';
import { newId } from '../../shared/platform/ids';
import { serviceSigningKey } from '../../shared/platform/keys';

const MIGRATION = '20261125000300_checkout_secrets.ts';
/** The key history, which checking a license reads (a later migration, independent of this one). */
const KEY_HISTORY = '20261125100300_trust_keys.ts';

/** The migrations up to MIGRATION (included or not), and the key history: later ones do not run here. */
function through(included: boolean): Knex.MigratorConfig {
  const files = readdirSync(migrationsDirectory)
    .filter((f) => /^\d{14}_[\w-]+\.ts$/.test(f))
    .sort()
    .filter((f) => (included ? f <= MIGRATION : f < MIGRATION) || f === KEY_HISTORY);
  return {
    tableName: 'knex_migrations',
    migrationSource: {
      getMigrations: async () => files,
      getMigrationName: (f: string) => f,
      getMigration: async (f: string) =>
        (await import(pathToFileURL(join(migrationsDirectory, f)).href)) as Knex.Migration,
    },
  };
}

const base = new URL(process.env.DATABASE_URL!);
const name = `${base.pathname.slice(1)}_secrets`;
const adminUrl = new URL(base);
adminUrl.pathname = '/postgres';

async function admin(sql: string) {
  const c = new pg.Client({ connectionString: adminUrl.toString() });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

afterAll(() => admin(`drop database if exists "${name}" with (force)`));

/** A checkout and its license as the release before this migration wrote them (token in clear). */
async function legacyLicense(db: Db, organization: string, tier: 'TRIAL' | 'Business', oldKey: string) {
  const now = new Date(Date.now() - 86_400_000);
  const checkoutId = newId('chk');
  const licenseId = newId('lic');
  const expiresAt = new Date(now.getTime() + 14 * 86_400_000);
  const token = signLicense(
    {
      licenseId,
      checkoutId,
      tier,
      organization,
      periodDays: 14,
      issuedAt: now.toISOString(),
      expiresAt: expiresAt.toISOString(),
    },
    serviceSigningKey(),
  );
  await db('checkouts').insert({
    id: checkoutId,
    license_type: tier,
    organization,
    organization_key: oldKey,
    email: 'old@example.test',
    usd_cents: 0,
    status: 'confirmed',
    settlement: tier === 'TRIAL' ? 'trial' : 'exact',
    created_at: now,
    updated_at: now,
    settled_at: now,
  });
  await db('licenses').insert({
    id: licenseId,
    checkout_id: checkoutId,
    tier,
    organization,
    organization_key: oldKey,
    period_days: 14,
    token,
    key_id: serviceSigningKey().keyId,
    issued_at: now,
    expires_at: expiresAt,
  });
  return { checkoutId, licenseId, token };
}

const columns = async (db: Db, table: string) =>
  (await db('information_schema.columns')
    .where({ table_name: table, table_schema: 'public' })
    .pluck('column_name')) as string[];

describe('the client-secret migration', () => {
  it('hashes existing license keys (which keep working), rekeys organizations, and goes down and up', async () => {
    await admin(`create database "${name}"`);
    const url = new URL(base);
    url.pathname = `/${name}`;
    const db = createDb(url.toString(), { poolMax: 2 });
    try {
      await db.migrate.latest(through(false));
      // Two trials the old rule told apart ("theacme", "αcme") and a paid license.
      const first = await legacyLicense(db, 'The Acme', 'TRIAL', 'theacme');
      const second = await legacyLicense(db, '\u0391cme Inc', 'TRIAL', '\u03b1cme');
      const paid = await legacyLicense(db, 'ACME GmbH & Co. KG', 'Business', 'acmegmbhcokg');

      await db.migrate.latest(through(true));
      expect(await columns(db, 'licenses')).not.toContain('token');
      expect(await columns(db, 'checkouts')).toEqual(
        expect.arrayContaining(['client_secret_hash', 'license_seal_key', 'license_box']),
      );
      expect(await columns(db, 'payment_gate_requests')).toContain('client_secret_hash');
      for (const l of [first, second, paid]) {
        const row = await db('licenses').where({ id: l.licenseId }).first();
        expect(row.token_hash).toBe(sha256Hex(l.token));
        // The key as issued still authenticates.
        expect(await resolveLicenseToken(db, l.token)).toMatchObject({ licenseId: l.licenseId });
      }
      // One key now; the first trial keeps it, the later one keeps its trial apart.
      const key = normalizeOrganization('Acme');
      expect((await db('licenses').where({ id: first.licenseId }).first()).organization_key).toBe(key);
      expect((await db('licenses').where({ id: second.licenseId }).first()).organization_key).toBe(
        `${key}#${second.licenseId}`,
      );
      expect((await db('licenses').where({ id: paid.licenseId }).first()).organization_key).toBe(key);
      expect((await db('checkouts').where({ id: second.checkoutId }).first()).organization_key).toBe(key);
      // So "Acme" finds the trial it already had.
      expect(await db('licenses').where({ organization_key: key, tier: 'TRIAL' })).toHaveLength(1);
      // Checkouts made before have no secret: nothing opens them.
      expect(
        await db('checkouts').whereIn('id', [first.checkoutId, paid.checkoutId]).pluck('client_secret_hash'),
      ).toEqual([null, null]);

      await db.migrate.rollback(through(true));
      expect(await columns(db, 'licenses')).toContain('token');
      expect(await columns(db, 'licenses')).not.toContain('token_hash');
      expect(await columns(db, 'checkouts')).not.toContain('client_secret_hash');
      expect(await columns(db, 'payment_gate_requests')).not.toContain('client_secret_hash');
      // The tokens do not come back; the previous rule's keys do.
      expect(await db('licenses').whereNotNull('token')).toHaveLength(0);
      expect((await db('licenses').where({ id: first.licenseId }).first()).organization_key).toBe('theacme');
      expect((await db('licenses').where({ id: paid.licenseId }).first()).organization_key).toBe(
        'acmegmbhcokg',
      );

      await db.migrate.latest(through(true));
      for (const l of [first, second, paid]) {
        const row = await db('licenses').where({ id: l.licenseId }).first();
        expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
        expect(row.token_hash).not.toBe(sha256Hex(l.token));
        expect(await resolveLicenseToken(db, l.token)).toBeNull();
      }
    } finally {
      await db.destroy();
    }
  });
});
