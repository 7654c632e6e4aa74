// Anonymous ballots against the strongest reader: whoever holds the whole database (every table and
// column, found through information_schema) and the service's logs still cannot join a ballot to a
// member; the published package is the same whatever order the ballots arrived in; stale roots are
// refused; and the command-line client votes against a real server as a voter would.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { createDb } from '../../shared/platform/db/knex';
import type { Ballot, BallotInfo, Identity } from '../../shared/governance/ballot-client';
import { reviewMessage } from '../../shared/governance/commitments';
import { ROOT_HISTORY } from '../../shared/governance/identities';
import type { AnonymousGovernancePackage } from '../../shared/governance/package';
import { terminateCurves } from '../../shared/zk';
import { TestClock } from '../clock';
import { eventually, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR, addIdentities, ballotInfo, captureLogs, makeBallotBody, wallet } from './helpers';

const execFileAsync = promisify(execFile);
const OPTIONS = ['yes-4b1d', 'no-90ce'];
const reviewer = wallet();
let logs: ReturnType<typeof captureLogs>;
let app: TestApp;
// The service's clock, the twin's too: the vote's window is moved past once the ballots are in.
const clock = new TestClock();
let twin: TestApp;
let twinDatabase: string;
const adminUrl = () => {
  const u = new URL(process.env.DATABASE_URL!);
  u.pathname = '/postgres';
  return u.toString();
};

async function admin(sql: string) {
  const c = new pg.Client({ connectionString: adminUrl() });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

async function room(t: TestApp, identities: number) {
  const roomId = (
    await t.request
      .post('/api/governance/rooms')
      .set('Authorization', OPERATOR)
      .send({ name: 'Assembly', members: [reviewer.address] })
      .expect(201)
  ).body.roomId as string;
  await t.request
    .post(`/api/governance/rooms/${roomId}/committees`)
    .set('Authorization', OPERATOR)
    .send({ slug: 'review', name: 'Review', members: [reviewer.address], threshold: 1 })
    .expect(201);
  return { roomId, identities: identities ? await addIdentities(t.request, roomId, identities) : [] };
}

async function proposal(t: TestApp, roomId: string, votingSeconds: number) {
  return (
    await t.request
      .post('/api/governance/proposals')
      .set('Authorization', OPERATOR)
      .send({ roomId, title: 'Budget', options: OPTIONS, reviewCommittee: 'review', votingSeconds })
      .expect(201)
  ).body.proposalId as string;
}

const open = (t: TestApp, proposalId: string) =>
  t.request
    .post(`/api/governance/proposals/${proposalId}/review`)
    .send({
      walletPublicKey: reviewer.address,
      decision: 'approve',
      signature: reviewer.sign(reviewMessage(proposalId, 'approve')),
    })
    .expect(200);

const cast = (t: TestApp, proposalId: string, b: Ballot) =>
  t.request.post(`/api/governance/proposals/${proposalId}/ballots`).send(b);

async function closedPackage(t: TestApp, proposalId: string) {
  await eventually(
    async () =>
      (await t.request.get(`/api/governance/proposals/${proposalId}`)).body.status === 'closed' || undefined,
    30_000,
    200,
  );
  return (await t.request.get(`/api/governance/proposals/${proposalId}/package`).expect(200))
    .body as AnonymousGovernancePackage;
}

/** Every row of every table of the public schema, each value as text (bytea as hex). */
async function dumpDatabase(t: TestApp): Promise<Map<string, { columns: string[]; rows: string[][] }>> {
  const columns = (await t.deps
    .db('information_schema.columns')
    .where('table_schema', 'public')
    .orderBy(['table_name', 'ordinal_position'])
    .select('table_name', 'column_name', 'data_type')) as Array<{
    table_name: string;
    column_name: string;
    data_type: string;
  }>;
  const tables = new Map<string, { columns: string[]; rows: string[][] }>();
  for (const c of columns) {
    const entry = tables.get(c.table_name) ?? { columns: [], rows: [] };
    entry.columns.push(c.column_name);
    tables.set(c.table_name, entry);
  }
  for (const [table, entry] of tables) {
    const rows = (await t.deps.db.raw(`select * from "${table}"`)).rows as Array<Record<string, unknown>>;
    entry.rows = rows.map((r) =>
      entry.columns.map((col) => {
        const v = r[col];
        if (Buffer.isBuffer(v)) return `${v.toString('hex')} ${v.toString('base64url')}`;
        return typeof v === 'string' ? v : JSON.stringify(v ?? null);
      }),
    );
  }
  return tables;
}

let identities: Identity[];
let proposalId: string;
let roomId: string;
let info: BallotInfo;
const ballots: Ballot[] = [];
const choices: string[] = [];

beforeAll(async () => {
  logs = captureLogs();
  app = testApp({ clock });
  ({ roomId, identities } = await room(app, 6));
  proposalId = await proposal(app, roomId, 15);
  info = await ballotInfo(app.request, proposalId);
  for (const [i, identity] of identities.entries()) {
    choices.push(OPTIONS[i % 2]!);
    ballots.push(await makeBallotBody(info, identity, choices[i]!));
  }
  await open(app, proposalId);
  // The same database twice, taken while the vote is open and before any ballot: the one proposal, the
  // one key, the one tree, so the two can take the same ballots in two orders.
  await app.close();
  const source = new URL(process.env.DATABASE_URL!).pathname.slice(1);
  twinDatabase = `${source}_twin`;
  await admin(`create database "${twinDatabase}" template "${source}"`);
  app = testApp({ clock });
  const twinUrl = new URL(process.env.DATABASE_URL!);
  twinUrl.pathname = `/${twinDatabase}`;
  twin = testApp({ db: createDb(twinUrl.toString(), { poolMax: 2 }), clock });
}, 240_000);

afterAll(async () => {
  logs.stop();
  await app.close();
  await twin?.close();
  if (twinDatabase) await admin(`drop database if exists "${twinDatabase}" with (force)`);
  await terminateCurves();
});

describe('anonymous ballots', () => {
  it('publishes the same ballots whatever order they were cast in', async () => {
    for (const b of ballots) await cast(app, proposalId, b).expect(201);
    for (const b of [...ballots].reverse()) await cast(twin, proposalId, b).expect(201);
    clock.advance(15_000);
    const [one, other] = [await closedPackage(app, proposalId), await closedPackage(twin, proposalId)];
    expect(one.ballots).toHaveLength(ballots.length);
    expect(one.ballots).toEqual(other.ballots);
    expect(one.ballotsRoot).toBe(other.ballotsRoot);
    expect(one.tally).toEqual(other.tally);
    expect(one.tally.counts).toEqual({ [OPTIONS[0]!]: 3, [OPTIONS[1]!]: 3 });
    // No time anywhere in a published ballot, and the order is the nullifiers', not the arrival's.
    expect(one.ballots.map((b) => b.nullifier)).toEqual(
      [...ballots.map((b) => b.nullifier)].sort((x, y) => (BigInt(x) < BigInt(y) ? -1 : 1)),
    );
    for (const b of one.ballots) expect(JSON.stringify(b)).not.toMatch(/\d{4}-\d\d-\d\dT/);
  });

  it('leaves nothing in the database or the logs that joins a ballot to a member', async () => {
    const dump = await dumpDatabase(app);
    const members = new Set([
      reviewer.address,
      ...identities.map((i) => i.commitment),
      ...((await app.deps.db('room_members').pluck('member_commitment')) as string[]),
    ]);
    const secrets = identities.map((i) => i.secret);
    const ballotValues = new Set(
      ballots.flatMap((b) => [b.nullifier, Buffer.from(b.ciphertext, 'base64url').toString('hex')]),
    );
    // The ballots table itself: no column a member table has (the proposal aside), no time, no id that
    // could order rows by arrival; its values appear in no member table.
    const ballotColumns = dump.get('ballots')!.columns;
    expect(ballotColumns.sort()).toEqual(['ciphertext', 'nullifier', 'proof', 'proposal_id', 'root']);
    const memberTables = [
      'room_members',
      'room_identities',
      'room_identity_claims',
      'committee_members',
      'proposal_reviews',
    ];
    for (const t of memberTables)
      expect(
        dump.get(t)!.columns.filter((c) => ballotColumns.includes(c) && c !== 'proposal_id'),
        t,
      ).toEqual([]);
    const types = (await app.deps
      .db('information_schema.columns')
      .where({ table_schema: 'public', table_name: 'ballots' })
      .pluck('data_type')) as string[];
    expect(types.filter((t) => /time|date|interval/.test(t))).toEqual([]);

    for (const [table, { rows }] of dump) {
      for (const row of rows) {
        const text = row.join('\n');
        for (const s of secrets) expect(text, `${table} holds an identity secret`).not.toContain(s);
        const hasBallot = [...ballotValues].some((v) => text.includes(v));
        if (!hasBallot) continue;
        // A row that holds a ballot value: the ballot itself, or the published package (after the close).
        expect(['ballots', 'proposals'], `${table} holds a ballot value`).toContain(table);
        if (table === 'ballots')
          for (const m of members) expect(text, `a ballot row holds ${m}`).not.toContain(m);
      }
    }
    // The package: ballots, and of the voters only counts and roots (the reviewer's commitment is in the
    // audit chain for the review it signed, which is no ballot).
    const pkg = JSON.stringify(
      (await app.request.get(`/api/governance/proposals/${proposalId}/package`)).body,
    );
    for (const m of [reviewer.address, ...identities.map((i) => i.commitment)]) expect(pkg).not.toContain(m);
    // The logs, at trace level: no identity, nullifier or ciphertext.
    const text = logs.lines.join('\n');
    for (const v of [...members, ...secrets, ...ballotValues, ...ballots.map((b) => b.ciphertext)])
      expect(text).not.toContain(v);
  });

  it('refuses a proof against a stale root, and writes nothing', async () => {
    const other = await room(app, 2);
    const id = await proposal(app, other.roomId, 60);
    const stale = await makeBallotBody(await ballotInfo(app.request, id), other.identities[0]!, OPTIONS[0]!);
    await open(app, id);
    for (let i = 0; i < ROOT_HISTORY; i++) await addIdentities(app.request, other.roomId, 1);
    const res = await cast(app, id, stale);
    expect([res.status, res.body.code]).toEqual([422, 'unknown_root']);
    // Proved again against the current tree, the same member votes.
    const fresh = await makeBallotBody(await ballotInfo(app.request, id), other.identities[0]!, OPTIONS[0]!);
    await cast(app, id, fresh).expect(201);
    expect(await app.deps.db('ballots').where('proposal_id', id)).toHaveLength(1);
  });

  it('votes through the command-line client against a real server', async () => {
    const server = http.createServer(createApp(app.deps)).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const dir = mkdtempSync(join(tmpdir(), 'px-ballot-'));
    const cli = (...args: string[]) =>
      execFileAsync(process.execPath, ['--import', 'tsx', 'cli/ballot.ts', ...args], {
        env: { ...process.env, LOG_LEVEL: 'silent' },
      });
    try {
      const idFile = join(dir, 'me.json');
      const made = await cli('identity', '--out', idFile);
      const commitment = /identity commitment[^:]*: (\d+)/.exec(made.stderr)![1]!;
      const other = await room(app, 0);
      await app.request
        .post(`/api/governance/rooms/${other.roomId}/identities`)
        .set('Authorization', OPERATOR)
        .send({ identityCommitments: [commitment] })
        .expect(200);
      const id = await proposal(app, other.roomId, 120);
      await open(app, id);
      const voted = await cli(
        'vote',
        '--url',
        url,
        '--proposal',
        id,
        '--identity',
        idFile,
        '--choice',
        OPTIONS[1]!,
      );
      const receipt = JSON.parse(voted.stdout) as { type: string; ballotDigest: string };
      expect(receipt.type).toBe('proof-exchange/ballot-receipt/v2');
      const rows = await app.deps.db('ballots').where('proposal_id', id);
      expect(rows).toHaveLength(1);
      // A second vote of the same identity is refused, and the CLI says so by its exit code.
      await expect(
        cli('vote', '--url', url, '--proposal', id, '--identity', idFile, '--choice', OPTIONS[0]!),
      ).rejects.toThrow(/already_voted/);
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
