// Sealing keys with a history: after BALLOT_KEY (or SEALING_KEY) changes, what the earlier key sealed
// still opens through <NAME>_PREVIOUS — rooms, open proposals and a vote whose window passed all read and
// close, nothing answers 500 — and the release's re-seal moves every row to the new key, once. A wrong
// key with no history is a clear 503 at read time and a refusal at start and at release, never a 500.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { membershipMessage, reviewMessage } from '../../shared/governance/commitments';
import { ballotSealedColumns } from '../../shared/governance/ballot-key';
import { env } from '../../shared/platform/env';
import { StartupRefused } from '../../shared/platform/failures';
import { scanSealedColumn, scanSealedColumns } from '../../shared/platform/sealed-columns';
import type { SealedColumn } from '../../shared/platform/sealed-columns';
import { keyRing, openSecret, sealSecret, secretPlaceAad } from '../../shared/platform/sealing';
import { assertDatabaseStart, sealedKeyCheck } from '../../shared/platform/startup-checks';
import { releaseLines, releaseReport } from '../../workers/release';
import { sealedColumns } from '../../workers/startup';
import { sealedColumns as webSealedColumns } from '../../api/wiring';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR, wallet } from '../governance/helpers';
import { processArgs } from '../processes';

const key = () => randomBytes(32).toString('hex');
const [OLD, NEW, WRONG] = [key(), key(), key()];
const reviewer = wallet();
const member = wallet();

let app: TestApp;
let roomId: string;
let openProposal: string;
let dueProposal: string;

function useBallotKeys(current: string, previous?: string) {
  env.BALLOT_KEY = current;
  env.BALLOT_KEY_PREVIOUS = previous;
}

/** Every row of each ballot column, and which key opens it: 0 the current key, 1.. an earlier one. */
async function ballotRows() {
  return scanSealedColumns(app.deps.db, ballotSealedColumns, { reseal: false });
}

beforeAll(async () => {
  useBallotKeys(OLD);
  app = testApp();
  const room = await app.request
    .post('/api/governance/rooms')
    .set('Authorization', OPERATOR)
    .send({ name: 'Board', members: [reviewer.address, member.address] })
    .expect(201);
  roomId = room.body.roomId;
  await app.request
    .post(`/api/governance/rooms/${roomId}/committees`)
    .set('Authorization', OPERATOR)
    .send({ slug: 'review', name: 'Review', members: [reviewer.address], threshold: 1 })
    .expect(201);
  const propose = async (votingSeconds: number) =>
    (
      await app.request
        .post('/api/governance/proposals')
        .set('Authorization', OPERATOR)
        .send({ roomId, title: 'Budget', options: ['yes', 'no'], reviewCommittee: 'review', votingSeconds })
        .expect(201)
    ).body.proposalId as string;
  openProposal = await propose(3600);
  dueProposal = await propose(1);
  // The second one's vote opens now and its window passes while the key changes.
  await app.request
    .post(`/api/governance/proposals/${dueProposal}/review`)
    .send({
      walletPublicKey: reviewer.address,
      decision: 'approve',
      signature: reviewer.sign(reviewMessage(dueProposal, 'approve')),
    })
    .expect(200);
});

afterAll(async () => {
  await app.close();
});

/** The reads that open sealed values: the room (salt), membership (salt), a proposal's key and its close. */
async function governanceReads() {
  const room = await app.request.get(`/api/governance/rooms/${roomId}`).set('Authorization', OPERATOR);
  const issued = await app.request.post(`/api/governance/rooms/${roomId}/challenge`);
  const { challenge } = issued.body;
  const membership = await app.request.post(`/api/governance/rooms/${roomId}/membership`).send({
    walletPublicKey: member.address,
    challenge,
    signature: member.sign(membershipMessage(challenge)),
  });
  const ballotKey = await app.request.get(`/api/governance/proposals/${openProposal}/ballot-key`);
  const due = await app.request.get(`/api/governance/proposals/${dueProposal}`);
  return { room, issued, membership, ballotKey, due };
}

describe('a rotated ballot key', () => {
  it('keeps every read working through BALLOT_KEY_PREVIOUS, the close of a passed vote included', async () => {
    useBallotKeys(NEW, OLD);
    // Wait for the due proposal's one-second window to pass (there is no event for the clock).
    const { voting_ends_at: ends } = await app.deps.db('proposals').where('id', dueProposal).first();
    await new Promise((r) => setTimeout(r, Math.max(0, new Date(ends).getTime() - Date.now() + 50)));
    const reads = await governanceReads();
    expect(reads.room.status).toBe(200);
    expect(reads.membership.status).toBe(200);
    expect(reads.membership.body.member).toBe(true);
    expect(reads.ballotKey.status).toBe(200);
    expect(reads.due.status).toBe(200);
    expect(reads.due.body.status).toBe('closed');
    // Nothing new is sealed under the old key: a room made now opens under the new key alone.
    const report = await ballotRows();
    expect(report.map((r) => [r.table, r.sealed, r.unopenable])).toEqual([
      ['proposals', 2, 0],
      ['rooms', 1, 0],
    ]);
  });

  it('the release re-seals every row under the new key, once, and then the old key can go', async () => {
    const first = await releaseReport(app.deps.db);
    const ballot = first.sealed.filter((r) => r.ring === 'BALLOT_KEY');
    expect(ballot.map((r) => [`${r.table}.${r.column}`, r.resealed, r.unopenable])).toEqual([
      ['proposals.key_wrapped', 2, 0],
      ['rooms.salt_sealed', 1, 0],
    ]);
    expect(first.problems).toEqual([]);
    expect(releaseLines(first)).toContain(
      'sealed 2 row(s) of proposals.key_wrapped again under the current BALLOT_KEY',
    );
    // Idempotent: a second run finds every row current.
    const again = await releaseReport(app.deps.db);
    expect(again.sealed.every((r) => r.resealed === 0)).toBe(true);

    useBallotKeys(NEW);
    const reads = await governanceReads();
    expect([reads.room.status, reads.membership.status, reads.ballotKey.status, reads.due.status]).toEqual([
      200, 200, 200, 200,
    ]);
    expect((await ballotRows()).every((r) => r.unopenable === 0)).toBe(true);
  });

  it('a wrong key with no history: 503 ballot_key_unavailable at read time, refused at start and at release', async () => {
    useBallotKeys(WRONG);
    try {
      const reads = await governanceReads();
      for (const res of [reads.room, reads.issued]) {
        expect(res.status).toBe(503);
        expect(res.body.code).toBe('ballot_key_unavailable');
        expect(res.body.detail).toContain('BALLOT_KEY_PREVIOUS');
      }
      const lines = await sealedKeyCheck(ballotSealedColumns)(app.deps.db);
      expect(lines).toEqual([
        expect.stringMatching(
          /^proposals\.key_wrapped: 2 of 2 row\(s\) open under no configured BALLOT_KEY .*BALLOT_KEY_PREVIOUS/,
        ),
        expect.stringMatching(/^rooms\.salt_sealed: 1 of 1 row\(s\) open under no configured BALLOT_KEY/),
      ]);
      const refused = await assertDatabaseStart(app.deps.db, [sealedKeyCheck(sealedColumns)], {
        NODE_ENV: 'production',
      }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(StartupRefused);
      expect((refused as StartupRefused).lines[0]).toMatch(
        /^Refusing to start in production: proposals\.key_wrapped/,
      );
      // Nothing was rewritten under the wrong key.
      useBallotKeys(NEW);
      expect((await ballotRows()).every((r) => r.unopenable === 0)).toBe(true);
    } finally {
      useBallotKeys(NEW);
    }
  });

  it('the release process in production refuses a wrong key with one line per column, and writes nothing', async () => {
    const before = await app.deps.db('proposals').orderBy('id').pluck('key_wrapped');
    const child = spawn(process.execPath, processArgs('release'), {
      env: {
        ...process.env,
        VITEST: '',
        NODE_ENV: 'production',
        BASE_URL: 'https://exchange.example',
        SERVICE_SIGNING_KEY: '7'.repeat(64),
        BALLOT_KEY: WRONG,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const err: string[] = [];
    child.stderr.on('data', (d: Buffer) => err.push(d.toString()));
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(78);
    expect(err.join('').trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^Refusing to release in production: proposals\.key_wrapped: 2 of 2 row\(s\)/),
      expect.stringMatching(/^Refusing to release in production: rooms\.salt_sealed: 1 of 1 row\(s\)/),
    ]);
    expect(await app.deps.db('proposals').orderBy('id').pluck('key_wrapped')).toEqual(before);
  }, 60_000);
});

describe('a rotated sealing key', () => {
  const place = { table: 'key_history_probe', id: 'row_1', column: 'secret' };
  const column: SealedColumn = {
    table: 'key_history_probe',
    column: 'secret',
    ring: 'SEALING_KEY',
    aad: (row) => secretPlaceAad({ ...place, id: row.id }),
  };

  it('opens secrets sealed under SEALING_KEY_PREVIOUS, re-seals them, and refuses a value moved to another row', async () => {
    const db = app.deps.db;
    await db.schema.createTable('key_history_probe', (t) => {
      t.text('id').primary();
      t.binary('secret');
    });
    env.SEALING_KEY = OLD;
    await db('key_history_probe').insert([
      { id: 'row_1', secret: sealSecret(place, 'whsec_one') },
      { id: 'row_2', secret: sealSecret({ ...place, id: 'row_2' }, 'whsec_two') },
      // A value copied from another row opens under no key: its associated data names row_1.
      { id: 'row_3', secret: sealSecret(place, 'whsec_one') },
    ]);
    env.SEALING_KEY = NEW;
    env.SEALING_KEY_PREVIOUS = OLD;
    try {
      expect(openSecret(place, (await db('key_history_probe').where('id', 'row_1').first()).secret)).toBe(
        'whsec_one',
      );
      const report = await scanSealedColumn(db, column, { reseal: true, batch: 2 });
      expect(report).toMatchObject({ sealed: 3, resealed: 2, unopenable: 1, examples: ['row_3'] });
      // Under the new key alone, the re-sealed rows open.
      env.SEALING_KEY_PREVIOUS = undefined;
      // Nothing but the configured keys: not even the key derived from the signing key.
      expect(keyRing('SEALING_KEY').previous).toEqual([]);
      expect(
        openSecret(
          { ...place, id: 'row_2' },
          (await db('key_history_probe').where('id', 'row_2').first()).secret,
        ),
      ).toBe('whsec_two');
      expect(await scanSealedColumn(db, column, { reseal: true })).toMatchObject({
        resealed: 0,
        unopenable: 1,
      });
    } finally {
      env.SEALING_KEY = undefined;
      env.SEALING_KEY_PREVIOUS = undefined;
      await db.schema.dropTable('key_history_probe');
    }
  });

  it('the web and the workers check the same sealed columns', () => {
    const names = (cs: readonly SealedColumn[]) => cs.map((c) => `${c.table}.${c.column}:${c.ring}`);
    expect(names(webSealedColumns)).toEqual(names(sealedColumns));
    expect(names(sealedColumns)).toEqual([
      'job_webhooks.secret_sealed:SEALING_KEY',
      'job_webhooks.token_sealed:SEALING_KEY',
      'job_webhooks.auth_credentials_sealed:SEALING_KEY',
      'logistics_requests.webhook_secret_sealed:SEALING_KEY',
      'proposals.key_wrapped:BALLOT_KEY',
      'rooms.salt_sealed:BALLOT_KEY',
    ]);
  });
});
