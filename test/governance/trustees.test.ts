// Ballots nobody can open early: a room's trustees run their key ceremony on their own side (one of them
// through `npm run trustee`), voters encrypt to the joint key, and after the close any 2 of the 3
// trustees open the ballots — with one offline. Against the strongest insider: every table, every key
// the service holds and one trustee's share still open no ballot. A wrong partial decryption is caught by
// its proof, a cheating dealer is disqualified, and the package recomputes offline.
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ristretto255 } from '@noble/curves/ed25519.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import type { Ballot, BallotInfo, Identity } from '../../shared/governance/ballot-client';
import {
  decryptVote as decryptServiceVote,
  proposalScope,
  voteHashOf,
} from '../../shared/governance/ballot-protocol';
import { reviewMessage } from '../../shared/governance/commitments';
import { verifyGovernancePackage } from '../../shared/governance/package-verify';
import type { ThresholdGovernancePackage } from '../../shared/governance/package';
import {
  DECRYPTION_KIND,
  ballotEphemeral,
  combinePartials,
  deal,
  decryptionStatement,
  openThresholdVote,
  partialDecrypt,
  trusteeKeysFrom,
  trusteeMessage,
} from '../../shared/governance/threshold';
import type { PartialDecryption } from '../../shared/governance/threshold';
import {
  ceremonyRound,
  decryptVote,
  fetchCeremony,
  newTrusteeFile,
  secretShareOf,
  trusteePublicKeys,
} from '../../shared/governance/trustee-client';
import type { TrusteeFile } from '../../shared/governance/trustee-client';
import { registry } from '../../shared/platform/metrics';
import { keyRing } from '../../shared/platform/sealing';
import { loadVerificationKey } from '../../shared/zk/verify';
import { proveMembership } from '../../shared/zk/anonymity';
import { terminateCurves } from '../../shared/zk';
import { logSigningKey, serviceSigningKey } from '../../shared/platform/keys';
import { TestClock } from '../clock';
import { eventually, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import {
  OPERATOR,
  addIdentities,
  ballotArtifacts,
  ballotInfo,
  makeBallotBody,
  until,
  wallet,
} from './helpers';

const execFileAsync = promisify(execFile);
const OPTIONS = ['approve-7c1e', 'reject-2a94'];
const reviewer = wallet();
let app: TestApp;
// The service's clock: a vote opens with it 50 s behind, so its window ends 50 s sooner in real time,
// when the trustees' clients (reading the real time) may decrypt; it is set right when the window ends.
const clock = new TestClock();
let server: http.Server;
let url: string;
let dir: string;

const cli = (...args: string[]) =>
  execFileAsync(process.execPath, ['--import', 'tsx', 'cli/trustee.ts', ...args], {
    env: { ...process.env, LOG_LEVEL: 'silent' },
  });

async function room(identities: number) {
  const roomId = (
    await app.request
      .post('/api/governance/rooms')
      .set('Authorization', OPERATOR)
      .send({ name: 'Board', members: [reviewer.address] })
      .expect(201)
  ).body.roomId as string;
  await app.request
    .post(`/api/governance/rooms/${roomId}/committees`)
    .set('Authorization', OPERATOR)
    .send({ slug: 'review', name: 'Review', members: [reviewer.address], threshold: 1 })
    .expect(201);
  return { roomId, identities: identities ? await addIdentities(app.request, roomId, identities) : [] };
}

const appoint = (roomId: string, files: TrusteeFile[], threshold: number) =>
  app.request
    .post(`/api/governance/rooms/${roomId}/trustees`)
    .set('Authorization', OPERATOR)
    .send({
      threshold,
      trustees: files.map((f, i) => ({ name: `Trustee ${i + 1}`, ...trusteePublicKeys(f) })),
    });

/** The trustees named run their rounds until the ceremony is ready (or four rounds pass); files are kept. */
async function runCeremony(roomId: string, files: TrusteeFile[], which = files.map((_, i) => i)) {
  for (let round = 0; round < 4; round++) {
    for (const i of which) files[i] = (await ceremonyRound(url, roomId, files[i]!)).file;
    if ((await fetchCeremony(url, roomId)).status === 'ready') return;
  }
}

async function proposal(roomId: string, votingSeconds: number) {
  const proposalId = (
    await app.request
      .post('/api/governance/proposals')
      .set('Authorization', OPERATOR)
      .send({ roomId, title: 'Merger', options: OPTIONS, reviewCommittee: 'review', votingSeconds })
      .expect(201)
  ).body.proposalId as string;
  await app.request
    .post(`/api/governance/proposals/${proposalId}/review`)
    .send({
      walletPublicKey: reviewer.address,
      decision: 'approve',
      signature: reviewer.sign(reviewMessage(proposalId, 'approve')),
    })
    .expect(200);
  return proposalId;
}

const cast = (proposalId: string, b: Ballot) =>
  app.request.post(`/api/governance/proposals/${proposalId}/ballots`).send(b);

/** A trustee's decryption set as its client posts it: signed over its statement with the trustee's key. */
const signedSet = (
  file: TrusteeFile,
  roomId: string,
  proposalId: string,
  trustee: number,
  shares: Array<PartialDecryption & { nullifier: string }>,
) => ({
  trustee,
  shares,
  signature: trusteeKeysFrom(file.secret).signer.sign(
    trusteeMessage(roomId, DECRYPTION_KIND, decryptionStatement({ proposalId }, shares)),
  ),
});

async function closeVote(proposalId: string) {
  const state = (await app.request.get(`/api/governance/proposals/${proposalId}`).expect(200)).body;
  await until(state.votingEndsAt);
  clock.reset();
  return (await app.request.get(`/api/governance/proposals/${proposalId}`).expect(200)).body;
}

/** Every value of every table of the public schema, as text (bytea as hex and base64url). */
async function dumpDatabase(): Promise<string> {
  const tables = (await app.deps
    .db('information_schema.tables')
    .where({ table_schema: 'public', table_type: 'BASE TABLE' })
    .pluck('table_name')) as string[];
  const parts: string[] = [];
  for (const table of tables) {
    for (const row of (await app.deps.db.raw(`select * from "${table}"`)).rows as Array<
      Record<string, unknown>
    >)
      for (const v of Object.values(row))
        parts.push(
          Buffer.isBuffer(v) ? `${v.toString('hex')} ${v.toString('base64url')}` : JSON.stringify(v),
        );
  }
  return parts.join('\n');
}

/** Every 32-byte value a text holds, as hex or base64url: each a candidate key for the insider. */
function thirtyTwoByteValues(text: string): Buffer[] {
  const found = new Set<string>();
  for (const m of text.matchAll(/[0-9a-f]{64}/g)) found.add(m[0]);
  for (const m of text.matchAll(/[A-Za-z0-9_-]{43}/g)) {
    const b = Buffer.from(m[0], 'base64url');
    if (b.length === 32) found.add(b.toString('hex'));
  }
  return [...found].map((h) => Buffer.from(h, 'hex'));
}

let files: TrusteeFile[];
let roomId: string;
let identities: Identity[];

beforeAll(async () => {
  app = testApp({ clock });
  server = http.createServer(createApp(app.deps)).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dir = mkdtempSync(join(tmpdir(), 'px-trustees-'));
  ({ roomId, identities } = await room(5));
}, 120_000);

afterAll(async () => {
  server?.close();
  await app.close();
  rmSync(dir, { recursive: true, force: true });
  await terminateCurves();
});

describe('the trustees’ key ceremony', () => {
  it('runs 2 of 3 on the trustees’ side, one through npm run trustee; the service ends up with no share', async () => {
    const keyFile = join(dir, 'trustee-1.json');
    const made = JSON.parse((await cli('keys', '--out', keyFile)).stdout) as { publicKey: string };
    expect(made.publicKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    files = [JSON.parse(readFileSync(keyFile, 'utf8')) as TrusteeFile, newTrusteeFile(), newTrusteeFile()];
    const appointed = await appoint(roomId, files, 2).expect(201);
    expect(appointed.body.status).toBe('dealing');
    // A proposal cannot be made on a key that does not exist yet.
    await app.request
      .post('/api/governance/proposals')
      .set('Authorization', OPERATOR)
      .send({ roomId, title: 'Early', options: OPTIONS, reviewCommittee: 'review', votingSeconds: 60 })
      .expect(409)
      .expect((r) => expect(r.body.code).toBe('trustees_not_ready'));

    const first = JSON.parse(
      (await cli('ceremony', '--url', url, '--room', roomId, '--key', keyFile)).stdout,
    );
    expect(first.did).toContain('dealt');
    await runCeremony(roomId, files, [1, 2]); // trustees 2 and 3 deal and judge
    const last = JSON.parse((await cli('ceremony', '--url', url, '--room', roomId, '--key', keyFile)).stdout);
    files[0] = JSON.parse(readFileSync(keyFile, 'utf8')) as TrusteeFile;
    if (last.status !== 'ready') await runCeremony(roomId, files);
    const ceremony = await fetchCeremony(url, roomId);
    expect(ceremony.status).toBe('ready');
    expect(ceremony.qualified).toEqual([1, 2, 3]);
    expect(ceremony.verdicts).toHaveLength(9);
    // Each trustee's shares add up to its published verification share.
    for (const f of files) expect(secretShareOf(ceremony, f).share).toBeTypeOf('bigint');
    // The trustee's file keeps the secret and what it dealt, readable by its owner only.
    expect(files[0]!.dealt?.[roomId]).toHaveLength(3);
  }, 120_000);

  it('refuses a message not signed by its trustee, a malformed dealing and anything after the end, writing nothing', async () => {
    const other = await room(0);
    const f = [newTrusteeFile(), newTrusteeFile()];
    await appoint(other.roomId, f, 2).expect(201);
    const keys = f.map(trusteePublicKeys);
    const dealing = deal(other.roomId, 1, 2, keys);
    const outsider = trusteeKeysFrom(newTrusteeFile().secret).signer;
    const post = (body: object) =>
      app.request.post(`/api/governance/rooms/${other.roomId}/trustees/dealings`).send(body);
    await post({
      trustee: 1,
      body: dealing,
      signature: outsider.sign(trusteeMessage(other.roomId, 'dealing', dealing)),
    })
      .expect(403)
      .expect((r) => expect(r.body.code).toBe('signature_invalid'));
    // Trustee 2 signing as trustee 1.
    const as2 = trusteeKeysFrom(f[1]!.secret).signer.sign(trusteeMessage(other.roomId, 'dealing', dealing));
    await post({ trustee: 1, body: dealing, signature: as2 }).expect(403);
    const short = { ...dealing, commitments: dealing.commitments.slice(0, 1) };
    const signer1 = trusteeKeysFrom(f[0]!.secret).signer;
    await post({
      trustee: 1,
      body: short,
      signature: signer1.sign(trusteeMessage(other.roomId, 'dealing', short)),
    })
      .expect(422)
      .expect((r) => expect(r.body.code).toBe('invalid_dealing'));
    expect(await app.deps.db('trustee_messages').where('room_id', other.roomId)).toHaveLength(0);
    // Appointed once; the end needs the threshold of dealings.
    await appoint(other.roomId, f, 1).expect(409);
    await app.request
      .post(`/api/governance/rooms/${other.roomId}/trustees/end`)
      .set('Authorization', OPERATOR)
      .expect(409)
      .expect((r) => expect(r.body.code).toBe('too_few_dealings'));
    // The ready room of the first test takes nothing more.
    const late = deal(roomId, 1, 2, files.map(trusteePublicKeys));
    await app.request
      .post(`/api/governance/rooms/${roomId}/trustees/dealings`)
      .send({
        trustee: 1,
        body: late,
        signature: trusteeKeysFrom(files[0]!.secret).signer.sign(trusteeMessage(roomId, 'dealing', late)),
      })
      .expect(409)
      .expect((r) => expect(r.body.code).toBe('ceremony_closed'));
  });

  it('disqualifies a dealer whose share does not match its commitments and cannot answer the complaint', async () => {
    const other = await room(0);
    const f = [newTrusteeFile(), newTrusteeFile(), newTrusteeFile()];
    await appoint(other.roomId, f, 2).expect(201);
    const keys = f.map(trusteePublicKeys);
    // Trustee 1 cheats: trustee 2's share is sealed from another polynomial.
    const honest = deal(other.roomId, 1, 2, keys);
    const forged = deal(other.roomId, 1, 2, keys);
    const cheating = {
      commitments: honest.commitments,
      shares: [honest.shares[0]!, forged.shares[1]!, honest.shares[2]!],
    };
    const signer1 = trusteeKeysFrom(f[0]!.secret).signer;
    await app.request
      .post(`/api/governance/rooms/${other.roomId}/trustees/dealings`)
      .send({
        trustee: 1,
        body: cheating,
        signature: signer1.sign(trusteeMessage(other.roomId, 'dealing', cheating)),
      })
      .expect(201);
    await runCeremony(other.roomId, f, [1, 2]);
    let ceremony = await fetchCeremony(url, other.roomId);
    expect(ceremony.pendingComplaints).toEqual([{ dealer: 1, complainer: 2 }]);
    expect(ceremony.status).toBe('dealing');
    // An answer with a share that does not match is refused.
    const wrong = { complainer: 2, share: '01'.padStart(64, '0') };
    await app.request
      .post(`/api/governance/rooms/${other.roomId}/trustees/answers`)
      .send({
        trustee: 1,
        body: wrong,
        signature: signer1.sign(trusteeMessage(other.roomId, 'answer', wrong)),
      })
      .expect(422)
      .expect((r) => expect(r.body.code).toBe('answer_invalid'));
    ceremony = (
      await app.request
        .post(`/api/governance/rooms/${other.roomId}/trustees/end`)
        .set('Authorization', OPERATOR)
        .expect(200)
    ).body;
    expect(ceremony.status).toBe('ready');
    expect(ceremony.qualified).toEqual([2, 3]);
    // Every trustee, the cheated one included, still holds a share of the key the honest dealings made.
    for (const file of f) expect(() => secretShareOf(ceremony, file)).not.toThrow();
  }, 60_000);
});

describe('a vote under the trustees’ key', () => {
  let proposalId: string;
  let info: BallotInfo;
  const choices = [OPTIONS[0]!, OPTIONS[0]!, OPTIONS[1]!, 'abstain-not-an-option'];

  beforeAll(async () => {
    clock.setOffset(-50_000);
    proposalId = await proposal(roomId, 60);
    info = await ballotInfo(app.request, proposalId);
    expect(info.scheme).toBe('threshold');
    expect(info.publicKey).toBe((await fetchCeremony(url, roomId)).jointKey);
    for (const [i, choice] of choices.entries())
      await cast(proposalId, await makeBallotBody(info, identities[i]!, choice)).expect(201);
  }, 120_000);

  it('refuses a copy of one proposal’s ballot in another, even with a valid membership proof for it', async () => {
    const second = await proposal(roomId, 300);
    const copied = (await app.deps.db('ballots').where('proposal_id', proposalId).first()) as {
      ciphertext: Buffer;
    };
    const proved = await proveMembership({
      identity: identities[4]!,
      members: info.members,
      scope: proposalScope(second),
      message: voteHashOf(copied.ciphertext),
      artifacts: await ballotArtifacts(),
    });
    await cast(second, {
      nullifier: proved.nullifier,
      root: proved.root,
      ciphertext: copied.ciphertext.toString('base64url'),
      proof: proved.proof,
    })
      .expect(422)
      .expect((r) => expect(r.body.code).toBe('invalid_ciphertext'));
    expect(await app.deps.db('ballots').where('proposal_id', second)).toHaveLength(0);
  }, 60_000);

  it('opens no ballot before the close for whoever holds every table, every service key and one trustee’s share', async () => {
    const dump = await dumpDatabase();
    // No trustee secret, dealt share or held share is anywhere in the database.
    const ceremony = await fetchCeremony(url, roomId);
    for (const f of files) {
      expect(dump).not.toContain(f.secret);
      for (const s of f.dealt?.[roomId] ?? []) expect(dump).not.toContain(s);
      const held = secretShareOf(ceremony, f).share.toString(16).padStart(64, '0');
      expect(dump).not.toContain(held);
      expect(dump).not.toContain(Buffer.from(held, 'hex').toString('base64url'));
    }
    // Every 32-byte value of the database, and the service's ballot and sealing keys, tried as the key.
    const candidates = [
      ...thirtyTwoByteValues(dump),
      keyRing('BALLOT_KEY').current,
      keyRing('SEALING_KEY').current,
    ];
    expect(candidates.length).toBeGreaterThan(50);
    const rows = (await app.deps.db('ballots').where('proposal_id', proposalId)) as Array<{
      ciphertext: Buffer;
    }>;
    const oneTrustee = secretShareOf(ceremony, files[0]!);
    for (const [i, { ciphertext }] of rows.entries()) {
      const R = ristretto255.Point.fromBytes(ciphertext.subarray(0, 32));
      // Each candidate k as the service's key (X25519) and as the joint secret (k·R is what opens it).
      for (const key of i === 0 ? candidates : candidates.slice(0, 20)) {
        expect(decryptServiceVote(key, proposalId, ciphertext)).toBeNull();
        const k = ristretto255.Point.Fn.create(BigInt(`0x${key.toString('hex')}`));
        if (k === 0n) continue;
        const guess = Buffer.from(R.multiply(k).toBytes()).toString('base64url');
        expect(openThresholdVote(guess, info.publicKey, proposalId, ciphertext)).toBeNull();
      }
      // One trustee alone (fewer than the threshold) cannot open it either.
      const alone = partialDecrypt(
        oneTrustee.share,
        oneTrustee.index,
        proposalId,
        ballotEphemeral(ciphertext, proposalId)!,
      );
      expect(
        openThresholdVote(
          combinePartials([{ index: 1, share: alone.share }]),
          info.publicKey,
          proposalId,
          ciphertext,
        ),
      ).toBeNull();
    }
    // Nothing is handed out before the close: no ballot list, no decryption taken.
    await app.request.get(`/api/governance/proposals/${proposalId}/ballots`).expect(409);
    await expect(decryptVote(url, proposalId, files[0]!)).rejects.toThrow(/has not closed/);
    await app.request
      .post(`/api/governance/proposals/${proposalId}/decryptions`)
      .send(signedSet(files[0]!, roomId, proposalId, 1, []))
      .expect(409)
      .expect((r) => expect(r.body.code).toBe('not_decrypting'));
  }, 120_000);

  it('after the close, waits for the threshold, catches a wrong partial, and opens with one trustee offline', async () => {
    const closed = await closeVote(proposalId);
    expect(closed).toMatchObject({
      status: 'decrypting',
      ballotCount: 4,
      trusteesDecrypted: 0,
      trusteesNeeded: 2,
    });
    // Trustee 1 (through the CLI) decrypts; one is fewer than the threshold: the proposal says so and waits.
    const one = JSON.parse(
      (await cli('decrypt', '--url', url, '--proposal', proposalId, '--key', join(dir, 'trustee-1.json')))
        .stdout,
    );
    expect(one).toMatchObject({ trusteesDecrypted: 1, trusteesNeeded: 2 });
    expect((await app.request.get(`/api/governance/proposals/${proposalId}`)).body.status).toBe('decrypting');
    // Trustee 3 posts a wrong partial decryption (its share times another point): its proof fails.
    const listed = (await app.request.get(`/api/governance/proposals/${proposalId}/ballots`).expect(200)).body
      .ballots as Array<{ nullifier: string; ciphertext: string }>;
    const { share, index } = secretShareOf(await fetchCeremony(url, roomId), files[2]!);
    const shares = listed.map((b) => ({
      nullifier: b.nullifier,
      ...partialDecrypt(
        share,
        index,
        proposalId,
        ballotEphemeral(Buffer.from(b.ciphertext, 'base64url'), proposalId)!,
      ),
    }));
    const wrong = partialDecrypt(
      share + 1n,
      index,
      proposalId,
      ballotEphemeral(Buffer.from(listed[0]!.ciphertext, 'base64url'), proposalId)!,
    );
    const tampered = shares.map((s, i) => (i === 0 ? { ...s, share: wrong.share } : s));
    await app.request
      .post(`/api/governance/proposals/${proposalId}/decryptions`)
      .send(signedSet(files[2]!, roomId, proposalId, 3, tampered))
      .expect(422)
      .expect((r) => expect(r.body.code).toBe('decryption_invalid'));
    // Trustee 3's honest set signed by trustee 2's key, or unsigned: refused before any proof.
    await app.request
      .post(`/api/governance/proposals/${proposalId}/decryptions`)
      .send({ ...signedSet(files[1]!, roomId, proposalId, 3, shares), trustee: 3 })
      .expect(403)
      .expect((r) => expect(r.body.code).toBe('signature_invalid'));
    await app.request
      .post(`/api/governance/proposals/${proposalId}/decryptions`)
      .send({ trustee: 3, shares })
      .expect(400);
    expect(await app.deps.db('ballot_decryptions').where('proposal_id', proposalId)).toHaveLength(1);
    // Trustee 2 stays offline; trustee 3's honest partials open the vote.
    await app.request
      .post(`/api/governance/proposals/${proposalId}/decryptions`)
      .send(signedSet(files[2]!, roomId, proposalId, 3, shares))
      .expect(201);
    const state = (await app.request.get(`/api/governance/proposals/${proposalId}`).expect(200)).body;
    expect(state).toMatchObject({
      status: 'closed',
      ballotCount: 4,
      countedCount: 3,
      spoiledCount: 1,
      winner: OPTIONS[0],
    });
    expect(state.tally).toEqual({ [OPTIONS[0]!]: 2, [OPTIONS[1]!]: 1 });
    await app.request
      .post(`/api/governance/proposals/${proposalId}/decryptions`)
      .send(signedSet(files[1]!, roomId, proposalId, 2, []))
      .expect(409);
  }, 120_000);

  it('recomputes offline from the package: dealings, joint key, every partial’s proof, every ballot, the tally', async () => {
    const pkg = (await app.request.get(`/api/governance/proposals/${proposalId}/package`).expect(200))
      .body as ThresholdGovernancePackage;
    expect(pkg.scheme).toBe('threshold');
    expect(JSON.stringify(pkg)).not.toContain('privateKey');
    const keys = {
      publicKey: serviceSigningKey().publicKey,
      logPublicKey: logSigningKey().publicKey,
      ballotVerificationKey: await loadVerificationKey('ballot'),
    };
    const verdict = await verifyGovernancePackage(pkg, keys);
    expect(verdict.reasons).toEqual([]);
    expect(verdict.valid).toBe(true);
    // The service works a package's verdict out once, in its verify pool, and remembers it: the route
    // asked twice, and the proposal's page shown twice, run the trustees' arithmetic at most once each.
    const poolRuns = async () =>
      (await registry.getSingleMetric('px_verify_pool_tasks_total')!.get()).values
        .filter((v) => v.labels.task === 'governance.verify')
        .reduce((n, v) => n + v.value, 0);
    let runs = await poolRuns();
    for (let i = 0; i < 2; i++)
      expect(
        (await app.request.post('/api/governance/verify').send({ package: pkg }).expect(200)).body,
      ).toMatchObject({ valid: true, ballotsValid: true });
    expect((await poolRuns()) - runs).toBe(1);
    await app.request.get(`/governance/proposals/${proposalId}/`).expect(200);
    runs = await poolRuns();
    await app.request.get(`/governance/proposals/${proposalId}/`).expect(200);
    expect(await poolRuns()).toBe(runs);
    // A partial decryption swapped for another trustee's: caught by the trustee's signature over its set,
    // before any proof is checked; and by its proof, in a package from before decryptions were signed.
    const swapped = structuredClone(pkg);
    swapped.ballots[0]!.decryptions[0]!.share = swapped.ballots[0]!.decryptions[1]!.share;
    const bad = await verifyGovernancePackage(swapped, keys);
    expect(bad.valid).toBe(false);
    expect(bad.reasons.map((r) => r.code)).toContain('decryptions_unsigned');
    delete swapped.trustees.decrypted;
    const unsigned = await verifyGovernancePackage(swapped, keys);
    expect(unsigned.reasons.map((r) => r.code)).toContain('decryption_invalid');
    // A dealing the service made up (it would know the key): its signature is not the trustee's.
    const invented = structuredClone(pkg);
    invented.trustees.dealings[0]!.commitments[0] = pkg.trustees.dealings[1]!.commitments[0]!;
    const forged = await verifyGovernancePackage(invented, keys);
    expect(forged.valid).toBe(false);
    expect(forged.reasons.map((r) => r.code)).toContain('dealing_invalid');
    // Who decrypted is signed by each of them: a set said to be another trustee's is caught.
    expect(pkg.trustees.decrypted?.map((d) => d.trustee)).toEqual([1, 3]);
    const renamed = structuredClone(pkg);
    renamed.trustees.decrypted![1]!.signature = pkg.trustees.decrypted![0]!.signature;
    expect((await verifyGovernancePackage(renamed, keys)).reasons.map((r) => r.code)).toContain(
      'decryptions_unsigned',
    );
    // The bundle, checked by `npm run verify` as an auditor runs it: no database, no service.
    const bundle = await eventually(
      async () => {
        const res = await app.request.get(`/api/governance/proposals/${proposalId}/bundle`);
        return res.status === 200 ? res.body : undefined;
      },
      20_000,
      200,
    );
    const trust = (await app.request.get('/api/proof-workflows/trust-root').expect(200)).body;
    writeFileSync(join(dir, 'bundle.json'), JSON.stringify(bundle));
    writeFileSync(join(dir, 'trust.json'), JSON.stringify(trust));
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'cli/verify.ts', join(dir, 'bundle.json'), '--trust', join(dir, 'trust.json')],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME }, encoding: 'utf8', timeout: 60_000 },
    );
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain('governance vote passed: ballots valid, tally recomputes');
    // Valid, and said not to be proof: its ballots were checked with the development setup's key.
    expect(run.stdout).toMatch(
      /^WARNING: the zero-knowledge proofs were checked with keys from an insecure development setup \(dev-INSECURE-pot14\.ptau\)/m,
    );
  }, 90_000);
});

describe('a vote under the trustees’ key that no one voted in', () => {
  it('takes decryptions only signed by their trustee; the package names who decrypted, and proves it', async () => {
    const empty = await proposal(roomId, 1);
    expect((await closeVote(empty)).status).toBe('decrypting');
    const post = (body: object) =>
      app.request.post(`/api/governance/proposals/${empty}/decryptions`).send(body);
    // Nothing to prove with no ballots: without the signature, anyone could claim to be every trustee.
    for (const trustee of [1, 2, 3])
      await post({ trustee, shares: [], signature: randomBytes(64).toString('base64url') })
        .expect(403)
        .expect((r) => expect(r.body.code).toBe('signature_invalid'));
    await post({ ...signedSet(files[0]!, roomId, empty, 1, []), trustee: 2 }).expect(403);
    expect(await app.deps.db('ballot_decryptions').where('proposal_id', empty)).toHaveLength(0);
    expect((await app.request.get(`/api/governance/proposals/${empty}`)).body.status).toBe('decrypting');
    // The trustees themselves, each signing its (empty) set.
    await post(signedSet(files[0]!, roomId, empty, 1, [])).expect(201);
    await post(signedSet(files[1]!, roomId, empty, 2, [])).expect(201);
    expect((await app.request.get(`/api/governance/proposals/${empty}`)).body).toMatchObject({
      status: 'closed',
      ballotCount: 0,
    });
    const pkg = (await app.request.get(`/api/governance/proposals/${empty}/package`).expect(200))
      .body as ThresholdGovernancePackage;
    expect(pkg.trustees.decrypted?.map((d) => d.trustee)).toEqual([1, 2]);
    const keys = {
      publicKey: serviceSigningKey().publicKey,
      logPublicKey: logSigningKey().publicKey,
      ballotVerificationKey: await loadVerificationKey('ballot'),
    };
    expect((await verifyGovernancePackage(pkg, keys)).reasons).toEqual([]);
    // A package naming a trustee that did not decrypt fails offline, whoever signed the package.
    const claimed = structuredClone(pkg);
    claimed.trustees.decrypted![1]!.trustee = 3;
    expect((await verifyGovernancePackage(claimed, keys)).reasons.map((r) => r.code)).toContain(
      'decryptions_unsigned',
    );
  }, 60_000);
});
