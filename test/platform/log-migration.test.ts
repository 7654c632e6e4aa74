// The migration that gives leaves their entry bytes: a leaf logged before it (whose hash is of the
// canonical signed package without its log proof) gets that package's bytes as its entry when they
// hash to the stored leaf, fit 65535 bytes and belong to a public package (workflow, governance,
// auction); any other leaf keeps a null entry. Down drops the column and the tables, up again restores.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../shared/platform/canonical';
import { createDb } from '../../shared/platform/db/knex';
import { migrateBack, migrateNext, migrateUpTo } from '../../shared/platform/db/migrate';
import { leafHash } from '../../shared/platform/translog/merkle';

const MIGRATION = '20261125100100_log_checkpoints.ts';
const base = new URL(process.env.DATABASE_URL!);
const name = `${base.pathname.slice(1)}_logmig`;
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

afterAll(() => admin(`drop database if exists "${name}" with (force)`));

/** A stored package as the previous release wrote it: signed members, then its log proof. */
const stored = (proofId: string, extra: Record<string, unknown> = {}) => ({
  version: 1,
  kind: 'workflow',
  proofId,
  issuedAt: '2026-11-20T10:00:00.000Z',
  ...extra,
  log: { inclusion: { leafIndex: 0 }, treeHead: { treeSize: 1 } },
});
const leafOf = (pkg: Record<string, unknown>) => {
  const { log: _l, ...signed } = pkg;
  return leafHash(Buffer.from(canonicalJson(signed)));
};

describe('the log entries migration', () => {
  it('back-fills the entries of public packages that hash to their leaf and fit, and only those', async () => {
    await admin(`create database "${name}"`);
    const db = createDb(dbUrl.toString(), { poolMax: 2 });
    try {
      await migrateUpTo(db, MIGRATION);
      const workflow = async (id: string, pkg: Record<string, unknown>) => {
        await db('workflows').insert({
          id,
          proof_id: pkg.proofId,
          template: 'Vendor Onboarding',
          template_version: 1,
          owner: 'operator',
          chain_head: '0'.repeat(64),
          status: 'completed',
        });
        await db('proof_packages').insert({
          id: pkg.proofId,
          workflow_id: id,
          status: 'logged',
          package: JSON.stringify(pkg),
        });
      };
      const p0 = stored('prf_0', { stages: [{ key: 'a', at: 1 }], note: 'ü' });
      const p1 = { ...stored('prf_1'), kind: 'auction' };
      const p3 = stored('prf_3');
      const p4 = stored('prf_4', { pad: 'x'.repeat(70_000) });
      await workflow('wf_0', p0);
      await db('auctions').insert({
        id: 'auc_1',
        title: 't',
        pricing: 'first',
        asset: 'USDC',
        unrevealed_deposit: '0',
        created_at_iso: '2026-11-20T00:00:00.000Z',
        bidding_ends_at: '2026-11-20T01:00:00.000Z',
        reveal_ends_at: '2026-11-20T02:00:00.000Z',
        status: 'finalized',
        proof_id: 'prf_1',
        package: JSON.stringify(p1),
        owner: 'operator',
      });
      await workflow('wf_3', p3);
      await workflow('wf_4', p4);
      await db('translog_leaves').insert([
        { leaf_index: 0, leaf_hash: leafOf(p0), proof_id: 'prf_0' },
        { leaf_index: 1, leaf_hash: leafOf(p1), proof_id: 'prf_1' },
        // No package (a treasury request's, say: owner-only, so never joined).
        { leaf_index: 2, leaf_hash: leafOf(stored('prf_2')), proof_id: 'prf_2' },
        // The stored package no longer hashes to its leaf.
        { leaf_index: 3, leaf_hash: leafOf(stored('prf_3', { changed: true })), proof_id: 'prf_3' },
        // Over an entry bundle's 65535 bytes.
        { leaf_index: 4, leaf_hash: leafOf(p4), proof_id: 'prf_4' },
      ]);

      await migrateNext(db);
      const entries = (await db('translog_leaves')
        .orderBy('leaf_index')
        .pluck('entry')) as Array<Buffer | null>;
      const bytes = (p: Record<string, unknown>) => {
        const { log: _l, ...signed } = p;
        return Buffer.from(canonicalJson(signed));
      };
      expect(entries[0]?.equals(bytes(p0))).toBe(true);
      expect(entries[1]?.equals(bytes(p1))).toBe(true);
      expect(entries.slice(2)).toEqual([null, null, null]);
      expect(await db('checkpoints').count({ n: '*' })).toEqual([{ n: '0' }]);

      await migrateBack(db);
      expect(await db.schema.hasColumn('translog_leaves', 'entry')).toBe(false);
      expect(await db.schema.hasTable('checkpoints')).toBe(false);
      expect(await db.schema.hasTable('translog_queue')).toBe(false);
      await migrateNext(db);
      expect(await db.schema.hasTable('checkpoint_cosignatures')).toBe(true);
    } finally {
      await db.destroy();
    }
  });
});
