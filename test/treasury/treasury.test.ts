// Treasury coordination over HTTP with real wallets: m-of-n signed decisions, a per-period spending
// limit that refuses with the remaining allowance, token operations as records, tamper-evident packages.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalMessage } from '../../shared/treasury/commitments';
import { verifyTreasuryPackage } from '../../shared/treasury/package';
import type { TreasuryPackage } from '../../shared/treasury/package';
import { logSigningKey, serviceSigningKey } from '../../shared/platform/keys';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR, wallet } from '../governance/helpers';
import type { Wallet } from '../governance/helpers';

let app: TestApp;
const signers = [wallet(), wallet(), wallet()];
const member = wallet();
let roomId: string;
// The package key, and the log key that signs the tree heads of packages logged since it existed.
const keys = () => ({ publicKey: serviceSigningKey().publicKey, logPublicKey: logSigningKey().publicKey });
const purpose = 'c'.repeat(64);

beforeAll(async () => {
  app = testApp();
  roomId = (
    await app.request
      .post('/api/governance/rooms')
      .set('Authorization', OPERATOR)
      .send({ name: 'Treasury', members: [...signers, member].map((w) => w.address) })
      .expect(201)
  ).body.roomId;
  await app.request
    .post(`/api/governance/rooms/${roomId}/committees`)
    .set('Authorization', OPERATOR)
    .send({ slug: 'signers', name: 'Signers', members: signers.map((w) => w.address), threshold: 2 })
    .expect(201);
  await app.request
    .post('/api/treasury/limits')
    .set('Authorization', OPERATOR)
    .send({ roomId, asset: 'USDC-SOL', periodSeconds: 86_400, limit: '1000000' })
    .expect(200);
});
afterAll(() => app.close());

const request = (body: Record<string, unknown>) =>
  app.request
    .post('/api/treasury/requests')
    .set('Authorization', OPERATOR)
    .send({
      roomId,
      committee: 'signers',
      operation: 'spend',
      asset: 'USDC-SOL',
      recipient: 'VendorWallet1',
      purposeHash: purpose,
      ...body,
    });

const decide = (id: string, hash: string, w: Wallet, decision: 'approve' | 'reject', signer = w) =>
  app.request.post(`/api/treasury/requests/${id}/approvals`).send({
    walletPublicKey: w.address,
    decision,
    signature: signer.sign(approvalMessage(id, hash, decision)),
  });

const requestCount = async () =>
  Number(((await app.deps.db('treasury_requests').count({ n: '*' }).first()) as { n: string }).n);

describe('treasury requests', () => {
  it('approves at 2 of 3 signed decisions and publishes a verifiable package', async () => {
    const created = await request({ amount: '600000' }).expect(201);
    const { requestId, requestHash } = created.body;
    expect(created.body.allowance.remaining).toBe('1000000');
    // Outsiders, forgeries and repeats are refused.
    expect((await decide(requestId, requestHash, member, 'approve')).body.code).toBe('not_an_approver');
    expect((await decide(requestId, requestHash, signers[0]!, 'approve', member)).body.code).toBe(
      'signature_invalid',
    );
    expect((await decide(requestId, 'f'.repeat(64), signers[0]!, 'approve')).status).toBe(403);
    const first = await decide(requestId, requestHash, signers[0]!, 'approve').expect(200);
    expect(first.body).toMatchObject({ status: 'pending', approvals: 1 });
    expect((await decide(requestId, requestHash, signers[0]!, 'approve')).body.code).toBe('already_decided');
    const second = await decide(requestId, requestHash, signers[1]!, 'approve').expect(200);
    expect(second.body).toMatchObject({ status: 'approved', approvals: 2 });
    expect((await decide(requestId, requestHash, signers[2]!, 'reject')).body.code).toBe('request_decided');

    const pkg = (
      await app.request
        .get(`/api/treasury/requests/${requestId}/package`)
        .set('Authorization', OPERATOR)
        .expect(200)
    ).body as TreasuryPackage;
    expect(pkg).toMatchObject({
      kind: 'treasury',
      outcome: 'approved',
      subject: { amount: '600000', threshold: 2 },
    });
    expect(verifyTreasuryPackage(pkg, keys())).toMatchObject({
      valid: true,
      inclusionValid: true,
      approvalsMet: true,
    });
    expect(pkg.chain.entries.map((e) => e.action)).toEqual(['created', 'approve', 'approve', 'decided']);

    const richer = structuredClone(pkg);
    richer.subject.amount = '900000';
    expect(verifyTreasuryPackage(richer, keys()).valid).toBe(false);
    const fewer = structuredClone(pkg);
    fewer.decisions.pop();
    const v = verifyTreasuryPackage(fewer, keys());
    expect(v.valid).toBe(false);
    expect(v.approvalsMet).toBe(false);
    const viaRoute = await app.request.post('/api/treasury/verify').send({ package: richer }).expect(200);
    expect(viaRoute.body.valid).toBe(false);
  });

  it('refuses a request over the period allowance, naming what remains, and writes nothing', async () => {
    const before = await requestCount();
    const res = await request({ amount: '500000' });
    expect(res.status).toBe(422);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body.code).toBe('spending_limit_exceeded');
    expect(res.body.allowance).toMatchObject({ limit: '1000000', committed: '600000', remaining: '400000' });
    expect(await requestCount()).toBe(before);
  });

  it('releases the allowance when a request is rejected (m can no longer be reached)', async () => {
    const { requestId, requestHash } = (await request({ amount: '400000' }).expect(201)).body;
    const limits = await app.request
      .get(`/api/treasury/limits?roomId=${roomId}`)
      .set('Authorization', OPERATOR);
    expect(limits.body.limits[0].remaining).toBe('0');
    await decide(requestId, requestHash, signers[0]!, 'reject').expect(200);
    const done = await decide(requestId, requestHash, signers[1]!, 'reject').expect(200);
    expect(done.body.status).toBe('rejected');
    const pkg = (
      await app.request
        .get(`/api/treasury/requests/${requestId}/package`)
        .set('Authorization', OPERATOR)
        .expect(200)
    ).body;
    expect(verifyTreasuryPackage(pkg, keys())).toMatchObject({ valid: true, approvalsMet: true });
    const after = await app.request
      .get(`/api/treasury/limits?roomId=${roomId}`)
      .set('Authorization', OPERATOR);
    expect(after.body.limits[0].remaining).toBe('400000');
  });

  it('records treasury-token operations and rejects bad input with problems', async () => {
    const minted = await request({ operation: 'mint', asset: 'token:GOV', amount: '5000' }).expect(201);
    expect(minted.body.terms).toMatchObject({ operation: 'mint', asset: 'token:GOV' });
    const before = await requestCount();
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ operation: 'spend', asset: 'token:GOV', amount: '1' }, 422, 'asset_not_spendable'],
      [{ operation: 'mint', asset: 'USDC-SOL', amount: '1' }, 422, 'not_a_treasury_token'],
      [{ asset: 'DOGE', amount: '1' }, 422, 'unknown_asset'],
      [{ amount: '1.5' }, 400, 'validation_failed'],
      [{ amount: '-1' }, 400, 'validation_failed'],
      [{ amount: '10', committee: 'nobody' }, 422, 'unknown_committee'],
    ];
    for (const [body, status, code] of cases) {
      const res = await request(body);
      expect([res.status, res.body.code], JSON.stringify(body)).toEqual([status, code]);
    }
    expect(await requestCount()).toBe(before);
    const anon = await app.request.post('/api/treasury/requests').send({});
    expect(anon.status).toBe(401);
    // The agent exchange's treasury status is still its own route.
    const status = await app.request.get('/api/treasury/status');
    expect(status.status).not.toBe(404);
  });
});
