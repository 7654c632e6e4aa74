// Private governance over HTTP with real wallets: review opens the vote; during it nothing but status and
// time remaining leaks (routes, page, errors, logs, metrics); the close publishes ballots, tally and a
// logged package that anyone can recompute and each voter can check their receipt against.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ballotCommitment,
  ballotMessage,
  reviewMessage,
  membershipMessage,
} from '../../shared/governance/commitments';
import {
  checkReceiptAgainstPackage,
  verifyGovernancePackage,
  verifyReceipt,
} from '../../shared/governance/package';
import type { BallotReceipt, GovernancePackage } from '../../shared/governance/package';
import { serviceSigningKey } from '../../shared/keys';
import { eventually, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR, captureLogs, salt, wallet } from './helpers';
import type { Wallet } from './helpers';

const OPTIONS = ['option-alpha-7f3e', 'option-beta-2c9d', 'option-gamma-51ab'];
const TITLE = 'Title-private-budget-e19a';
const keys = () => ({ publicKey: serviceSigningKey().publicKey });

let app: TestApp;
let logs: ReturnType<typeof captureLogs>;
const reviewers = [wallet(), wallet()];
const voters = [wallet(), wallet(), wallet(), wallet()];
const outsider = wallet();
let roomId: string;
let proposalId: string;
const cast: Array<{ voter: Wallet; choice: string; salt: string; receipt: BallotReceipt }> = [];

beforeAll(async () => {
  logs = captureLogs();
  app = testApp();
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
});

const ballotBody = (w: Wallet, choice: string, s: string, id = proposalId) => ({
  walletPublicKey: w.address,
  choice,
  salt: s,
  signature: w.sign(ballotMessage(id, ballotCommitment(choice, s, id))),
});

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

  it('opens the vote after the review threshold of signed approvals', async () => {
    const created = await app.request
      .post('/api/governance/proposals')
      .set('Authorization', OPERATOR)
      .send({ roomId, title: TITLE, options: OPTIONS, reviewCommittee: 'review', votingSeconds: 3 })
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
    const early = await app.request
      .post(`/api/governance/proposals/${proposalId}/ballots`)
      .send(ballotBody(voters[0]!, OPTIONS[0]!, salt()));
    expect(early.body.code).toBe('voting_not_open');

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

  it('takes sealed ballots, one per member, with signed receipts', async () => {
    const plan: Array<[Wallet, string]> = [
      [voters[0]!, OPTIONS[0]!],
      [voters[1]!, OPTIONS[0]!],
      [voters[2]!, OPTIONS[1]!],
      [reviewers[0]!, OPTIONS[2]!],
    ];
    for (const [voter, choice] of plan) {
      const s = salt();
      const res = await app.request
        .post(`/api/governance/proposals/${proposalId}/ballots`)
        .send(ballotBody(voter, choice, s))
        .expect(201);
      const receipt = res.body as BallotReceipt;
      expect(receipt.ballotCommitment).toBe(ballotCommitment(choice, s, proposalId));
      expect(verifyReceipt(receipt, keys().publicKey)).toBe(true);
      expect(JSON.stringify(receipt)).not.toContain(choice);
      cast.push({ voter, choice, salt: s, receipt });
    }
    // Ballots at rest: ciphertext only.
    const stored = JSON.stringify(await app.deps.db('ballots').where('proposal_id', proposalId));
    for (const o of OPTIONS) expect(stored).not.toContain(o);
  });

  it('refuses double votes, outsiders, forged signatures and bad input — saying nothing of the vote', async () => {
    const before = await count('ballots');
    const again = await app.request
      .post(`/api/governance/proposals/${proposalId}/ballots`)
      .send(ballotBody(voters[0]!, OPTIONS[1]!, salt()));
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('already_voted');
    const outsiderRes = await app.request
      .post(`/api/governance/proposals/${proposalId}/ballots`)
      .send(ballotBody(outsider, OPTIONS[1]!, salt()));
    expect(outsiderRes.status).toBe(403);
    const forged = { ...ballotBody(voters[3]!, OPTIONS[1]!, salt()), signature: outsider.sign('x') };
    expect(
      (await app.request.post(`/api/governance/proposals/${proposalId}/ballots`).send(forged)).body.code,
    ).toBe('signature_invalid');
    const bad = await app.request
      .post(`/api/governance/proposals/${proposalId}/ballots`)
      .send({ walletPublicKey: 'nope', choice: OPTIONS[0], salt: 'zz', extra: 1 });
    expect(bad.status).toBe(400);
    expect(bad.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(bad.body.code).toBe('validation_failed');
    const unknown = await app.request
      .post(`/api/governance/proposals/${proposalId}/ballots`)
      .send(ballotBody(voters[3]!, 'not-an-option', salt()));
    expect(unknown.body.code).toBe('unknown_option');
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
    for (const res of [again, outsiderRes, bad, unknown, early]) {
      for (const o of OPTIONS) expect(res.text).not.toContain(o);
      expect(res.text).not.toMatch(/\b[1-4] (ballots?|votes?)\b/);
    }
  });

  it('shows a public observer status and time remaining only', async () => {
    const res = await app.request.get(`/api/governance/proposals/${proposalId}`).expect(200);
    expect(Object.keys(res.body).sort()).toEqual([
      'proposalId',
      'status',
      'timeRemainingSeconds',
      'votingEndsAt',
    ]);
    expect(res.body.status).toBe('voting');
    expect(res.body.timeRemainingSeconds).toBeGreaterThan(0);
    const admin = await app.request
      .get(`/api/governance/proposals/${proposalId}/admin`)
      .set('Authorization', OPERATOR);
    expect(Object.keys(admin.body).sort()).toEqual([
      'proposalId',
      'status',
      'timeRemainingSeconds',
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
      TITLE,
      ...OPTIONS,
      ...[...voters, ...reviewers].map((w) => w.address),
      ...cast.map((c) => c.salt),
      ...cast.map((c) => c.receipt.ballotCommitment),
    ];
    for (const text of seen) for (const s of secrets) expect(text).not.toContain(s);
    expect(logs.lines.length).toBeGreaterThan(0);
  });

  it('closes after the window: every ballot, the tally and a logged package anyone can recompute', async () => {
    const closed = await eventually(
      async () => {
        const res = await app.request.get(`/api/governance/proposals/${proposalId}`).expect(200);
        return res.body.status === 'closed' ? res.body : undefined;
      },
      10_000,
      200,
    );
    expect(closed).toMatchObject({
      title: TITLE,
      outcome: 'passed',
      winner: OPTIONS[0],
      ballotCount: 4,
      tally: { [OPTIONS[0]!]: 2, [OPTIONS[1]!]: 1, [OPTIONS[2]!]: 1 },
    });
    const late = await app.request
      .post(`/api/governance/proposals/${proposalId}/ballots`)
      .send(ballotBody(voters[3]!, OPTIONS[1]!, salt()));
    expect(late.body.code).toBe('voting_not_open');

    const pkg = (await app.request.get(`/api/governance/proposals/${proposalId}/package`).expect(200))
      .body as GovernancePackage;
    expect(pkg.ballots).toHaveLength(4);
    expect(pkg.log?.inclusion.leafHash).toMatch(/^[0-9a-f]{64}$/);
    const verdict = verifyGovernancePackage(pkg, keys());
    expect(verdict.reasons).toEqual([]);
    expect(verdict).toMatchObject({
      valid: true,
      inclusionValid: true,
      tallyValid: true,
      ballotsValid: true,
    });
    // Offline recount from the published ballots alone.
    const recount: Record<string, number> = Object.fromEntries(OPTIONS.map((o) => [o, 0]));
    for (const b of pkg.ballots) {
      expect(ballotCommitment(b.choice, b.salt, proposalId)).toBe(b.commitment);
      recount[b.choice]! += 1;
    }
    expect(recount).toEqual(pkg.tally.counts);

    for (const c of cast) {
      const check = checkReceiptAgainstPackage(c.receipt, pkg, keys(), { choice: c.choice, salt: c.salt });
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
        opening: { choice: cast[0]!.choice, salt: cast[0]!.salt },
      })
      .expect(200);
    expect(viaRoute.body).toMatchObject({ valid: true, receipt: { included: true, ballotMatches: true } });
    // A receipt the service did not sign proves nothing.
    const forgedReceipt = { ...cast[0]!.receipt, castAt: new Date(0).toISOString() };
    expect(checkReceiptAgainstPackage(forgedReceipt, pkg, keys()).receiptValid).toBe(false);

    const page = await app.request.get(`/governance/proposals/${proposalId}/`).expect(200);
    expect(page.text).toContain(OPTIONS[0]);
    expect(page.text).toMatch(/Tally recomputed from the ballots<\/th><td><span class="yes">yes/);
  });

  it('detects a tampered package', async () => {
    const pkg = (await app.request.get(`/api/governance/proposals/${proposalId}/package`).expect(200))
      .body as GovernancePackage;
    const flipped = structuredClone(pkg);
    flipped.ballots[0]!.choice = OPTIONS.find((o) => o !== pkg.ballots[0]!.choice)!;
    const v1 = verifyGovernancePackage(flipped, keys());
    expect(v1.valid).toBe(false);
    expect(v1.ballotsValid).toBe(false);
    const inflated = structuredClone(pkg);
    inflated.tally.counts[OPTIONS[1]!] = 5;
    expect(verifyGovernancePackage(inflated, keys())).toMatchObject({
      valid: false,
      tallyValid: false,
      signatureValid: false,
    });
    const dropped = structuredClone(pkg);
    const gone = dropped.ballots.splice(0, 1)[0]!;
    expect(verifyGovernancePackage(dropped, keys()).valid).toBe(false);
    const receipt = cast.find((c) => c.receipt.ballotCommitment === gone.commitment)!.receipt;
    expect(checkReceiptAgainstPackage(receipt, dropped, keys()).included).toBe(false);
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
      .body as GovernancePackage;
    expect(pkg.phase).toBe('executed');
    expect(pkg.chain.entries.map((e) => e.action)).toEqual([
      'created',
      'review_approve',
      'review_approve',
      'vote_opened',
      'vote_closed',
      'executed',
    ]);
    expect(verifyGovernancePackage(pkg, keys())).toMatchObject({ valid: true, inclusionValid: true });
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
