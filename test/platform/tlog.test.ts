// The standard log in Postgres: batched appends agree with the in-memory model; the sequencer logs
// each queued entry once, in batches with one checkpoint each, and a batch that fails leaves the
// queue as it was; the checkpoint is served as a C2SP signed note with the witnesses' cosignatures;
// tiles are served as tlog-tiles asks (full tiles immutable, partial ones only at checkpointed sizes,
// anything else 404) and rebuild the checkpoint's root; entry bundles hash to the level-0 tiles; and
// a workflow's closed stages and a log without entries for old leaves behave as documented.
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../shared/platform/crypto';
import {
  cosigner,
  cosignatureTime,
  logSigned,
  parseCheckpoint,
} from '../../shared/platform/translog/checkpoint';
import { entryFor, leafKey, logEntryBytes, parseLogEntry } from '../../shared/platform/translog/entry';
import { MemoryLog } from '../../shared/platform/translog/memory-log';
import { leafHash, rootHash, toHex } from '../../shared/platform/translog/merkle';
import { parseVkey } from '../../shared/platform/translog/note';
import { checkCheckpoint, parsePolicy } from '../../shared/platform/translog/policy';
import { inclusionProofAt, logSize } from '../../shared/platform/translog/pg-log';
import {
  checkpointCurrent,
  enqueueEntries,
  integrateAll,
  integrateQueued,
} from '../../shared/platform/translog/sequencer';
import { appendEntries } from '../../shared/platform/translog/service-log';
import { decodeEntryBundle, tileWidth } from '../../shared/platform/translog/tiles';
import { stageRecordEntry } from '../../shared/workflows/records';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { drive, prepare } from '../workflows/e2e/helpers';

let app: TestApp;
const model = new MemoryLog();

beforeAll(async () => {
  app = testApp();
});
afterAll(() => app.close());

const db = () => app.deps.db;
const entry = (i: number) =>
  logEntryBytes('trust_root', `test-${i}`, toHex(leafHash(Buffer.from(String(i)))));
const count = async (table: string) => Number((await db()(table).count({ n: '*' }))[0]!.n);

/** Appends entries as the service does (one transaction, one checkpoint), and to the model. */
async function append(from: number, n: number) {
  const leaves = Array.from({ length: n }, (_, i) => ({ key: `test:${from + i}`, entry: entry(from + i) }));
  const out = await db().transaction((trx) => appendEntries(trx, leaves));
  for (const l of leaves) model.append(l.entry);
  return out;
}

const binary = (res: { body: unknown }) => res.body as Buffer;
const getBinary = (path: string) =>
  app.request
    .get(path)
    .buffer(true)
    .parse((res, done) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done(null, Buffer.concat(chunks)));
    });

describe('appends', () => {
  it('signs the empty log once, then appends batches whose roots and proofs match the in-memory log', async () => {
    expect(await checkpointCurrent(db())).toBe(0);
    expect(await count('checkpoints')).toBe(1);
    // Batches that cross tile and subtree edges: 1, 254 (to 255), 2 (past 256), 300, 3.
    let from = 0;
    for (const n of [1, 254, 2, 300, 3]) {
      const out = await append(from, n);
      from += n;
      expect(out.start).toBe(from - n);
      expect(out.treeSize).toBe(model.size);
      expect(out.root.equals(model.root())).toBe(true);
      // One checkpoint per append, signed by the log key, for exactly this size and root.
      const cp = parseCheckpoint(out.checkpoint);
      expect(cp).toMatchObject({ size: model.size });
      expect(cp.root.equals(model.root())).toBe(true);
    }
    expect(await count('checkpoints')).toBe(6);
    for (const index of [0, 255, 256, 311, model.size - 1]) {
      const p = await inclusionProofAt(db(), index, model.size);
      expect(p.path).toEqual(model.inclusionProof(index).map(toHex));
    }
    const leaves = await db()('translog_leaves').orderBy('leaf_index').select('leaf_index', 'entry');
    expect(leaves.map((l: { entry: Buffer }) => l.entry.equals(entry(leaves.indexOf(l))))).not.toContain(
      false,
    );
  });

  it('refuses an entry over 65535 bytes, and writes nothing', async () => {
    const before = await logSize(db());
    await expect(
      db().transaction((trx) => appendEntries(trx, [{ key: 'big', entry: Buffer.alloc(65536) }])),
    ).rejects.toThrow(/65535/);
    expect(await logSize(db())).toBe(before);
    expect(await count('checkpoints')).toBe(6);
  });
});

describe('the sequencer', () => {
  it('logs each queued entry once, one checkpoint a batch, and drops a key already logged', async () => {
    const before = model.size;
    const checkpoints = await count('checkpoints');
    const queued = Array.from({ length: 250 }, (_, i) => ({ key: `seq:${i}`, entry: entry(10_000 + i) }));
    await enqueueEntries(db(), queued);
    await enqueueEntries(db(), queued.slice(0, 10)); // queued twice: kept once
    await enqueueEntries(db(), [{ key: 'test:3', entry: entry(3) }]); // already a leaf
    expect(await count('translog_queue')).toBe(251);

    const first = await integrateQueued(db(), 100);
    expect(first).toMatchObject({ appended: 100, dropped: 0, treeSize: before + 100 });
    expect(await integrateAll(db(), 100)).toBe(150);
    for (const q of queued) model.append(q.entry);
    expect(await count('translog_queue')).toBe(0);
    expect(await logSize(db())).toBe(model.size);
    // Three batches of appends (100, 100, 50 with the dropped key): three checkpoints.
    expect(await count('checkpoints')).toBe(checkpoints + 3);
    const keys = await db()('translog_leaves').where('proof_id', 'like', 'seq:%').count({ n: '*' });
    expect(Number(keys[0]!.n)).toBe(250);
    expect(await db()('translog_leaves').where('proof_id', 'test:3')).toHaveLength(1);
    // Nothing queued: nothing locked, nothing signed.
    expect(await integrateQueued(db())).toMatchObject({ appended: 0, dropped: 0 });
    expect(await count('checkpoints')).toBe(checkpoints + 3);
  });

  it('leaves the queue as it was when a batch fails, and logs it once when run again (twice at once)', async () => {
    const before = await logSize(db());
    const checkpoints = await count('checkpoints');
    const queued = Array.from({ length: 40 }, (_, i) => ({ key: `crash:${i}`, entry: entry(20_000 + i) }));
    await enqueueEntries(db(), queued);
    // The batch's last write fails, after its leaves and nodes were written.
    await db().raw(`
      create function px_fail_checkpoint() returns trigger language plpgsql as $$
      begin raise exception 'simulated crash'; end $$;
      create trigger px_fail_checkpoint before insert on checkpoints
        for each row execute function px_fail_checkpoint();`);
    try {
      await expect(integrateQueued(db())).rejects.toThrow(/simulated crash/);
    } finally {
      await db().raw('drop trigger px_fail_checkpoint on checkpoints; drop function px_fail_checkpoint()');
    }
    expect(await logSize(db())).toBe(before);
    expect(await count('translog_queue')).toBe(40);
    expect(await count('checkpoints')).toBe(checkpoints);

    const runs = await Promise.all([integrateAll(db(), 25), integrateAll(db(), 25)]);
    expect(runs[0]! + runs[1]!).toBe(40);
    for (const q of queued) model.append(q.entry);
    const indexes = (await db()('translog_leaves').orderBy('leaf_index').pluck('leaf_index')).map(Number);
    expect(indexes).toEqual(indexes.map((_, i) => i));
    expect(indexes).toHaveLength(model.size);
    expect(await count('translog_queue')).toBe(0);
  });
});

describe('the checkpoint', () => {
  const witness = (() => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
    return cosigner('witness.test/w1', raw, privateKey);
  })();

  it('is served as text with its cosignatures, signed by the key GET /api/proof-workflows/log names', async () => {
    const log = (await app.request.get('/api/proof-workflows/log').expect(200)).body;
    const vkey = parseVkey(log.vkey);
    expect(vkey.name).toBe(log.origin);
    expect(log.origin).toMatch(/\/log$/);
    expect(log.tiles).toMatch(/\/log\/$/);
    expect(log.treeSize).toBe(model.size);
    const policy = parsePolicy(log.policy);
    expect(policy.logs[0]!.key.keyId).toBe(vkey.keyId);

    const latest = (await db()('checkpoints').orderBy('tree_size', 'desc').first()) as { tree_size: string };
    const text = parseCheckpoint(
      (await db()('checkpoints').where('tree_size', latest.tree_size).first()).note,
    ).text;
    await db()('checkpoint_cosignatures').insert([
      {
        tree_size: latest.tree_size,
        witness_name: witness.name,
        line: witness.cosignLine(text, 1_767_225_600),
      },
      // A row that could not sit in a note is left out, not served.
      { tree_size: latest.tree_size, witness_name: 'junk', line: 'not a signature line' },
    ]);

    const res = await app.request.get('/log/checkpoint').expect(200);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.headers['cache-control']).toBe('public, max-age=5');
    const cp = parseCheckpoint(res.text);
    expect(cp.size).toBe(model.size);
    expect(cp.root.equals(model.root())).toBe(true);
    expect(logSigned(cp, vkey)).toBe(true);
    expect(cp.note.signatures).toHaveLength(2);
    expect(cosignatureTime(cp, parseVkey(witness.vkey))).toBe(1_767_225_600);
    const quorum = parsePolicy(`log ${log.vkey}\nwitness w1 ${witness.vkey}\nquorum w1\n`);
    expect(checkCheckpoint(quorum, cp).ok).toBe(true);

    // The JSON head carries the same checkpoint beside its tree head.
    const head = (await app.request.get('/api/proof-workflows/log/head').expect(200)).body;
    expect(head.checkpoint).toBe(res.text);
    expect(head.treeHead.treeSize).toBe(model.size);
  });
});

describe('tiles (c2sp.org/tlog-tiles)', () => {
  const tile = (path: string) => getBinary(`/log/${path}`);

  it('serves full tiles immutable, and they and the partial edge rebuild the checkpoint root', async () => {
    const size = model.size;
    expect(size).toBeGreaterThan(512);
    const full = await tile('tile/0/000').expect(200);
    expect(full.headers['content-type']).toBe('application/octet-stream');
    expect(full.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(binary(full)).toHaveLength(8192);

    const leafHashes: Buffer[] = [];
    const fullTiles = Math.floor(size / 256);
    for (let n = 0; n < fullTiles; n++) {
      const body = binary(await tile(`tile/0/${String(n).padStart(3, '0')}`).expect(200));
      for (let i = 0; i < 256; i++) leafHashes.push(body.subarray(i * 32, (i + 1) * 32));
    }
    const w = size % 256;
    const edge = await tile(`tile/0/${String(fullTiles).padStart(3, '0')}.p/${w}`).expect(200);
    expect(edge.headers['cache-control']).toBe('public, max-age=60');
    for (let i = 0; i < w; i++) leafHashes.push(binary(edge).subarray(i * 32, (i + 1) * 32));
    expect(rootHash(leafHashes, size).equals(model.root())).toBe(true);

    // Level 1: each hash is a full level-0 tile's root.
    const w1 = tileWidth(size, 1, 0);
    const level1 = binary(await tile(`tile/1/000.p/${w1}`).expect(200));
    expect(level1).toHaveLength(32 * w1);
    expect(level1.subarray(0, 32).equals(rootHash(leafHashes.slice(0, 256), 256))).toBe(true);
  });

  it('serves a partial tile only at a width some checkpoint’s size calls for', async () => {
    const sizes = (await db()('checkpoints').pluck('tree_size')).map(Number);
    // Size 1 was checkpointed (the first append), size 2 never was.
    expect(sizes).toContain(1);
    expect(sizes).not.toContain(2);
    await tile('tile/0/000.p/1').expect(200);
    const res = await tile('tile/0/000.p/2').expect(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    await tile('tile/entries/000.p/1').expect(200);
    await tile('tile/entries/000.p/2').expect(404);
  });

  it('answers 404 for tiles the tree does not have and paths that are not tiles', async () => {
    const beyond = String(Math.floor(model.size / 256) + 1).padStart(3, '0');
    for (const path of [
      `tile/0/${beyond}`,
      `tile/entries/${beyond}`,
      'tile/1/000', // a full level-1 tile needs 65536 leaves
      'tile/2/000.p/1',
      'tile/0/1', // not three digits
      'tile/0/x000/001', // a second spelling of 1
      'tile/0/000.p/0',
      'tile/0/000.p/256',
      'tile/0/000.p/007x',
      'tile/64/000',
      'tile/abc/000',
      'tile/0',
      'tile/0/000/extra',
      `tile/0/${'x001/'.repeat(40)}001`,
    ]) {
      const res = await tile(path);
      expect(res.status, path).toBe(404);
      expect(res.headers['content-type'], path).toMatch(/^application\/problem\+json/);
    }
  });

  it('serves entry bundles whose entries hash to the level-0 tile, byte for byte the stored entries', async () => {
    const bundle = decodeEntryBundle(binary(await tile('tile/entries/001').expect(200)));
    const hashes = binary(await tile('tile/0/001').expect(200));
    expect(bundle).toHaveLength(256);
    bundle.forEach((e, i) => {
      expect(leafHash(e).equals(hashes.subarray(i * 32, (i + 1) * 32))).toBe(true);
      expect(e.equals(entry(256 + i))).toBe(true);
    });
  });

  it('answers entries_unavailable for a bundle holding a leaf whose entry the log does not hold', async () => {
    await db()('translog_leaves').where('leaf_index', 5).update({ entry: null });
    try {
      const res = await tile('tile/entries/000').expect(404);
      expect(JSON.parse(res.body.toString()).code).toBe('entries_unavailable');
      await tile('tile/0/000').expect(200); // the hashes are still there
    } finally {
      await db()('translog_leaves')
        .where('leaf_index', 5)
        .update({ entry: entry(5) });
    }
  });
});

describe('what is published lands in the log', () => {
  it('queues each stage a workflow closes, once, as its stage record entry; the sequencer logs it', async () => {
    await integrateAll(db());
    const w = await prepare(app.request, 'Vendor Onboarding');
    await drive(app.request, w.workflowId, 'Vendor Onboarding');
    const state = (await app.request.get(`/api/proof-workflows/status?proofId=${w.proofId}`).expect(200))
      .body;
    const stages = state.workflow.stages as Array<{
      key: string;
      status: 'completed';
      timestamp: string;
      actorCommitment: string;
      proofHash: string;
    }>;
    expect(stages.every((s) => s.status === 'completed')).toBe(true);
    const expected = stages.map((s) => stageRecordEntry(w.proofId, { ...s, stage: s.key }));
    const queued = (await db()('translog_queue').orderBy('seq').select('key', 'entry')) as Array<{
      key: string;
      entry: Buffer;
    }>;
    expect(queued.map((q) => q.key)).toEqual(expected.map((e) => e.key));
    queued.forEach((q, i) => expect(q.entry.equals(expected[i]!.entry)).toBe(true));
    expect(parseLogEntry(queued[0]!.entry)).toMatchObject({
      kind: 'stage_record',
      id: `${w.proofId}/application`,
    });

    const before = await logSize(db());
    expect(await integrateAll(db())).toBe(stages.length);
    expect(await logSize(db())).toBe(before + stages.length);
    const key = leafKey('stage_record', `${w.proofId}/application`);
    const leaf = await db()('translog_leaves').where('proof_id', key).first();
    expect(leaf.entry.equals(expected[0]!.entry)).toBe(true);
    expect(await integrateAll(db())).toBe(0);
    // A document's entry is its kind, id and sha256, nothing else of it.
    expect(parseLogEntry(entryFor('receipt', 'r', { a: 1 }))).toEqual({
      type: 'proof-exchange/log-entry/v1',
      kind: 'receipt',
      id: 'r',
      sha256: sha256Hex('{"a":1}'),
    });
  });
});
