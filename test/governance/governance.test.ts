// Private governance over HTTP with real wallets and anonymous ballots made by the voter's client:
// review opens the vote; during it nothing but the question, its options, status and time remaining leaks (routes, page, errors,
// logs, metrics); the close publishes ballots, tally and a logged package that anyone can recompute and
// each voter can check their receipt against.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ciphertextDigest, decryptVote } from '../../shared/governance/ballot-protocol';
import type { Ballot, BallotInfo, Identity } from '../../shared/governance/ballot-client';
import { createIdentity } from '../../shared/governance/ballot-client';
import { reviewMessage, membershipMessage } from '../../shared/governance/commitments';
import { identityMessage } from '../../shared/governance/commitments';
import { checkReceiptAgainstPackage, verifyGovernancePackage } from '../../shared/governance/package-verify';
import { verifyReceipt } from '../../shared/governance/receipts';
import type { AnonymousGovernancePackage } from '../../shared/governance/package';
import type { BallotReceipt } from '../../shared/governance/receipts';
import { logSigningKey, serviceSigningKey } from '../../shared/platform/keys';
import { terminateCurves } from '../../shared/zk';
import { TestClock } from '../clock';
import { eventually, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR, addIdentities, ballotInfo, captureLogs, makeBallotBody, wallet } from './helpers';
import type { Wallet } from './helpers';

const OPTIONS = ['option-alpha-7f3e', 'option-beta-2c9d', 'option-gamma-51ab'];
const TITLE = 'Title-private-budget-e19a';
const vkey = JSON.parse(readFileSync('circuits/artifacts/ballot.vkey.json', 'utf8')) as unknown;
// The package key, and the log key that signs the tree heads of packages logged since it existed.
const keys = () => ({
  publicKey: serviceSigningKey().publicKey,
  logPublicKey: logSigningKey().publicKey,
  ballotVerificationKey: vkey,
});

let app: TestApp;
// The service's clock: the vote's window is moved past once its ballots are in.
const clock = new TestClock();
let logs: ReturnType<typeof captureLogs>;
const reviewers = [wallet(), wallet()];
const voters = [wallet(), wallet(), wallet(), wallet()];
const outsider = wallet();
let roomId: string;
let proposalId: string;
let identities: Identity[];
let info: BallotInfo;
const cast: Array<{ identity: Identity; choice: string; ballot: Ballot; receipt: BallotReceipt }> = [];
/** Ballots proved before the vote opens, so the short window is spent casting, not proving. */
const ready: Record<string, Ballot> = {};

beforeAll(async () => {
  logs = captureLogs();
  app = testApp({ clock });
  const room = await app.request
    .post('/api/governance/rooms')
    .set('Authorization', OPERATOR)
    .send({ name: 'Board', members: [...reviewers, ...voters].map((w) => w.address) })
    .expect(201);
  roomId = room.body.roomId;
  await app.request
    .post(`/api/governance/rooms/${roomId}/committees`)
    .set('Authorization', OPERATOR)
    .send({
      slug: 'review',
      name: 'Review committee',
      members: reviewers.map((w) => w.address),
      threshold: 2,
    })
    .expect(201);
});
afterAll(async () => {
  logs.stop();
  await app.close();
  await terminateCurves();
});

const post = (ballot: Ballot, id = proposalId) =>
  app.request.post(`/api/governance/proposals/${id}/ballots`).send(ballot);

const count = async (table: string) =>
  Number(((await app.deps.db(table).count({ n: '*' }).first()) as { n: string }).n);

describe('a proposal from review to proof', () => {
  it('stores members only as commitments, and proves membership by a signed challenge', async () => {
    const rows = await app.deps.db('room_members').where('room_id', roomId);
    expect(rows).toHaveLength(6);
    const dump = JSON.stringify(await app.deps.db('rooms').where('id', roomId)) + JSON.stringify(rows);
    for (const w of [...reviewers, ...voters]) expect(dump).not.toContain(w.address);

    const { challenge } = (await app.request.post(`/api/governance/rooms/${roomId}/challenge`).expect(200))
      .body;
    const proof = async (w: Wallet, signer = w) =>
      app.request.post(`/api/governance/rooms/${roomId}/membership`).send({
        walletPublicKey: w.address,
        challenge,
        signature: signer.sign(membershipMessage(challenge)),
      });
    expect((await proof(voters[0]!)).body.member).toBe(true);
    expect((await proof(outsider)).body).toEqual({ member: false });
    // Without the key, no answer about membership at all.
    expect((await proof(voters[0]!, outsider)).body.code).toBe('signature_invalid');
  });

  it('registers identity commitments, by the administrator or by a wallet member, never naming one in the tree', async () => {
    identities = await addIdentities(app.request, roomId, 4);
    const own = await createIdentity();
    const register = (w: Wallet, commitment: string, signer = w) =>
      app.request.post(`/api/governance/rooms/${roomId}/identities/register`).send({
        walletPublicKey: w.address,
        identityCommitment: commitment,
        signature: signer.sign(identityMessage(roomId, commitment)),
      });
    const res = await register(reviewers[0]!, own.commitment).expect(201);
    expect(res.body.identityCount).toBe(5);
    identities.push(own);
    const before = await count('room_identities');
    expect((await register(reviewers[0]!, (await createIdentity()).commitment)).body.code).toBe(
      'identity_already_registered',
    );
    expect((await register(outsider, (await createIdentity()).commitment)).status).toBe(403);
    expect((await register(voters[0]!, (await createIdentity()).commitment, outsider)).body.code).toBe(
      'signature_invalid',
    );
    expect(await count('room_identities')).toBe(before);
    // The registration is kept apart from the identity: no row holds both.
    const claims = await app.deps.db('room_identity_claims').where('room_id', roomId);
    expect(claims).toHaveLength(1);
    expect(JSON.stringify(claims)).not.toContain(own.commitment);
    const tree = (await app.request.get(`/api/governance/rooms/${roomId}/tree`).expect(200)).body;
    expect(tree.identityCommitments).toEqual(identities.map((i) => i.commitment));
    expect(tree.acceptedRoots[0]).toBe(tree.root);
    const bad = await app.request
      .post(`/api/governance/rooms/${roomId}/identities`)
      .set('Authorization', OPERATOR)
      .send({ identityCommitments: ['0'] });
    expect([bad.status, bad.body.code]).toEqual([422, 'invalid_identity']);
  });

  it('opens the vote after the review threshold of signed approvals', async () => {
    const created = await app.request
      .post('/api/governance/proposals')
      .set('Authorization', OPERATOR)
      .send({ roomId, title: TITLE, options: OPTIONS, reviewCommittee: 'review', votingSeconds: 8 })
      .expect(201);
    proposalId = created.body.proposalId;
    expect(created.body).toMatchObject({ status: 'review', reviewThreshold: 2 });
    // A voter who is not a reviewer cannot approve; a ballot before the vote is refused.
    const notReviewer = await app.request.post(`/api/governance/proposals/${proposalId}/review`).send({
      walletPublicKey: voters[0]!.address,
      decision: 'approve',
      signature: voters[0]!.sign(reviewMessage(proposalId, 'approve')),
    });
    expect(notReviewer.status).toBe(403);
    info = await ballotInfo(app.request, proposalId);
    const plan: Array<[string, number, string]> = [
      ['v0', 0, OPTIONS[0]!],
      ['v1', 1, OPTIONS[0]!],
      ['v2', 2, OPTIONS[1]!],
      ['r0', 4, OPTIONS[2]!],
      ['again', 0, OPTIONS[1]!],
      ['v3', 3, OPTIONS[1]!],
    ];
    for (const [name, who, choice] of plan)
      ready[name] = await makeBallotBody(info, identities[who]!, choice);
    expect((await post(ready.v0!)).body.code).toBe('voting_not_open');

    for (const [i, r] of reviewers.entries()) {
      const res = await app.request
        .post(`/api/governance/proposals/${proposalId}/review`)
        .send({
          walletPublicKey: r.address,
          decision: 'approve',
          signature: r.sign(reviewMessage(proposalId, 'approve')),
        })
        .expect(200);
      expect(res.body.status).toBe(i === 0 ? 'review' : 'voting');
    }
  });

  it('takes anonymous ballots, one per identity, with signed receipts', async () => {
    const plan: Array<[string, number, string]> = [
      ['v0', 0, OPTIONS[0]!],
      ['v1', 1, OPTIONS[0]!],
      ['v2', 2, OPTIONS[1]!],
      ['r0', 4, OPTIONS[2]!],
    ];
    for (const [name, who, choice] of plan) {
      const ballot = ready[name]!;
      const res = await post(ballot).expect(201);
      const receipt = res.body as BallotReceipt;
      expect(receipt.ballotDigest).toBe(ciphertextDigest(Buffer.from(ballot.ciphertext, 'base64url')));
      expect(verifyReceipt(receipt, keys().publicKey)).toBe(true);
      expect(JSON.stringify(receipt)).not.toContain(choice);
      cast.push({ identity: identities[who]!, choice, ballot, receipt });
    }
    // Ballots at rest: ciphertext only, and nothing of the identity that cast them.
    const stored = JSON.stringify(await app.deps.db('ballots').where('proposal_id', proposalId));
    for (const o of OPTIONS) expect(stored).not.toContain(o);
    for (const i of identities) {
      expect(stored).not.toContain(i.commitment);
      expect(stored).not.toContain(i.secret);
    }
  });

  it('refuses a second ballot, a tampered vote, a stale or foreign root and bad input — saying nothing of the vote', async () => {
    const before = await count('ballots');
    const again = await post(ready.again!);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('already_voted');
    // The ciphertext changed after proving: the proof no longer holds for it.
    const ct = Buffer.from(ready.v3!.ciphertext, 'base64url');
    ct[100] = ct[100]! ^ 1;
    const tampered = await post({ ...ready.v3!, ciphertext: ct.toString('base64url') });
    expect([tampered.status, tampered.body.code]).toEqual([422, 'proof_invalid']);
    // A valid proof for another proposal's scope.
    const otherRoot = await post({ ...ready.v3!, root: '12345' });
    expect([otherRoot.status, otherRoot.body.code]).toEqual([422, 'unknown_root']);
    const bad = await app.request
      .post(`/api/governance/proposals/${proposalId}/ballots`)
      .send({ nullifier: 'x', root: '1', ciphertext: 'zz', extra: 1 });
    expect(bad.status).toBe(400);
    expect(bad.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(bad.body.code).toBe('validation_failed');
    const early = await app.request
      .post(`/api/governance/proposals/${proposalId}/close`)
      .set('Authorization', OPERATOR);
    expect(early.status).toBe(409);
    expect(Object.keys(early.body).sort()).toEqual([
      'code',
      'detail',
      'instance',
      'status',
      'timeRemainingSeconds',
      'title',
      'type',
    ]);
    expect(await count('ballots')).toBe(before);
    for (const res of [again, tampered, otherRoot, bad, early]) {
      for (const o of OPTIONS) expect(res.text).not.toContain(o);
      expect(res.text).not.toMatch(/\b[1-4] (ballots?|votes?)\b/);
    }
  });

  it('shows a public observer status and time remaining only', async () => {
    const res = await app.request.get(`/api/governance/proposals/${proposalId}`).expect(200);
    expect(Object.keys(res.body).sort()).toEqual([
      'options',
      'proposalId',
      'status',
      'timeRemainingSeconds',
      'title',
      'votingEndsAt',
    ]);
    // What is voted on is public from the start; nothing of what was cast is.
    expect(res.body).toMatchObject({ title: TITLE, options: OPTIONS });
    expect(res.body.status).toBe('voting');
    expect(res.body.timeRemainingSeconds).toBeGreaterThan(0);
    const admin = await app.request
      .get(`/api/governance/proposals/${proposalId}/admin`)
      .set('Authorization', OPERATOR);
    expect(Object.keys(admin.body).sort()).toEqual([
      'options',
      'proposalId',
      'status',
      'timeRemainingSeconds',
      'title',
      'votingEndsAt',
    ]);
    const pkg = await app.request.get(`/api/governance/proposals/${proposalId}/package`);
    expect(pkg.status).toBe(409);
    const page = await app.request.get(`/governance/proposals/${proposalId}/`).expect(200);
    expect(page.text).toContain('data-status="voting"');
    expect(page.text).toContain('id="time-remaining"');
    const metrics = await app.request.get('/metrics').expect(200);
    const seen = [res.text, admin.text, pkg.text, page.text, metrics.text, logs.lines.join('\n')];
    const secrets = [
      ...[...voters, ...reviewers].map((w) => w.address),
      ...cast.map((c) => c.ballot.nullifier),
      ...cast.map((c) => c.receipt.ballotDigest),
      ...identities.map((i) => i.secret),
    ];
    for (const text of seen) for (const s of secrets) expect(text).not.toContain(s);
    expect(logs.lines.length).toBeGreaterThan(0);
  });

  it('closes after the window: every ballot, the tally and a logged package anyone can recompute', async () => {
    // The 8 seconds pass.
    clock.advance(8_000);
    const closed = await eventually(
      async () => {
        const res = await app.request.get(`/api/governance/proposals/${proposalId}`).expect(200);
        return res.body.status === 'closed' ? res.body : undefined;
      },
      15_000,
      200,
    );
    expect(closed).toMatchObject({
      title: TITLE,
      outcome: 'passed',
      winner: OPTIONS[0],
      ballotCount: 4,
      countedCount: 4,
      spoiledCount: 0,
      tally: { [OPTIONS[0]!]: 2, [OPTIONS[1]!]: 1, [OPTIONS[2]!]: 1 },
    });
    const late = await post(ready.v3!);
    expect(late.body.code).toBe('voting_not_open');

    const pkg = (await app.request.get(`/api/governance/proposals/${proposalId}/package`).expect(200))
      .body as AnonymousGovernancePackage;
    expect(pkg.ballots).toHaveLength(4);
    expect(pkg.log?.inclusion.leafHash).toMatch(/^[0-9a-f]{64}$/);
    const verdict = await verifyGovernancePackage(pkg, keys());
    expect(verdict.reasons).toEqual([]);
    expect(verdict).toMatchObject({
      valid: true,
      inclusionValid: true,
      tallyValid: true,
      ballotsValid: true,
    });
    // Offline recount from the published ballots and the key the close published: no times, no order of
    // arrival (by nullifier), every vote opened again here.
    const recount: Record<string, number> = Object.fromEntries(OPTIONS.map((o) => [o, 0]));
    const key = Buffer.from(pkg.ballotKey.privateKey, 'base64url');
    for (const b of pkg.ballots) {
      expect(Object.keys(b).sort()).toEqual(['choice', 'ciphertext', 'nullifier', 'proof', 'root']);
      const choice = decryptVote(key, proposalId, Buffer.from(b.ciphertext, 'base64url'))!;
      expect(choice).toBe(b.choice);
      recount[choice]! += 1;
    }
    expect(recount).toEqual(pkg.tally.counts);
    expect(pkg.ballots.map((b) => BigInt(b.nullifier))).toEqual(
      pkg.ballots.map((b) => BigInt(b.nullifier)).sort((x, y) => (x < y ? -1 : 1)),
    );

    for (const c of cast) {
      const check = await checkReceiptAgainstPackage(c.receipt, pkg, keys(), { choice: c.choice });
      expect(check).toMatchObject({
        receiptValid: true,
        packageValid: true,
        included: true,
        ballotMatches: true,
      });
      expect(check.inclusion?.valid).toBe(true);
    }
    const viaRoute = await app.request
      .post('/api/governance/verify')
      .send({
        package: pkg,
        receipt: cast[0]!.receipt,
        opening: { choice: cast[0]!.choice },
      })
      .expect(200);
    expect(viaRoute.body).toMatchObject({ valid: true, receipt: { included: true, ballotMatches: true } });
    // A receipt the service did not sign proves nothing.
    const forgedReceipt = { ...cast[0]!.receipt, ballotDigest: cast[1]!.receipt.ballotDigest };
    expect((await checkReceiptAgainstPackage(forgedReceipt, pkg, keys())).receiptValid).toBe(false);

    const page = await app.request.get(`/governance/proposals/${proposalId}/`).expect(200);
    expect(page.text).toContain(OPTIONS[0]);
    expect(page.text).toMatch(/Tally recomputed from the ballots<\/th><td><span class="yes">yes/);
  });

  it('detects a tampered package', async () => {
    const pkg = (await app.request.get(`/api/governance/proposals/${proposalId}/package`).expect(200))
      .body as AnonymousGovernancePackage;
    const flipped = structuredClone(pkg);
    flipped.ballots[0]!.choice = OPTIONS.find((o) => o !== pkg.ballots[0]!.choice)!;
    const v1 = await verifyGovernancePackage(flipped, keys());
    expect(v1.valid).toBe(false);
    expect(v1.ballotsValid).toBe(false);
    const inflated = structuredClone(pkg);
    inflated.tally.counts[OPTIONS[1]!] = 5;
    expect(await verifyGovernancePackage(inflated, keys())).toMatchObject({
      valid: false,
      tallyValid: false,
      signatureValid: false,
    });
    // A ballot's ciphertext swapped for another's: its proof no longer holds.
    const swapped = structuredClone(pkg);
    swapped.ballots[0]!.ciphertext = pkg.ballots[1]!.ciphertext;
    expect((await verifyGovernancePackage(swapped, keys())).reasons.map((r) => r.code)).toContain(
      'proof_invalid',
    );
    // Without the circuit's verification key nothing is taken on trust.
    expect((await verifyGovernancePackage(pkg, { publicKey: keys().publicKey })).valid).toBe(false);
    const dropped = structuredClone(pkg);
    const gone = dropped.ballots.splice(0, 1)[0]!;
    expect((await verifyGovernancePackage(dropped, keys())).valid).toBe(false);
    const receipt = cast.find((c) => c.ballot.nullifier === gone.nullifier)!.receipt;
    expect((await checkReceiptAgainstPackage(receipt, dropped, keys())).included).toBe(false);
    const res = await app.request.post('/api/governance/verify').send({ package: flipped }).expect(200);
    expect(res.body.valid).toBe(false);
  });

  it('records the execution and publishes the final package', async () => {
    const executed = await app.request
      .post(`/api/governance/proposals/${proposalId}/execution`)
      .set('Authorization', OPERATOR)
      .send({ evidenceHash: 'a'.repeat(64) })
      .expect(200);
    expect(executed.body).toMatchObject({ status: 'executed', executed: true });
    const pkg = (await app.request.get(`/api/governance/proposals/${proposalId}/package`).expect(200))
      .body as AnonymousGovernancePackage;
    expect(pkg.phase).toBe('executed');
    expect(pkg.chain.entries.map((e) => e.action)).toEqual([
      'created',
      'review_approve',
      'review_approve',
      'vote_opened',
      'vote_closed',
      'executed',
    ]);
    expect(await verifyGovernancePackage(pkg, keys())).toMatchObject({ valid: true, inclusionValid: true });
    // The public list links the final package now, not the tally's (which the final one repeats).
    const { final_proof_id: finalId, tally_proof_id: tallyId } = await app.deps
      .db('proposals')
      .where('id', proposalId)
      .first('final_proof_id', 'tally_proof_id');
    expect(finalId).not.toBe(tallyId);
    const index = (await app.request.get('/governance/').expect(200)).text;
    const row = new RegExp(`<tr data-proposal="${proposalId}">.*?</tr>`).exec(index)![0];
    expect(row).toContain(`href="/proof-workflows/verify/${finalId}/"`);
    expect(row).not.toContain(tallyId);
    expect(index).toContain('href="/governance/trustee/"');
    const again = await app.request
      .post(`/api/governance/proposals/${proposalId}/execution`)
      .set('Authorization', OPERATOR)
      .send({ evidenceHash: 'b'.repeat(64) });
    expect(again.status).toBe(409);
  });

  it('answers bad administration input with problems and writes nothing', async () => {
    const before = await count('proposals');
    const cases = [
      { roomId, title: 'x', options: ['a'], reviewCommittee: 'review', votingSeconds: 5 },
      { roomId, title: 'x', options: ['a', 'b'], reviewCommittee: 'nope', votingSeconds: 5 },
      { roomId, title: 'x', options: ['a', 'a'], reviewCommittee: 'review', votingSeconds: 5 },
      { roomId, title: 'x', options: ['a', 'b'], reviewCommittee: 'review' },
    ];
    const codes = [];
    for (const body of cases) {
      const res = await app.request
        .post('/api/governance/proposals')
        .set('Authorization', OPERATOR)
        .send(body);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      codes.push(res.body.code);
    }
    expect(codes).toEqual(['validation_failed', 'unknown_committee', 'duplicate_option', 'voting_window']);
    const anon = await app.request.post('/api/governance/proposals').send(cases[0]);
    expect(anon.status).toBe(401);
    expect(await count('proposals')).toBe(before);
    const unknown = await app.request.get('/api/governance/proposals/prop_01jd3zzzzzzzzzzzzzzzzzzzzz');
    expect(unknown.status).toBe(404);
  });

  it('lists the status routes and the governance routes in the platform OpenAPI document', async () => {
    const doc = (await app.request.get('/openapi/platform.json').expect(200)).body;
    for (const p of [
      '/api/governance/proposals/{proposalId}/ballots',
      '/api/treasury/requests',
      '/api/auctions/{auctionId}/reveals',
      '/api/coordination/providers/status',
      '/api/intelligence/providers/status',
      '/api/private-payout/status',
    ])
      expect(doc.paths[p], p).toBeDefined();
    const payout = await app.request.get('/api/private-payout/status').expect(200);
    expect(payout.body).toMatchObject({ enabled: false, active: false, paysFunds: false });
    const coord = await app.request.get('/api/coordination/providers/status').expect(200);
    expect(coord.body.providers.map((p: { name: string }) => p.name)).toEqual([
      'governance',
      'treasury',
      'auctions',
    ]);
    const intel = await app.request.get('/api/intelligence/providers/status').expect(200);
    expect(intel.body.providers[0]).toMatchObject({ name: 'local-ai' });
  });
});
