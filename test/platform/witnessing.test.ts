// The log's witnessing loop against witness processes on loopback, real Postgres and Redis: each new
// checkpoint goes to every witness with a consistency proof from the size it last cosigned (learned
// from a 409 when the log did not know it), the cosignatures land in checkpoint_cosignatures and on
// the served checkpoint; a witness that is down, hangs or refuses never holds up the log or the other
// witnesses, is retried with a growing wait, and catches up from its last size once it is back.
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../shared/platform/db/knex';
import type { Db } from '../../shared/platform/db/knex';
import { createRedis } from '../../shared/platform/redis';
import type { RedisClient } from '../../shared/platform/redis';
import { parseCheckpoint } from '../../shared/platform/translog/checkpoint';
import { formatVkey } from '../../shared/platform/translog/note';
import { checkCheckpoint, parsePolicy } from '../../shared/platform/translog/policy';
import { formatAddCheckpoint } from '../../shared/platform/translog/witness';
import { cosignatureLines, withCosignatures } from '../../shared/platform/translog/pg-checkpoints';
import { treeHead } from '../../shared/platform/translog/pg-log';
import {
  appendEntries,
  logHead,
  logNoteSigner,
  servedCheckpoint,
} from '../../shared/platform/translog/service-log';
import {
  Witnessing,
  pgCheckpointLog,
  witnessPolicy,
  witnessSettingIssues,
} from '../../shared/platform/translog/witnessing';
import type { CheckpointLog } from '../../shared/platform/translog/witnessing';
import { eventually } from '../helpers';
import { TestMemoryLog, TestPgLog, logSigner, startWitness } from './fixtures/witnesses';
import type { WitnessProcess } from './fixtures/witnesses';

let db: Db;
let redis: RedisClient;
const dirs: string[] = [];
const stops: Array<() => Promise<unknown>> = [];

/** The checkpoint as the log serves it: with the cosignatures stored for its size. */
const cosignedCheckpoint = async (note: string) =>
  withCosignatures(note, await cosignatureLines(db, parseCheckpoint(note).size));

beforeAll(() => {
  db = createDb();
  redis = createRedis('api');
});
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  await db('checkpoint_cosignatures').delete();
  await db('witness_progress').delete();
  await db('translog_nodes').delete();
  await db('translog_leaves').delete();
});
afterAll(async () => {
  redis.disconnect();
  await db.destroy();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'px-witnessing-'));
  dirs.push(d);
  return d;
};

async function witness(
  name: string,
  logVkey: string,
  dir = tempDir(),
  port?: number,
): Promise<WitnessProcess> {
  const w = await startWitness({ name: `witness.test/${name}`, dir, logs: [logVkey], port });
  stops.push(() => w.stop('SIGKILL'));
  return w;
}

/** A server that takes requests and never answers: a witness that hangs. `sockets`: those a request came on. */
async function hangingServer(): Promise<{ url: string; sockets: net.Socket[] }> {
  const sockets: net.Socket[] = [];
  const all: net.Socket[] = [];
  const server = net.createServer((s) => {
    all.push(s);
    s.once('data', () => sockets.push(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  stops.push(async () => {
    for (const s of all) s.destroy();
    await new Promise((r) => server.close(r));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sockets };
}

function loop(
  policyText: string,
  log: CheckpointLog,
  opts: Partial<{ pollMs: number; timeoutMs: number }> = {},
) {
  const w = new Witnessing(db, redis, parsePolicy(policyText), log, {
    pollMs: opts.pollMs ?? 50,
    timeoutMs: opts.timeoutMs ?? 3_000,
    retryMaxMs: 300,
    lockPrefix: process.env.QUEUE_PREFIX!,
  });
  stops.push(() => w.stop());
  return w;
}

const cosignedSizes = async (name: string) =>
  (
    await db('checkpoint_cosignatures').where({ witness_name: name }).orderBy('tree_size').pluck('tree_size')
  ).map(Number);
/** The witness's `cosigned` lines, once it has logged `n` of them. */
const cosignedLines = async (w: WitnessProcess, n: number) =>
  (await w.logged('cosigned', n)).map((l) => [l.oldSize, l.size]);

describe('the witnessing loop', () => {
  it('sends each new checkpoint with a proof from the size each witness last cosigned; the served checkpoint carries their cosignatures', async () => {
    const log = new TestPgLog(db, logSigner('log.test/service'));
    const [w1, w2] = [await witness('w1', log.signer.vkey), await witness('w2', log.signer.vkey)];
    const policy = `log ${log.signer.vkey}
witness w1 ${w1.vkey} ${w1.url}
witness w2 ${w2.vkey} ${w2.url}
group both all w1 w2
quorum both
`;
    const witnessing = loop(policy, log);
    await log.append(3);
    await log.checkpoint();
    expect(Object.fromEntries(await witnessing.runOnce())).toEqual({
      w1: { outcome: 'cosigned', oldSize: 0, size: 3 },
      w2: { outcome: 'cosigned', oldSize: 0, size: 3 },
    });
    await log.append(2);
    const latest = await log.checkpoint();
    expect(Object.fromEntries(await witnessing.runOnce())).toEqual({
      w1: { outcome: 'cosigned', oldSize: 3, size: 5 },
      w2: { outcome: 'cosigned', oldSize: 3, size: 5 },
    });
    // Nothing new: nobody is asked again.
    expect([...(await witnessing.runOnce()).values()].map((o) => o.outcome)).toEqual(['current', 'current']);
    expect(await cosignedLines(w1, 2)).toEqual([
      [0, 3],
      [3, 5],
    ]);

    const served = parseCheckpoint(await cosignedCheckpoint(latest.note));
    const verdict = checkCheckpoint(parsePolicy(policy), served);
    expect(verdict.ok, verdict.reason).toBe(true);
    expect([...verdict.cosigned.keys()].sort()).toEqual(['w1', 'w2']);
    expect(await cosignedSizes('w1')).toEqual([3, 5]);
    const rows = await db('witness_progress').orderBy('witness_name');
    expect(
      rows.map((r: { cosigned_size: string; failures: number }) => [Number(r.cosigned_size), r.failures]),
    ).toEqual([
      [5, 0],
      [5, 0],
    ]);
  });

  it('cosigns the service log itself by default: its checkpoints, served at /log/checkpoint with the cosignature', async () => {
    const own = logNoteSigner();
    const w1 = await witness('w1', own.vkey);
    const policy = `log ${own.vkey}\nwitness w1 ${w1.vkey} ${w1.url}\nquorum w1\n`;
    const witnessing = loop(policy, pgCheckpointLog);
    for (let i = 0; i < 2; i++)
      await db.transaction((trx) =>
        appendEntries(trx, [{ key: `witnessing-own-${i}`, entry: Buffer.from(`own entry ${i}`) }]),
      );
    expect(Object.fromEntries(await witnessing.runOnce())).toEqual({
      w1: { outcome: 'cosigned', oldSize: 0, size: 2 },
    });
    const served = parseCheckpoint((await servedCheckpoint(db))!);
    const verdict = checkCheckpoint(parsePolicy(policy), served);
    expect(verdict.ok, verdict.reason).toBe(true);
    expect([...verdict.cosigned.keys()]).toEqual(['w1']);
    // GET log/head reads the same checkpoint, cosignature included, and the latest tree head, in one
    // statement.
    const head = await logHead(db);
    expect(head.checkpoint).toBe(await servedCheckpoint(db));
    expect(head.head).toEqual(await treeHead(db));
    expect(head.head?.treeSize).toBe(2);
    await db('checkpoints').delete();
    await db('tree_heads').delete();
  });

  it('learns where a witness stands from its 409, and goes on from there', async () => {
    const log = new TestPgLog(db, logSigner('log.test/service'));
    const w1 = await witness('w1', log.signer.vkey);
    await log.append(4);
    const earlier = await log.checkpoint();
    // The witness cosigned size 4 through someone else: the log has no record of it.
    expect((await w1.addCheckpoint(formatAddCheckpoint(0, [], earlier.note))).status).toBe(200);
    await log.append(2);
    await log.checkpoint();
    const witnessing = loop(`witness w1 ${w1.vkey} ${w1.url}\nquorum w1\n`, log);
    expect((await witnessing.runOnce()).get('w1')).toEqual({ outcome: 'cosigned', oldSize: 4, size: 6 });
    expect((await w1.logged('refused a checkpoint of a known log', 1)).map((l) => l.status)).toEqual([409]);
    expect(await cosignedLines(w1, 2)).toEqual([
      [0, 4],
      [4, 6],
    ]);
  });

  it('keeps publishing while a witness is down and another hangs; the one that comes back catches up from its last size', async () => {
    const log = new TestPgLog(db, logSigner('log.test/service'));
    const w1 = await witness('w1', log.signer.vkey);
    const w2Dir = tempDir();
    let w2 = await witness('w2', log.signer.vkey, w2Dir);
    const hang = await hangingServer();
    const policy = `log ${log.signer.vkey}
witness w1 ${w1.vkey} ${w1.url}
witness w2 ${w2.vkey} ${w2.url}
witness hang ${(await witness('hang', log.signer.vkey)).vkey} ${hang.url}
group two 2 w1 w2 hang
quorum two
`;
    const witnessing = loop(policy, log, { timeoutMs: 20_000 });
    witnessing.start();
    await log.append(2);
    await log.checkpoint();
    await eventually(
      async () => (await cosignedSizes('w1')).includes(2) && (await cosignedSizes('w2')).includes(2),
    );
    await eventually(async () => hang.sockets.length > 0);

    await w2.stop('SIGKILL'); // down
    for (let i = 0; i < 8; i++) {
      const started = Date.now();
      await log.append(1);
      await log.checkpoint();
      expect(Date.now() - started, 'an append and its checkpoint wait for no witness').toBeLessThan(2_000);
    }
    // w1 went on cosigning while w2 was down and the hanging witness still held its first request.
    await eventually(async () => (await cosignedSizes('w1')).includes(10));
    expect(hang.sockets.filter((s) => !s.destroyed)).toHaveLength(1);
    const down = await eventually(async () => {
      const row = (await db('witness_progress').where({ witness_name: 'w2' }).first()) as
        { failures: number; last_error: string; cosigned_size: string } | undefined;
      return row && row.failures >= 2 ? row : undefined;
    });
    expect(down.last_error).toMatch(/^unreachable/);
    expect(Number(down.cosigned_size)).toBe(2);

    w2 = await witness('w2', log.signer.vkey, w2Dir, w2.port); // back, with its state
    await eventually(async () => (await cosignedSizes('w2')).includes(10));
    expect(await cosignedLines(w2, 1)).toEqual([[2, 10]]);
    const served = parseCheckpoint(await cosignedCheckpoint(log.latest!.note));
    const verdict = checkCheckpoint(parsePolicy(policy), served);
    expect(verdict.ok, verdict.reason).toBe(true);
    expect([...verdict.cosigned.keys()].sort()).toEqual(['w1', 'w2']);

    // Stopping abandons the request the hanging witness holds, at once.
    const stopping = Date.now();
    await witnessing.stop();
    expect(Date.now() - stopping).toBeLessThan(2_000);
  });

  it('lets one process at a time speak to a witness', async () => {
    const log = new TestPgLog(db, logSigner('log.test/service'));
    await log.append(1);
    await log.checkpoint();
    const hang = await hangingServer();
    const vkey = (await witness('hang', log.signer.vkey)).vkey;
    const policy = `witness hang ${vkey} ${hang.url}\nquorum hang\n`;
    const [a, b] = [loop(policy, log, { timeoutMs: 20_000 }), loop(policy, log, { timeoutMs: 300 })];
    const first = a.runOnce();
    await eventually(async () => hang.sockets.length > 0);
    expect((await b.runOnce()).get('hang')).toEqual({ outcome: 'locked' });
    await a.stop();
    expect((await first).get('hang')).toEqual({ outcome: 'failed', reason: 'stopped' });
    // Released: the other process asks now (and this witness still does not answer).
    expect((await b.runOnce()).get('hang')).toMatchObject({
      outcome: 'failed',
      reason: expect.stringMatching(/^unreachable/),
    });
    expect(hang.sockets).toHaveLength(2);
  });

  it('stores nothing when a witness refuses a fork (422) or answers with a cosignature not of its key, and waits before asking again', async () => {
    const log = new TestPgLog(db, logSigner('log.test/service'));
    const w1 = await witness('w1', log.signer.vkey);
    const witnessing = loop(`witness w1 ${w1.vkey} ${w1.url}\nquorum w1\n`, log);
    await log.append(4);
    await log.checkpoint();
    expect((await witnessing.runOnce()).get('w1')).toMatchObject({ outcome: 'cosigned', size: 4 });

    // The log signs a tree of 5 that does not extend its tree of 4.
    const fork = new TestMemoryLog(log.signer, 'fork').append(5);
    log.latest = { note: fork.checkpoint(), size: 5 };
    await log.append(1);
    expect((await witnessing.runOnce()).get('w1')).toMatchObject({
      outcome: 'failed',
      reason: expect.stringMatching(/^422/),
    });
    expect(await cosignedSizes('w1')).toEqual([4]);
    expect((await witnessing.runOnce()).get('w1')).toEqual({ outcome: 'not_due' });

    // A "witness" whose 200 holds another key's cosignature.
    const other = logSigner('witness.test/w1');
    const liar = http.createServer((_req, res) => res.end(other.signLine('anything\n')));
    await new Promise<void>((r) => liar.listen(0, '127.0.0.1', r));
    stops.push(() => new Promise((r) => liar.close(r)));
    const lying = loop(
      `witness liar ${w1.vkey} http://127.0.0.1:${(liar.address() as AddressInfo).port}\nquorum liar\n`,
      log,
    );
    expect((await lying.runOnce()).get('liar')).toMatchObject({
      outcome: 'failed',
      reason: 'a 200 without a valid cosignature of its key',
    });
    expect(await cosignedSizes('liar')).toEqual([]);
  });
});

describe('LOG_WITNESSES', () => {
  it('is a tlog-policy text or the path of a file holding one; anything else stops the worker at start', () => {
    const text = `# the log's witnesses\nwitness w1 ${witnessVkey()} https://w1.example/witness\nquorum w1\n`;
    expect(witnessPolicy(text)?.policy.witnesses.get('w1')?.url).toBe('https://w1.example/witness');
    const file = join(tempDir(), 'policy.txt');
    writeFileSync(file, text);
    expect(witnessPolicy(file)?.text).toBe(text);
    expect(witnessPolicy(undefined)).toBeUndefined();
    expect(witnessSettingIssues({ LOG_WITNESSES: text })).toEqual([]);
    expect(witnessSettingIssues({ LOG_WITNESSES: '/no/such/policy' })[0]).toMatch(
      /^LOG_WITNESSES: not a policy/,
    );
    expect(witnessSettingIssues({ LOG_WITNESSES: 'witness w1 nonsense\nquorum w1' })[0]).toMatch(
      /^LOG_WITNESSES: /,
    );
    expect(
      witnessSettingIssues({ LOG_WITNESSES: `witness w1 ${witnessVkey()} ftp://w1.example\nquorum w1` })[0],
    ).toMatch(/http or https/);
  });

  it('stops the worker at start with one line naming it when wrong', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'workers/main.ts'], {
      env: { ...process.env, VITEST: '', LOG_WITNESSES: 'witness w1 not-a-vkey\nquorum w1\n' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.status).toBe(78);
    expect(run.stderr.trim().split('\n').slice(1)).toEqual([expect.stringMatching(/^\s*LOG_WITNESSES: /)]);
  });
});

function witnessVkey(): string {
  // A cosigner vkey (type 0x04) needs no process: any 32 bytes make one.
  const raw = Buffer.alloc(32, 9);
  return formatVkey('witness.test/w1', 0x04, raw);
}
